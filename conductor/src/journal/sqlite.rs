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
//!
//! Several conductors of one machine may share a file (the default journal is one per user):
//! SQLite serializes their writes, and [`super::hold`] keeps each session to one of them —
//! a conductor's lease is a lock file in `journal.db.holders/`.

use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

use rusqlite::{Connection, OptionalExtension, params};

use super::error::Unreadable;
use super::hold::{self, Claim, Decision, Instance, Row};
use super::{Deposed, Error, Kept, Reading, Record, now};

/// The schema this conductor writes.
const VERSION: i64 = 5;

/// The writer's connection.
pub(super) struct Writer {
    path: std::path::PathBuf,
    conn: Connection,
    /// Compresses each chunk's lines into a frame of its own (one encoder, its buffers kept).
    lz4: lz4_flex::frame::FrameEncoder<Vec<u8>>,
}

impl super::Store for Writer {
    fn write(
        &mut self,
        batch: &[Record],
        lost: &std::collections::HashMap<String, u64>,
        me: &Instance,
    ) -> Result<Vec<Deposed>, Error> {
        let result = self.write_batch(batch, lost, me);
        result.map_err(|source| self.error(source))
    }

    fn sweep(&mut self, before: i64) -> Result<u64, Error> {
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
        sweep().map_err(|source| self.error(source))
    }

    fn reconnect(&mut self) -> Result<(), Error> {
        self.conn = connection(&self.path).map_err(|source| self.error(source))?;
        Ok(())
    }
}

impl Writer {
    /// Opens (creating it `0600`, in a `0700` directory, if need be) and migrates the journal
    /// at `path`; and whether its last write was found torn (see [`torn_tail`]).
    pub(super) fn open(path: &Path) -> Result<(Writer, bool), Error> {
        let mode = |e: std::io::Error, what: &Path| {
            Error::io(format!("cannot create {}", what.display()), e)
        };
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
        // A conductor that shares the file may be writing its log now: a frame it has half
        // written is not torn. Only a file nobody else holds is looked at.
        let torn = if hold::any_alive(&hold::holders_dir(path)) {
            None
        } else {
            torn_tail(path)
        };
        if let Some(bytes) = torn {
            tracing::warn!(
                journal = %path.display(),
                bytes,
                "the journal's last write was torn (a writer killed mid-write, or a copy taken mid-write): it is left out, and the sessions it held restore up to their last whole write"
            );
        }
        let failed = |source| Error::Sqlite {
            path: path.to_owned(),
            source,
        };
        let conn = connection(path).map_err(failed)?;
        migrate(&conn).map_err(failed)??;
        let writer = Writer {
            path: path.to_owned(),
            conn,
            lz4: lz4_flex::frame::FrameEncoder::new(Vec::new()),
        };
        Ok((writer, torn.is_some()))
    }

    fn error(&self, source: rusqlite::Error) -> Error {
        Error::Sqlite {
            path: self.path.clone(),
            source,
        }
    }

