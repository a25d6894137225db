//! The journal's PostgreSQL store, for conductors that share their sessions: the same three
//! tables as SQLite's (`sacp_sessions`, `sacp_chunks`, `sacp_meta`), created and migrated by
//! the conductor. Every conductor sharing it sweeps what is past its own retention. No TLS: a database on the conductors' own network, or a local socket.

use std::collections::HashMap;

use postgres::{Client, NoTls};
use serde_json::Value;

use super::{Kept, Record, now};

/// The schema this conductor writes.
const VERSION: i32 = 3;

/// The writer's connection, made again after it broke.
pub(super) struct Writer {
    url: String,
    client: Option<Client>,
}

impl Writer {
    /// Connects, and creates or checks the schema: an unreachable server is an error now.
    pub(super) fn open(url: &str) -> Result<Writer, String> {
        let mut client = connect(url)?;
        migrate(&mut client)
            .map_err(|e| format!("cannot set up the journal's schema: {}", describe(&e)))??;
        Ok(Writer {
            url: url.to_owned(),
            client: Some(client),
        })
    }

    fn client(&mut self) -> Result<&mut Client, String> {
        if self.client.as_ref().is_none_or(Client::is_closed) {
            self.client = Some(connect(&self.url)?);
        }
        Ok(self.client.as_mut().expect("connected just now"))
    }
}

impl super::Writes for Writer {
    fn write(&mut self, batch: &[Record], lost: &HashMap<String, u64>) -> Result<(), String> {
        let client = self.client()?;
        let result = write_batch(client, batch, lost);
        if result.is_err() {
            // Made again before the next write.
            self.client = None;
        }
        result.map_err(|e| describe(&e))
    }

    fn sweep(&mut self, before: i64) -> Result<u64, String> {
        let client = self.client()?;
        let sweep = |client: &mut Client| -> Result<u64, postgres::Error> {
            let mut tx = client.transaction()?;
            let gone = tx.execute(
                "DELETE FROM sacp_sessions s WHERE s.at < $1 AND NOT EXISTS
                     (SELECT 1 FROM sacp_chunks c WHERE c.session = s.id AND c.at >= $1)",
                &[&before],
            )?;
            if gone > 0 {
                tx.execute(
                    "DELETE FROM sacp_chunks c WHERE NOT EXISTS
                         (SELECT 1 FROM sacp_sessions s WHERE s.id = c.session)",
                    &[],
                )?;
            }
            tx.commit()?;
            Ok(gone)
        };
        let result = sweep(client);
        if result.is_err() {
            self.client = None;
        }
        result.map_err(|e| describe(&e))
    }
}

/// An error with what the server said, when it said something.
fn describe(e: &postgres::Error) -> String {
    match (e.as_db_error(), std::error::Error::source(e)) {
        (Some(db), _) => format!("{e}: {} ({})", db.message(), db.code().code()),
        (None, Some(source)) => format!("{e}: {source}"),
        (None, None) => e.to_string(),
    }
}

fn write_batch(
    client: &mut Client,
    batch: &[Record],
    lost: &HashMap<String, u64>,
) -> Result<(), postgres::Error> {
    let at = now();
    let mut tx = client.transaction()?;
    let batch = super::Chunks::of(batch);
    let afresh = tx.prepare("DELETE FROM sacp_chunks WHERE session = $1")?;
    let unlost = tx.prepare("UPDATE sacp_sessions SET lost = 0 WHERE id = $1")?;
    for id in &batch.afresh {
        tx.execute(&afresh, &[id])?;
        tx.execute(&unlost, &[id])?;
    }
    let began = tx.prepare(
        "INSERT INTO sacp_sessions (id, own, setup, closed, lost, at) VALUES ($1, $2, $3, false, 0, $4)
         ON CONFLICT (id) DO UPDATE SET own = excluded.own, setup = excluded.setup, at = excluded.at",
    )?;
    for (id, own, setup) in &batch.began {
        tx.execute(&began, &[id, own, setup, &at])?;
    }
    let chunk = tx.prepare(
        "INSERT INTO sacp_chunks (session, first, last, lines, at) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT DO NOTHING",
    )?;
    for (id, first, last, lines) in &batch.chunks {
        tx.execute(&chunk, &[id, &(*first as i64), &(*last as i64), lines, &at])?;
    }
    // A closed session's conversation goes, and its subagents' with it; what is left says
    // only that it was closed, and whether with its parent.
    let closed =
        tx.prepare("UPDATE sacp_sessions SET closed = true, setup = $3, at = $2 WHERE id = $1")?;
    let entries = tx.prepare("DELETE FROM sacp_chunks WHERE session = $1")?;
    let children = tx.prepare(
        "SELECT id FROM sacp_sessions WHERE (setup::jsonb ->> 'parent') = $1 AND NOT closed",
    )?;
    let subagents = super::subagents_of(&batch.closed, |parent| {
        let rows = tx.query(&children, &[&parent])?;
        Ok(rows.iter().map(|r| r.get::<_, String>(0)).collect())
    })?;
    let closing = batch.closed.iter().copied();
    for (id, with_parent) in closing.chain(subagents.iter().map(|id| (id.as_str(), true))) {
        tx.execute(&closed, &[&id, &at, &super::closed_setup(with_parent)])?;
        tx.execute(&entries, &[&id])?;
    }
    let losses = tx.prepare("UPDATE sacp_sessions SET lost = lost + $2 WHERE id = $1")?;
    for (id, n) in lost {
        tx.execute(&losses, &[id, &(*n as i64)])?;
    }
    tx.commit()
}

