//! The journal's PostgreSQL store, for conductors that share their sessions: the same three
//! tables as SQLite's (`sacp_sessions`, `sacp_chunks`, `sacp_meta`), created and migrated by
//! the conductor, and each conductor's lease (an advisory lock keyed by its instance id, held
//! on a connection of its own: see [`super::hold`]). Every conductor sharing it sweeps what is
//! past its own retention. No TLS: a database on the conductors' own network, or a local
//! socket.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use postgres::{Client, Config, NoTls, Transaction};

use super::hold::{self, Claim, Decision, Instance, Row};
use super::{Deposed, Error, Kept, Reading, Record, now};

/// The schema this conductor writes.
const VERSION: i32 = 4;

/// How often the lease's connection is checked (and made again when it broke).
const LEASE_EVERY: Duration = Duration::from_secs(1);

/// What the lease's connection asks of the server: probe a silent peer after 5 s, every 2 s,
/// 3 times. A conductor whose machine vanished (or was cut off) loses its lease — and its
/// sessions can be taken over — within 11 s; one whose process died, at once.
const LEASE_KEEPALIVES: &str =
    "SET tcp_keepalives_idle = 5; SET tcp_keepalives_interval = 2; SET tcp_keepalives_count = 3";

/// The writer's connection, made again after it broke.
pub(super) struct Writer {
    url: String,
    /// What the server shows of it (`pg_stat_activity.application_name`): `sacp-journal NAME`.
    application: String,
    client: Option<Client>,
}

impl Writer {
    /// Connects (as conductor `me`), and creates or checks the schema: an unreachable server
    /// is an error now.
    pub(super) fn open(url: &str, me: &Instance) -> Result<Writer, Error> {
        let application = format!("sacp-journal {}", me.name);
        let mut client = connect(url, &application)?;
        migrate(&mut client)?;
        Ok(Writer {
            url: url.to_owned(),
            application,
            client: Some(client),
        })
    }

    fn client(&mut self) -> Result<&mut Client, Error> {
        if self.client.as_ref().is_none_or(Client::is_closed) {
            self.client = Some(connect(&self.url, &self.application)?);
        }
        Ok(self.client.as_mut().expect("connected just now"))
    }

    /// Runs `f` on the connection; a failure drops the connection, made again for the next.
    fn with<T>(
        &mut self,
        f: impl FnOnce(&mut Client) -> Result<T, postgres::Error>,
    ) -> Result<T, Error> {
        let result = f(self.client()?);
        if result.is_err() {
            self.client = None;
        }
        result.map_err(Error::Postgres)
    }
}

impl super::Store for Writer {
    fn write(
        &mut self,
        batch: &[Record],
        lost: &HashMap<String, u64>,
        me: &Instance,
    ) -> Result<Vec<Deposed>, Error> {
        self.with(|client| write_batch(client, batch, lost, me))
    }

    fn sweep(&mut self, before: i64) -> Result<u64, Error> {
        self.with(|client| {
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
        })
    }

    fn reconnect(&mut self) -> Result<(), Error> {
        self.client = None;
        self.client().map(|_| ())
    }
}