    fn write_batch(
        &mut self,
        batch: &[Record],
        lost: &std::collections::HashMap<String, u64>,
        me: &Instance,
    ) -> rusqlite::Result<Vec<Deposed>> {
        let at = now();
        // Immediate: the write lock first, so the rows read for the fence stay as read.
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let deposed;
        {
            let mut held = std::collections::HashMap::new();
            let mut row =
                tx.prepare_cached("SELECT epoch, holder_name FROM sessions WHERE id = ?1")?;
            for id in super::sessions_of(batch) {
                let found = row
                    .query_row(params![id], |r| {
                        Ok((r.get::<_, i64>(0)? as u64, r.get::<_, Option<String>>(1)?))
                    })
                    .optional()?;
                if let Some(found) = found {
                    held.insert(id.to_owned(), found);
                }
            }
            let (taken, refused) = super::fence(batch, &held);
            deposed = refused;
            let batch = super::Chunks::of(&taken);
            let mut afresh = tx.prepare_cached("DELETE FROM chunks WHERE session = ?1")?;
            let mut unlost = tx.prepare_cached("UPDATE sessions SET lost = 0 WHERE id = ?1")?;
            for id in &batch.afresh {
                afresh.execute(params![id])?;
                unlost.execute(params![id])?;
            }
            let mut began = tx.prepare_cached(
                "INSERT INTO sessions (id, own, setup, closed, lost, at, holder, holder_name, epoch)
                 VALUES (?1, ?2, ?3, 0, 0, ?4, ?5, ?6, ?7)
                 ON CONFLICT (id) DO UPDATE SET own = excluded.own, setup = excluded.setup,
                     at = excluded.at, holder = excluded.holder,
                     holder_name = excluded.holder_name, epoch = excluded.epoch",
            )?;
            for (id, epoch, own, setup) in &batch.began {
                began.execute(params![id, own, setup, at, me.id, me.name, *epoch as i64])?;
            }
            // A chunk written already is a write tried again whose commit went through
            // unacknowledged: the same rows, from the same holder.
            let mut chunk = tx.prepare_cached(
                "INSERT OR IGNORE INTO chunks (session, first, last, lines, at, epoch)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?;
            for (id, first, last, epoch, lines) in &batch.chunks {
                let lines = compress(&mut self.lz4, lines)?;
                let (first, last, epoch) = (*first as i64, *last as i64, *epoch as i64);
                chunk.execute(params![id, first, last, lines, at, epoch])?;
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
            let mut released = tx.prepare_cached(
                "UPDATE sessions SET holder = NULL, holder_name = NULL
                 WHERE id = ?1 AND epoch = ?2 AND holder = ?3",
            )?;
            for (id, epoch) in &batch.released {
                released.execute(params![id, *epoch as i64, me.id])?;
            }
            // Losses count whoever holds the session now: they only ever make a history say
            // it is incomplete.
            let mut losses =
                tx.prepare_cached("UPDATE sessions SET lost = lost + ?2 WHERE id = ?1")?;
            for (id, n) in lost {
                losses.execute(params![id, *n as i64])?;
            }
        }
        tx.commit()?;
        Ok(deposed)
    }
}

/// A connection to the journal at `path`, set up as the writer and the claims want it.
fn connection(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open(path)?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    // 8 MiB of pages kept (2 MiB by default): the pages a batch appends to are read
    // from memory, not back from the file.
    conn.pragma_update(None, "cache_size", -8192)?;
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    Ok(conn)
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
fn decompress(lines: rusqlite::types::ValueRef<'_>) -> Result<String, Unreadable> {
    use std::io::Read as _;
    match lines {
        rusqlite::types::ValueRef::Text(text) => Ok(String::from_utf8(text.to_vec())?),
        rusqlite::types::ValueRef::Blob(frame) => {
            let mut text = String::new();
            lz4_flex::frame::FrameDecoder::new(frame)
                .read_to_string(&mut text)
                .map_err(Unreadable::Frame)?;
            Ok(text)
        }
        rusqlite::types::ValueRef::Null => Err(Unreadable::Type("null")),
        rusqlite::types::ValueRef::Integer(_) => Err(Unreadable::Type("integer")),
        rusqlite::types::ValueRef::Real(_) => Err(Unreadable::Type("real")),
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
fn migrate(conn: &Connection) -> rusqlite::Result<Result<(), Error>> {
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
    let mut steps = String::from("BEGIN IMMEDIATE;");
    match version {
        Some(VERSION) => return Ok(Ok(())),
        // Version 2 had no times either: what it holds counts as written now.
        Some(2) => {
            let at = now();
            steps.push_str(&format!(
                "ALTER TABLE sessions ADD COLUMN at INTEGER NOT NULL DEFAULT {at};
                 ALTER TABLE chunks ADD COLUMN at INTEGER NOT NULL DEFAULT {at};"
            ));
        }
        // Version 3 kept the lines as text, which later versions read as they are.
        None | Some(3 | 4) => {}
        Some(other) => {
            return Ok(Err(Error::Schema {
                found: other,
                known: VERSION,
            }));
        }
    }
    // Version 5: who holds each session, under which epoch; and the fence.
    steps.push_str(&format!(
        "ALTER TABLE sessions ADD COLUMN holder INTEGER;
         ALTER TABLE sessions ADD COLUMN holder_name TEXT;
         ALTER TABLE sessions ADD COLUMN epoch INTEGER NOT NULL DEFAULT 0;
         ALTER TABLE chunks ADD COLUMN epoch INTEGER NOT NULL DEFAULT 0;
         CREATE TRIGGER chunks_fenced BEFORE INSERT ON chunks
         WHEN EXISTS (SELECT 1 FROM sessions WHERE id = NEW.session AND epoch > NEW.epoch)
         BEGIN SELECT RAISE(ABORT, 'the session is held under a newer epoch'); END;
         DELETE FROM meta WHERE key = 'version';
         INSERT INTO meta (key, value) VALUES ('version', {VERSION});
         COMMIT;"
    ));
    match conn.execute_batch(&steps) {
        Ok(()) => Ok(Ok(())),
        Err(e) => {
            let _ = conn.execute_batch("ROLLBACK");
            // Another conductor migrated it meanwhile.
            let now: Option<i64> = conn
                .query_row("SELECT value FROM meta WHERE key = 'version'", [], |r| {
                    r.get(0)
                })
                .optional()?;
            if now == Some(VERSION) {
                Ok(Ok(()))
            } else {
                Err(e)
            }
        }
    }
}

/// Claims the session `id` of the journal at `path` for `me` (see
/// [`super::Journal::claim`]): in a write transaction, another holder's lease tried (its lock
/// file).
pub(super) fn claim(path: &Path, id: &str, me: &Instance, create: bool) -> Result<Claim, Error> {
    let failed = |source| Error::Sqlite {
        path: path.to_owned(),
        source,
    };
    let mut conn = connection(path).map_err(failed)?;
    let tx = conn
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(failed)?;
    let claim = (|| -> rusqlite::Result<Claim> {
        if create {
            tx.execute(
                "INSERT OR IGNORE INTO sessions (id, own, setup, closed, lost, at, epoch)
                 VALUES (?1, ?1, 'null', 0, 0, ?2, 0)",
                params![id, now()],
            )?;
        }
        let row = tx
            .query_row(
                "SELECT holder, holder_name, epoch, closed, setup FROM sessions WHERE id = ?1",
                params![id],
                |r| {
                    Ok(Row {
                        holder: r.get(0)?,
                        holder_name: r.get(1)?,
                        epoch: r.get::<_, i64>(2)? as u64,
                        // A session an agent loads through its chain again begins again.
                        closed: r.get::<_, i64>(3)? != 0 && !create,
                        setup: r.get(4)?,
                    })
                },
            )
            .optional()?;
        if row.as_ref().is_none_or(|r| r.setup == "null" && !create) {
            return Ok(Claim::Unknown);
        }
        let holders = hold::holders_dir(path);
        let decision = hold::decide(row.as_ref(), me, |holder| {
            Ok(hold::alive_in(&holders, holder))
        })
        .expect("asking a lock file does not fail");
        Ok(match decision {
            Decision::Unknown => Claim::Unknown,
            Decision::Closed { with_parent } => Claim::Closed { with_parent },
            Decision::Held { by } => Claim::Held { by },
            Decision::Ours { epoch } | Decision::Take { epoch } => {
                tx.execute(
                    "UPDATE sessions SET holder = ?2, holder_name = ?3, epoch = ?4, closed = 0,
                         at = ?5 WHERE id = ?1",
                    params![id, me.id, me.name, epoch as i64, now()],
                )?;
                let kept = read_in(&tx, id, true)?.expect("the row was read just now");
                Claim::Taken { kept, epoch }
            }
        })
    })()
    .map_err(failed)?;
    tx.commit().map_err(failed)?;
    Ok(claim)
}

/// The session `id` as the journal at `path` has it (its entries only `with_entries`).
pub(super) fn read(path: &Path, id: &str, with_entries: bool) -> Result<Option<Kept>, Error> {
    let read = || -> rusqlite::Result<Option<Kept>> {
        let conn = Connection::open_with_flags(
            path,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        let tx = conn.unchecked_transaction()?;
        read_in(&tx, id, with_entries)
    };
    read().map_err(|source| Error::Sqlite {
        path: path.to_owned(),
        source,
    })
}

fn read_in(conn: &Connection, id: &str, with_entries: bool) -> rusqlite::Result<Option<Kept>> {
    let session = conn
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
    let mut reading = Reading::default();
    let mut rows =
        conn.prepare("SELECT first, last, lines FROM chunks WHERE session = ?1 ORDER BY first")?;
    let mut rows = rows.query(params![id])?;
    while with_entries && let Some(row) = rows.next()? {
        let (first, last): (i64, i64) = (row.get(0)?, row.get(1)?);
        let lines = decompress(row.get_ref(2)?);
        reading.chunk(id, first as u64, last as u64, lines.as_deref());
    }
    Ok(Some(reading.kept(own, &setup, closed != 0, lost as u64)))
}