fn connect(url: &str) -> Result<Client, String> {
    Client::connect(url, NoTls).map_err(|e| {
        format!(
            "cannot reach the journal's PostgreSQL at {}: {}",
            redacted(url),
            describe(&e)
        )
    })
}

/// `url` without its password, for messages.
fn redacted(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let user = &url[scheme + 3..at];
            let user = user.split(':').next().unwrap_or("");
            format!("{}{user}@{}", &url[..scheme + 3], &url[at + 1..])
        }
        _ => url.to_owned(),
    }
}

/// Creates the tables, or checks that the database is of a schema this conductor knows. Two
/// conductors starting at once both create what is missing: `IF NOT EXISTS` and a lock make
/// that safe.
fn migrate(client: &mut Client) -> Result<Result<(), String>, postgres::Error> {
    let mut tx = client.transaction()?;
    tx.batch_execute(
        "SELECT pg_advisory_xact_lock(736163700);
         CREATE TABLE IF NOT EXISTS sacp_meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
         CREATE TABLE IF NOT EXISTS sacp_sessions (
             id TEXT PRIMARY KEY,
             own TEXT NOT NULL,
             setup TEXT NOT NULL,
             closed BOOLEAN NOT NULL,
             lost BIGINT NOT NULL,
             at BIGINT NOT NULL
         );
         CREATE TABLE IF NOT EXISTS sacp_chunks (
             session TEXT NOT NULL,
             first BIGINT NOT NULL,
             last BIGINT NOT NULL,
             lines TEXT NOT NULL,
             at BIGINT NOT NULL,
             PRIMARY KEY (session, first)
         );
         CREATE INDEX IF NOT EXISTS sacp_sessions_by_parent
             ON sacp_sessions ((setup::jsonb ->> 'parent'));",
    )?;
    let version: Option<i32> = tx
        .query_opt("SELECT value FROM sacp_meta WHERE key = 'version'", &[])?
        .map(|row| row.get(0));
    match version {
        None => {
            tx.execute(
                "INSERT INTO sacp_meta (key, value) VALUES ('version', $1)",
                &[&VERSION],
            )?;
        }
        Some(VERSION) => {}
        // Version 2 had no times: what it holds counts as written now.
        Some(2) => {
            let at = now();
            tx.batch_execute(&format!(
                "ALTER TABLE sacp_sessions ADD COLUMN at BIGINT NOT NULL DEFAULT {at};
                 ALTER TABLE sacp_chunks ADD COLUMN at BIGINT NOT NULL DEFAULT {at};
                 UPDATE sacp_meta SET value = {VERSION} WHERE key = 'version';"
            ))?;
        }
        Some(other) => {
            return Ok(Err(format!(
                "the journal's schema is version {other}; this conductor knows {VERSION}"
            )));
        }
    }
    tx.commit().map(Ok)
}

/// The session `id` as the journal at `url` has it (its entries only `with_entries`).
pub(super) fn read(url: &str, id: &str, with_entries: bool) -> Result<Option<Kept>, String> {
    let mut client = connect(url)?;
    let mut tx = client
        .build_transaction()
        .read_only(true)
        .isolation_level(postgres::IsolationLevel::RepeatableRead)
        .start()
        .map_err(|e| describe(&e))?;
    let session = tx
        .query_opt(
            "SELECT own, setup, closed, lost FROM sacp_sessions WHERE id = $1",
            &[&id],
        )
        .map_err(|e| describe(&e))?;
    let Some(session) = session else {
        return Ok(None);
    };
    let (own, setup, closed, lost): (String, String, bool, i64) = (
        session.get(0),
        session.get(1),
        session.get(2),
        session.get(3),
    );
    let rows = if with_entries {
        tx.query(
            "SELECT last, lines FROM sacp_chunks WHERE session = $1 ORDER BY first",
            &[&id],
        )
        .map_err(|e| describe(&e))?
    } else {
        Vec::new()
    };
    let mut entries = Vec::new();
    let mut next = 0;
    let mut unread = 0;
    for row in rows {
        let (last, lines): (i64, String) = (row.get(0), row.get(1));
        next = last as u64 + 1;
        unread += super::read_chunk(id, &lines, &mut entries);
    }
    let _ = tx.commit();
    Ok(Some(Kept {
        own,
        setup: serde_json::from_str(&setup).unwrap_or(Value::Null),
        entries,
        next,
        lost: lost as u64 + unread,
        closed,
    }))
}
