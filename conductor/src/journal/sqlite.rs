//! The journal's SQLite store: one file, WAL mode, three tables — `sessions` (how each began,
//! whether it was closed, how many of its records were lost, when it was last written),
//! `chunks` (each session's entries, a batch's in one row: their lines as one LZ4 frame, the
//! first's number and the last's, when it was written) and `meta` (the schema's version, which
//! the conductor migrates).
//!
//! The lines are compressed because every byte of them is written twice (to the write-ahead
//! log, then to the database when the log is checkpointed), a page at a time: the JSON of a
//! session's updates repeats itself (its id, `sessionUpdate`, `content`), and LZ4 makes a
//! tenth or so of it at a few hundred megabytes a second, far less work than the pages it
//! saves. A frame (the format of the `lz4` tool) rather than a bare block, so the journal reads
//! with standard tools: `SELECT writefile('c.lz4', lines) FROM chunks …`, then `lz4 -d`. Rows of
//! version 3 hold their lines as text, and are read as they are. The file, its write-ahead log and its shared-memory index are the user's alone
//! (`0600`, SQLite gives the other two the database's mode), in a directory made `0700`.

use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

use rusqlite::{Connection, OptionalExtension, params};
use serde_json::Value;

use super::{Kept, Record, now};

/// The schema this conductor writes.
const VERSION: i64 = 4;

/// The writer's connection.
pub(super) struct Writer {
    conn: Connection,
    /// Compresses each chunk's lines into a frame of its own (one encoder, its buffers kept).
    lz4: lz4_flex::frame::FrameEncoder<Vec<u8>>,
}

impl super::Writes for Writer {
    fn write(
        &mut self,
        batch: &[Record],
        lost: &std::collections::HashMap<String, u64>,
    ) -> Result<(), String> {
        self.write_batch(batch, lost).map_err(|e| e.to_string())
    }

    fn sweep(&mut self, before: i64) -> Result<u64, String> {
        let mut sweep = || -> rusqlite::Result<u64> {
            let tx = self.conn.transaction()?;
            let gone = tx.execute(
                "DELETE FROM sessions WHERE at < ?1 AND NOT EXISTS
                     (SELECT 1 FROM chunks WHERE chunks.session = sessions.id AND chunks.at >= ?1)",
                params![before],
            )?;
            if gone > 0 {
                tx.execute(
                    "DELETE FROM chunks WHERE session NOT IN (SELECT id FROM sessions)",
                    [],
                )?;
            }
            tx.commit()?;
            Ok(gone as u64)
        };
        sweep().map_err(|e| e.to_string())
    }
}