fn write_batch(
    client: &mut Client,
    batch: &[Record],
    lost: &HashMap<String, u64>,
    me: &Instance,
) -> Result<Vec<Deposed>, postgres::Error> {
    let at = now();
    let mut tx = client.transaction()?;
    // The rows of the batch's sessions, locked until the commit: a takeover waits for this
    // write, and this write sees any takeover that came before it.
    let ids = super::sessions_of(batch);
    let mut held = HashMap::new();
    if !ids.is_empty() {
        let rows = tx.query(
            "SELECT id, epoch, holder_name FROM sacp_sessions WHERE id = ANY($1)
             ORDER BY id FOR NO KEY UPDATE",
            &[&ids],
        )?;
        for row in rows {
            let epoch: i64 = row.get(1);
            held.insert(row.get::<_, String>(0), (epoch as u64, row.get(2)));
        }
    }
    let (taken, deposed) = super::fence(batch, &held);
    let batch = super::Chunks::of(&taken);
    let afresh = tx.prepare("DELETE FROM sacp_chunks WHERE session = $1")?;
    let unlost = tx.prepare("UPDATE sacp_sessions SET lost = 0 WHERE id = $1")?;
    for id in &batch.afresh {
        tx.execute(&afresh, &[id])?;
        tx.execute(&unlost, &[id])?;
    }
    let began = tx.prepare(
        "INSERT INTO sacp_sessions (id, own, setup, closed, lost, at, holder, holder_name, epoch)
         VALUES ($1, $2, $3, false, 0, $4, $5, $6, $7)
         ON CONFLICT (id) DO UPDATE SET own = excluded.own, setup = excluded.setup,
             at = excluded.at, holder = excluded.holder, holder_name = excluded.holder_name,
             epoch = excluded.epoch",
    )?;
    for (id, epoch, own, setup) in &batch.began {
        let epoch = *epoch as i64;
        tx.execute(&began, &[id, own, setup, &at, &me.id, &me.name, &epoch])?;
    }
    // A chunk written already is a write tried again whose commit went through unacknowledged:
    // the same rows, from the same holder (the fence lets no other write them).
    let chunk = tx.prepare(
        "INSERT INTO sacp_chunks (session, first, last, lines, at, epoch)
         VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING",
    )?;
    for (id, first, last, epoch, lines) in &batch.chunks {
        let (first, last, epoch) = (*first as i64, *last as i64, *epoch as i64);
        tx.execute(&chunk, &[id, &first, &last, lines, &at, &epoch])?;
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
    let released = tx.prepare(
        "UPDATE sacp_sessions SET holder = NULL, holder_name = NULL
         WHERE id = $1 AND epoch = $2 AND holder = $3",
    )?;
    for (id, epoch) in &batch.released {
        tx.execute(&released, &[id, &(*epoch as i64), &me.id])?;
    }
    // Losses count whoever holds the session now: they only ever make a history say it is
    // incomplete.
    let losses = tx.prepare("UPDATE sacp_sessions SET lost = lost + $2 WHERE id = $1")?;
    for (id, n) in lost {
        tx.execute(&losses, &[id, &(*n as i64)])?;
    }
    tx.commit()?;
    Ok(deposed)
}

/// The connection settings of `url`, for `application` (what `pg_stat_activity` shows).
fn config(url: &str, application: &str) -> Result<Config, Error> {
    let mut config: Config = url.parse().map_err(|source| Error::Unreachable {
        url: redacted(url),
        source,
    })?;
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(Duration::from_secs(5));
    }
    // A connection whose peer stopped acknowledging fails instead of hanging.
    config
        .keepalives(true)
        .keepalives_idle(Duration::from_secs(5))
        .tcp_user_timeout(Duration::from_secs(10))
        .application_name(application);
    Ok(config)
}

