//! The journal's SQLite store: one file, WAL mode, three tables — `sessions` (how each began,
//! whether it was closed, how many of its records were lost), `chunks` (each session's
//! entries, a batch's in one row: their lines, the first's number and the last's) and `meta` (the schema's version, which the conductor migrates).

use std::path::Path;

use rusqlite::{Connection, OptionalExtension, params};
use serde_json::Value;

use super::{Kept, Record};

/// The schema this conductor writes.
const VERSION: i64 = 2;

/// The writer's connection.
pub(super) struct Writer {
    conn: Connection,
}

impl super::Writes for Writer {
    fn write(
        &mut self,
        batch: &[Record],
        lost: &std::collections::HashMap<String, u64>,
    ) -> Result<(), String> {
        self.write_batch(batch, lost).map_err(|e| e.to_string())
    }
}

impl Writer {
    pub(super) fn open(path: &Path) -> rusqlite::Result<Writer> {
        let conn = Connection::open(path)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        migrate(&conn)?;
        Ok(Writer { conn })
    }

    fn write_batch(
        &mut self,
        batch: &[Record],
        lost: &std::collections::HashMap<String, u64>,
    ) -> rusqlite::Result<()> {
        let tx = self.conn.transaction()?;
        {
            let batch = super::Chunks::of(batch);
            let mut began = tx.prepare_cached(
                "INSERT INTO sessions (id, own, setup, closed, lost) VALUES (?1, ?2, ?3, 0, 0)
                 ON CONFLICT (id) DO UPDATE SET own = excluded.own, setup = excluded.setup",
            )?;
            for (id, own, setup) in &batch.began {
                began.execute(params![id, own, setup])?;
            }
            let mut chunk = tx.prepare_cached(
                "INSERT OR IGNORE INTO chunks (session, first, last, lines) VALUES (?1, ?2, ?3, ?4)",
            )?;
            for (id, first, last, lines) in &batch.chunks {
                chunk.execute(params![id, *first as i64, *last as i64, lines])?;
            }
            let mut closed = tx.prepare_cached("UPDATE sessions SET closed = 1 WHERE id = ?1")?;
            for id in &batch.closed {
                closed.execute(params![id])?;
            }
            let mut losses =
                tx.prepare_cached("UPDATE sessions SET lost = lost + ?2 WHERE id = ?1")?;
            for (id, n) in lost {
                losses.execute(params![id, *n as i64])?;
            }
        }
        tx.commit()
    }
}

/// Creates the tables, or checks that the file is of a schema this conductor knows.
fn migrate(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
         CREATE TABLE IF NOT EXISTS sessions (
             id TEXT PRIMARY KEY,
             own TEXT NOT NULL,
             setup TEXT NOT NULL,
             closed INTEGER NOT NULL,
             lost INTEGER NOT NULL
         );
         CREATE TABLE IF NOT EXISTS chunks (
             session TEXT NOT NULL,
             first INTEGER NOT NULL,
             last INTEGER NOT NULL,
             lines TEXT NOT NULL,
             PRIMARY KEY (session, first)
         ) WITHOUT ROWID;",
    )?;
    let version: Option<i64> = conn
        .query_row("SELECT value FROM meta WHERE key = 'version'", [], |r| {
            r.get(0)
        })
        .optional()?;
    match version {
        None => {
            conn.execute(
                "INSERT INTO meta (key, value) VALUES ('version', ?1)",
                params![VERSION],
            )?;
        }
        Some(VERSION) => {}
        Some(other) => {
            return Err(rusqlite::Error::InvalidParameterName(format!(
                "the journal's schema is version {other}; this conductor knows {VERSION}"
            )));
        }
    }
    Ok(())
}

/// The session `id` as the journal at `path` has it.
pub(super) fn read(path: &Path, id: &str) -> Result<Option<Kept>, String> {
    let read = || -> rusqlite::Result<Option<Kept>> {
        let conn = Connection::open_with_flags(
            path,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        let tx = conn.unchecked_transaction()?;
        let session = tx
            .query_row(
                "SELECT own, setup, closed, lost FROM sessions WHERE id = ?1",
                params![id],
                |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, i64>(2)?,
                        r.get::<_, i64>(3)?,
                    ))
                },
            )
            .optional()?;
        let Some((own, setup, closed, lost)) = session else {
            return Ok(None);
        };
        let mut entries = Vec::new();
        let mut next = 0;
        let mut rows =
            tx.prepare("SELECT last, lines FROM chunks WHERE session = ?1 ORDER BY first")?;
        let mut rows = rows.query(params![id])?;
        while let Some(row) = rows.next()? {
            let last: i64 = row.get(0)?;
            let lines: String = row.get(1)?;
            next = last as u64 + 1;
            super::read_chunk(id, &lines, &mut entries);
        }
        Ok(Some(Kept {
            own,
            setup: serde_json::from_str(&setup).unwrap_or(Value::Null),
            entries,
            next,
            lost: lost as u64,
            closed: closed != 0,
        }))
    };
    read().map_err(|e| format!("cannot read the journal {}: {e}", path.display()))
}