impl Writer {
    /// Opens (creating it `0600`, in a `0700` directory, if need be) and migrates the journal
    /// at `path`; and whether its last write was found torn (see [`torn_tail`]).
    pub(super) fn open(path: &Path) -> Result<(Writer, bool), String> {
        let mode =
            |e: std::io::Error, what: &Path| format!("cannot create {}: {e}", what.display());
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty())
            && !dir.exists()
        {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(|e| mode(e, dir))?;
        }
        // Made (or kept) the user's alone before SQLite opens it: SQLite creates the log and
        // the index with the database's mode.
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(path)
            .map_err(|e| mode(e, path))?;
        let private = std::fs::Permissions::from_mode(0o600);
        if file
            .metadata()
            .map_err(|e| mode(e, path))?
            .permissions()
            .mode()
            & 0o077
            != 0
        {
            file.set_permissions(private).map_err(|e| mode(e, path))?;
        }
        drop(file);
        let torn = torn_tail(path);
        if let Some(bytes) = torn {
            tracing::warn!(
                journal = %path.display(),
                bytes,
                "the journal's last write was torn (a writer killed mid-write, or a copy taken mid-write): it is left out, and the sessions it held restore up to their last whole write"
            );
        }
        let open = || -> rusqlite::Result<Writer> {
            let conn = Connection::open(path)?;
            conn.pragma_update(None, "journal_mode", "WAL")?;
            conn.pragma_update(None, "synchronous", "NORMAL")?;
            // 8 MiB of pages kept (2 MiB by default): the pages a batch appends to are read
            // from memory, not back from the file.
            conn.pragma_update(None, "cache_size", -8192)?;
            conn.busy_timeout(std::time::Duration::from_secs(5))?;
            migrate(&conn)?;
            Ok(Writer {
                conn,
                lz4: lz4_flex::frame::FrameEncoder::new(Vec::new()),
            })
        };
        let writer =
            open().map_err(|e| format!("cannot open the journal {}: {e}", path.display()))?;
        Ok((writer, torn.is_some()))
    }

    fn write_batch(
        &mut self,
        batch: &[Record],
        lost: &std::collections::HashMap<String, u64>,
    ) -> rusqlite::Result<()> {
        let at = now();
        let tx = self.conn.transaction()?;
        {
            let batch = super::Chunks::of(batch);
            let mut afresh = tx.prepare_cached("DELETE FROM chunks WHERE session = ?1")?;
            let mut unlost = tx.prepare_cached("UPDATE sessions SET lost = 0 WHERE id = ?1")?;
            for id in &batch.afresh {
                afresh.execute(params![id])?;
                unlost.execute(params![id])?;
            }
            let mut began = tx.prepare_cached(
                "INSERT INTO sessions (id, own, setup, closed, lost, at) VALUES (?1, ?2, ?3, 0, 0, ?4)
                 ON CONFLICT (id) DO UPDATE SET own = excluded.own, setup = excluded.setup, at = excluded.at",
            )?;
            for (id, own, setup) in &batch.began {
                began.execute(params![id, own, setup, at])?;
            }
            let mut chunk = tx.prepare_cached(
                "INSERT OR IGNORE INTO chunks (session, first, last, lines, at) VALUES (?1, ?2, ?3, ?4, ?5)",
            )?;
            for (id, first, last, lines) in &batch.chunks {
                let lines = compress(&mut self.lz4, lines)?;
                chunk.execute(params![id, *first as i64, *last as i64, lines, at])?;
            }
            // A closed session's conversation goes, and its subagents' with it; what is left says
            // only that it was closed, and whether with its parent.
            let mut closed = tx.prepare_cached(
                "UPDATE sessions SET closed = 1, setup = ?3, at = ?2 WHERE id = ?1",
            )?;
            let mut entries = tx.prepare_cached("DELETE FROM chunks WHERE session = ?1")?;
            let mut children = tx.prepare_cached(
                "SELECT id FROM sessions WHERE json_extract(setup, '$.parent') = ?1 AND closed = 0",
            )?;
            let subagents = super::subagents_of(&batch.closed, |parent| {
                children
                    .query_map(params![parent], |r| r.get::<_, String>(0))?
                    .collect()
            })?;
            let closing = batch.closed.iter().copied();
            for (id, with_parent) in closing.chain(subagents.iter().map(|id| (id.as_str(), true))) {
                closed.execute(params![id, at, super::closed_setup(with_parent)])?;
                entries.execute(params![id])?;
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

/// `lines` as an LZ4 frame of their own.
fn compress(
    lz4: &mut lz4_flex::frame::FrameEncoder<Vec<u8>>,
    lines: &str,
) -> rusqlite::Result<Vec<u8>> {
    use std::io::Write as _;
    let written = lz4
        .write_all(lines.as_bytes())
        .map_err(lz4_flex::frame::Error::IoError)
        .and_then(|()| lz4.try_finish());
    if let Err(e) = written {
        // Never from a `Vec`; but an encoder that failed is not used again.
        *lz4 = lz4_flex::frame::FrameEncoder::new(Vec::new());
        return Err(rusqlite::Error::ToSqlConversionFailure(Box::new(e)));
    }
    Ok(std::mem::take(lz4.get_mut()))
}

/// A chunk's lines as stored: an LZ4 frame, or (a row of version 3) text.
fn decompress(lines: rusqlite::types::ValueRef<'_>) -> Result<String, String> {
    use std::io::Read as _;
    match lines {
        rusqlite::types::ValueRef::Text(text) => {
            String::from_utf8(text.to_vec()).map_err(|e| e.to_string())
        }
        rusqlite::types::ValueRef::Blob(frame) => {
            let mut text = String::new();
            lz4_flex::frame::FrameDecoder::new(frame)
                .read_to_string(&mut text)
                .map_err(|e| e.to_string())?;
            Ok(text)
        }
        other => Err(format!("lines of type {:?}", other.data_type())),
    }
}

/// The bytes of a partial frame at the end of `path`'s write-ahead log, if there is one: the
/// log is a 32-byte header and whole frames (a page and a 24-byte header each), so a length
/// that is not is a write cut short. SQLite leaves such a frame out (and with it the
/// transaction it ended) without a word; this says it.
fn torn_tail(path: &Path) -> Option<u64> {
    use std::io::Read;
    let mut name = path.file_name()?.to_os_string();
    name.push("-wal");
    let wal = path.with_file_name(name);
    let mut file = std::fs::File::open(wal).ok()?;
    let len = file.metadata().ok()?.len();
    let mut header = [0u8; 32];
    if len == 0 {
        return None;
    }
    if file.read_exact(&mut header).is_err() {
        return Some(len);
    }
    let magic = u32::from_be_bytes(header[0..4].try_into().ok()?);
    if magic & !1 != 0x377f_0682 {
        return None;
    }
    let page = u64::from(u32::from_be_bytes(header[8..12].try_into().ok()?));
    let frame = page + 24;
    let rest = (len - 32) % frame;
    (rest != 0).then_some(rest)
}

/// Creates the tables, or checks that the file is of a schema this conductor knows and
/// migrates an older one.
fn migrate(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
         CREATE TABLE IF NOT EXISTS sessions (
             id TEXT PRIMARY KEY,
             own TEXT NOT NULL,
             setup TEXT NOT NULL,
             closed INTEGER NOT NULL,
             lost INTEGER NOT NULL,
             at INTEGER NOT NULL
         );
         CREATE TABLE IF NOT EXISTS chunks (
             session TEXT NOT NULL,
             first INTEGER NOT NULL,
             last INTEGER NOT NULL,
             lines BLOB NOT NULL,
             at INTEGER NOT NULL,
             PRIMARY KEY (session, first)
         ) WITHOUT ROWID;
         CREATE INDEX IF NOT EXISTS sessions_by_parent ON sessions (json_extract(setup, '$.parent'));",
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
        // Version 3 kept the lines as text, which version 4 reads as they are.
        Some(3) => {
            conn.execute(
                "UPDATE meta SET value = ?1 WHERE key = 'version'",
                params![VERSION],
            )?;
        }
        // Version 2 had no times either: what it holds counts as written now.
        Some(2) => {
            let at = now();
            conn.execute_batch(&format!(
                "BEGIN;
                 ALTER TABLE sessions ADD COLUMN at INTEGER NOT NULL DEFAULT {at};
                 ALTER TABLE chunks ADD COLUMN at INTEGER NOT NULL DEFAULT {at};
                 UPDATE meta SET value = {VERSION} WHERE key = 'version';
                 COMMIT;"
            ))?;
        }
        Some(other) => {
            return Err(rusqlite::Error::InvalidParameterName(format!(
                "the journal's schema is version {other}; this conductor knows {VERSION}"
            )));
        }
    }
    Ok(())
}

/// The session `id` as the journal at `path` has it (its entries only `with_entries`).
pub(super) fn read(path: &Path, id: &str, with_entries: bool) -> Result<Option<Kept>, String> {
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
        let mut unread = 0;
        let mut rows =
            tx.prepare("SELECT first, last, lines FROM chunks WHERE session = ?1 ORDER BY first")?;
        let mut rows = rows.query(params![id])?;
        while with_entries && let Some(row) = rows.next()? {
            let (first, last): (i64, i64) = (row.get(0)?, row.get(1)?);
            next = last as u64 + 1;
            match decompress(row.get_ref(2)?) {
                Ok(lines) => unread += super::read_chunk(id, &lines, &mut entries),
                Err(e) => {
                    tracing::warn!(
                        session = id,
                        "a journal chunk that cannot be read is left out: {e}"
                    );
                    unread += (last - first + 1).max(0) as u64;
                }
            }
        }
        Ok(Some(Kept {
            own,
            setup: serde_json::from_str(&setup).unwrap_or(Value::Null),
            entries,
            next,
            lost: lost as u64 + unread,
            closed: closed != 0,
        }))
    };
    read().map_err(|e| format!("cannot read the journal {}: {e}", path.display()))
}