fn connect(url: &str, application: &str) -> Result<Client, Error> {
    config(url, application)?
        .connect(NoTls)
        .map_err(|source| Error::Unreachable {
            url: redacted(url),
            source,
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

/// This conductor's lease: its instance's advisory lock, held on a connection a thread of its
/// own checks every [`LEASE_EVERY`] and makes again (and locks again) when it broke.
#[derive(Debug)]
pub(super) struct Lease {
    stop: Arc<AtomicBool>,
}

impl Lease {
    /// Takes the lock now: a conductor that cannot is not started.
    pub(super) fn take(url: &str, me: &Instance) -> Result<Lease, Error> {
        let id = me.id;
        let application = format!("sacp-lease {}", me.name);
        let client = lease_connection(url, &application, id)?;
        let stop = Arc::new(AtomicBool::new(false));
        let (url, stopped) = (url.to_owned(), stop.clone());
        std::thread::Builder::new()
            .name("sacp-journal-lease".into())
            .spawn(move || hold_lease(client, &url, &application, id, &stopped))
            .map_err(|e| Error::io("cannot start the journal's lease", e))?;
        Ok(Lease { stop })
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// A connection holding instance `id`'s lock (waiting for a claim that is looking at it).
fn lease_connection(url: &str, application: &str, id: i64) -> Result<Client, Error> {
    let mut client = connect(url, application)?;
    client
        .batch_execute(LEASE_KEEPALIVES)
        .and_then(|()| client.execute("SELECT pg_advisory_lock($1)", &[&id]))
        .map_err(Error::Postgres)?;
    Ok(client)
}

fn hold_lease(mut client: Client, url: &str, application: &str, id: i64, stop: &AtomicBool) {
    loop {
        std::thread::sleep(LEASE_EVERY);
        if stop.load(Ordering::Relaxed) {
            return;
        }
        if client.simple_query("SELECT 1").is_ok() {
            continue;
        }
        tracing::warn!(
            "the journal's lease connection broke: until it is made again, another conductor may take over this one's sessions"
        );
        loop {
            if stop.load(Ordering::Relaxed) {
                return;
            }
            match lease_connection(url, application, id) {
                Ok(again) => {
                    client = again;
                    tracing::info!("the journal's lease is held again");
                    break;
                }
                Err(e) => {
                    tracing::debug!("the journal's lease cannot be taken again yet: {e}");
                    std::thread::sleep(LEASE_EVERY);
                }
            }
        }
    }
}

/// Creates the tables, or checks that the database is of a schema this conductor knows and
/// migrates an older one. Two conductors starting at once both create what is missing: `IF
/// NOT EXISTS` and a lock make that safe.
fn migrate(client: &mut Client) -> Result<(), Error> {
    let mut tx = client.transaction().map_err(Error::Postgres)?;
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
    )
    .map_err(Error::Postgres)?;
    let version: Option<i32> = tx
        .query_opt("SELECT value FROM sacp_meta WHERE key = 'version'", &[])
        .map_err(Error::Postgres)?
        .map(|row| row.get(0));
    match version {
        Some(VERSION) => {}
        None | Some(2 | 3) => {
            let mut steps = String::new();
            // Version 2 had no times: what it holds counts as written now.
            if version == Some(2) {
                let at = now();
                steps.push_str(&format!(
                    "ALTER TABLE sacp_sessions ADD COLUMN at BIGINT NOT NULL DEFAULT {at};
                     ALTER TABLE sacp_chunks ADD COLUMN at BIGINT NOT NULL DEFAULT {at};"
                ));
            }
            // Version 4: who holds each session, under which epoch; and the fence.
            steps.push_str(
                "ALTER TABLE sacp_sessions ADD COLUMN holder BIGINT,
                     ADD COLUMN holder_name TEXT,
                     ADD COLUMN epoch BIGINT NOT NULL DEFAULT 0;
                 ALTER TABLE sacp_chunks ADD COLUMN epoch BIGINT NOT NULL DEFAULT 0;
                 CREATE OR REPLACE FUNCTION sacp_fenced() RETURNS trigger LANGUAGE plpgsql AS $$
                 BEGIN
                     IF EXISTS (SELECT 1 FROM sacp_sessions
                                WHERE id = NEW.session AND epoch > NEW.epoch) THEN
                         RAISE EXCEPTION USING ERRCODE = 'SACPF',
                             MESSAGE = 'the session ' || NEW.session
                                 || ' is held under an epoch newer than ' || NEW.epoch;
                     END IF;
                     RETURN NEW;
                 END $$;
                 CREATE TRIGGER sacp_chunks_fenced BEFORE INSERT ON sacp_chunks
                     FOR EACH ROW EXECUTE FUNCTION sacp_fenced();
                 DELETE FROM sacp_meta WHERE key = 'version';",
            );
            steps.push_str(&format!(
                "INSERT INTO sacp_meta (key, value) VALUES ('version', {VERSION});"
            ));
            tx.batch_execute(&steps).map_err(Error::Postgres)?;
        }
        Some(other) => {
            return Err(Error::Schema {
                found: other.into(),
                known: VERSION.into(),
            });
        }
    }
    tx.commit().map_err(Error::Postgres)
}

/// Claims the session `id` for `me` (see [`super::Journal::claim`]): its row locked, another
/// holder's lease tried (a shared lock on its key, which its own exclusive one refuses).
pub(super) fn claim(url: &str, id: &str, me: &Instance, create: bool) -> Result<Claim, Error> {
    let mut client = connect(url, "sacp-journal-reader")?;
    let mut tx = client.transaction().map_err(Error::Postgres)?;
    let Some(claim) = claim_in(&mut tx, id, me, create)? else {
        return Ok(Claim::Unknown);
    };
    tx.commit().map_err(Error::Postgres)?;
    Ok(claim)
}

/// The claim, in `tx`: `None` for a session the journal does not know.
fn claim_in(
    tx: &mut Transaction<'_>,
    id: &str,
    me: &Instance,
    create: bool,
) -> Result<Option<Claim>, Error> {
    if create {
        tx.execute(
            "INSERT INTO sacp_sessions (id, own, setup, closed, lost, at, epoch)
             VALUES ($1, $1, 'null', false, 0, $2, 0) ON CONFLICT DO NOTHING",
            &[&id, &now()],
        )
        .map_err(Error::Postgres)?;
    }
    let row = tx
        .query_opt(
            "SELECT holder, holder_name, epoch, closed, setup FROM sacp_sessions
             WHERE id = $1 FOR UPDATE",
            &[&id],
        )
        .map_err(Error::Postgres)?
        .map(|r| Row {
            holder: r.get(0),
            holder_name: r.get(1),
            epoch: r.get::<_, i64>(2) as u64,
            // A session an agent loads through its chain again begins again.
            closed: r.get::<_, bool>(3) && !create,
            setup: r.get(4),
        });
    if row.as_ref().is_none_or(|r| r.setup == "null" && !create) {
        return Ok(None);
    }
    let decision = hold::decide(row.as_ref(), me, |holder| {
        let free = tx
            .query_one("SELECT pg_try_advisory_xact_lock_shared($1)", &[&holder])
            .map_err(Error::Postgres)?;
        Ok(!free.get::<_, bool>(0))
    })?;
    Ok(Some(match decision {
        Decision::Unknown => return Ok(None),
        Decision::Closed { with_parent } => Claim::Closed { with_parent },
        Decision::Held { by } => Claim::Held { by },
        Decision::Ours { epoch } | Decision::Take { epoch } => {
            tx.execute(
                "UPDATE sacp_sessions SET holder = $2, holder_name = $3, epoch = $4,
                     closed = false, at = $5 WHERE id = $1",
                &[&id, &me.id, &me.name, &(epoch as i64), &now()],
            )
            .map_err(Error::Postgres)?;
            let kept = read_in(tx, id, true)
                .map_err(Error::Postgres)?
                .expect("the row was read just now");
            Claim::Taken { kept, epoch }
        }
    }))
}

/// The session `id` as the journal at `url` has it (its entries only `with_entries`).
pub(super) fn read(url: &str, id: &str, with_entries: bool) -> Result<Option<Kept>, Error> {
    let mut client = connect(url, "sacp-journal-reader")?;
    let mut tx = client
        .build_transaction()
        .read_only(true)
        .isolation_level(postgres::IsolationLevel::RepeatableRead)
        .start()
        .map_err(Error::Postgres)?;
    let kept = read_in(&mut tx, id, with_entries).map_err(Error::Postgres)?;
    let _ = tx.commit();
    Ok(kept)
}

fn read_in(
    tx: &mut Transaction<'_>,
    id: &str,
    with_entries: bool,
) -> Result<Option<Kept>, postgres::Error> {
    let session = tx.query_opt(
        "SELECT own, setup, closed, lost FROM sacp_sessions WHERE id = $1",
        &[&id],
    )?;
    let Some(session) = session else {
        return Ok(None);
    };
    let (own, setup, closed, lost): (String, String, bool, i64) = (
        session.get(0),
        session.get(1),
        session.get(2),
        session.get(3),
    );
    let mut reading = Reading::default();
    if with_entries {
        let rows = tx.query(
            "SELECT first, last, lines FROM sacp_chunks WHERE session = $1 ORDER BY first",
            &[&id],
        )?;
        for row in rows {
            let (first, last): (i64, i64) = (row.get(0), row.get(1));
            let lines: &str = row.get(2);
            reading.chunk(id, first as u64, last as u64, Ok(lines));
        }
    }
    Ok(Some(reading.kept(own, &setup, closed, lost as u64)))
}
