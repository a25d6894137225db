//! Who holds a session: one conductor at a time, across every conductor sharing a journal.
//!
//! - **An instance** is one conductor process: a random 63-bit id, new at every start, and a
//!   name (`--instance`, the name a load balancer knows it by). A session's row in the store
//!   names its holder (`holder`, `holder_name`) and carries an **epoch**, a number the store
//!   raises at every takeover.
//! - **A lease that dies with its holder.** PostgreSQL: the instance holds an advisory lock
//!   keyed by its id on a connection of its own, so the lock ends with that connection — at
//!   once when the process dies, however it dies (the kernel closes its socket); within the
//!   keepalive time the conductor asks of the server (11 s) when its machine vanishes or is cut
//!   off. SQLite (several conductors of one machine on one file): the instance holds an
//!   exclusive `flock` on a file named by its id in a directory beside the journal
//!   (`journal.db.holders/`), which the kernel releases when the process dies.
//! - **A claim** (a `session/load`, `resume` or `attach` of a session not live here, or a
//!   `session/delete` of one only the journal has) reads the row, locked: a holder that is
//!   alive and not this conductor keeps it, and the claim answers who it is; otherwise (no
//!   holder, a holder whose lease is gone, or this conductor itself) the session is this
//!   conductor's, under a new epoch when it was someone else's or nobody's.
//! - **Fencing.** Every record the writer writes carries its session's epoch; the store
//!   refuses a record whose session it has under a newer epoch — the writer checks the rows it
//!   writes to, locked, in the write's own transaction, and a trigger on the chunks table
//!   refuses such a row whatever the writer did — and the writer tells the session layer,
//!   which tells the session's clients and ends the session here ([`Deposed`]).
//! - A session that ends here without being closed (its chain ended, or nobody took it back)
//!   is released: its row names no holder, and the next claim anywhere takes it.

use std::fs::File;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use super::{Error, Kept};

/// This conductor, as the journal's rows name their holders.
#[derive(Debug, Clone)]
pub(crate) struct Instance {
    /// Random, new at every start (a restarted conductor is a new holder).
    pub(crate) id: i64,
    /// What a client is told when it asks another conductor for a session this one holds.
    pub(crate) name: String,
}

impl Instance {
    pub(crate) fn new(name: impl Into<String>) -> Instance {
        let (high, low) = uuid::Uuid::new_v4().as_u64_pair();
        // Positive and never 0: a 63-bit random number.
        let id = ((high ^ low) >> 1).max(1) as i64;
        Instance {
            id,
            name: name.into(),
        }
    }
}

/// What a claim found.
#[derive(Debug)]
pub(crate) enum Claim {
    /// The journal has no such session (or only a row that never began).
    Unknown,
    /// The session was closed (`with_parent`: because the session it was a subagent of was).
    Closed { with_parent: bool },
    /// A live conductor holds it: its name.
    Held { by: String },
    /// It is this conductor's now, under `epoch`, with what the journal kept of it.
    Taken { kept: Kept, epoch: u64 },
}

/// A session whose records the store refused: another conductor took it over (`held_by`, when
/// the store knows who).
#[derive(Debug, Clone)]
pub(crate) struct Deposed {
    pub(crate) id: String,
    /// The epoch of the refused records: a session here under a newer one was not deposed.
    pub(crate) epoch: u64,
    pub(crate) held_by: Option<String>,
}

/// A session's row as a claim reads it, locked.
#[derive(Debug)]
pub(super) struct Row {
    pub(super) holder: Option<i64>,
    pub(super) holder_name: Option<String>,
    pub(super) epoch: u64,
    pub(super) closed: bool,
    /// Its `setup`: `null` for a row made by a claim of a session that never began.
    pub(super) setup: String,
}

/// What a claim does with a row.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Decision {
    Unknown,
    Closed {
        with_parent: bool,
    },
    Held {
        by: String,
    },
    /// This conductor holds it already: the epoch stays.
    Ours {
        epoch: u64,
    },
    /// Nobody holds it (or a holder that is gone): taken, under the next epoch.
    Take {
        epoch: u64,
    },
}

/// Decides a claim of `row` by `me`; `alive(holder)` says whether another holder's lease
/// lives.
pub(super) fn decide(
    row: Option<&Row>,
    me: &Instance,
    alive: impl FnOnce(i64) -> Result<bool, Error>,
) -> Result<Decision, Error> {
    let Some(row) = row else {
        return Ok(Decision::Unknown);
    };
    if row.closed {
        let with_parent = serde_json::from_str::<serde_json::Value>(&row.setup)
            .is_ok_and(|setup| setup["ended"] == "parent");
        return Ok(Decision::Closed { with_parent });
    }
    match row.holder {
        Some(holder) if holder == me.id => Ok(Decision::Ours { epoch: row.epoch }),
        Some(holder) if alive(holder)? => Ok(Decision::Held {
            by: row
                .holder_name
                .clone()
                .unwrap_or_else(|| format!("instance {holder}")),
        }),
        _ => Ok(Decision::Take {
            epoch: row.epoch + 1,
        }),
    }
}

/// The directory of the lock files of the conductors sharing the SQLite journal `db`.
pub(super) fn holders_dir(db: &Path) -> PathBuf {
    let mut name = db.file_name().unwrap_or_default().to_os_string();
    name.push(".holders");
    db.with_file_name(name)
}

/// A conductor's lease on a SQLite journal: an exclusive `flock` on its own file, which ends
/// with the process (and the file with a clean end).
#[derive(Debug)]
pub(super) struct LockFile {
    _file: File,
    path: PathBuf,
}

impl LockFile {
    /// Takes `id`'s lock in `dir` (made `0700` if need be). The file is locked before it has
    /// its name, so a conductor that finds it finds it locked.
    pub(super) fn take(dir: &Path, id: i64) -> Result<LockFile, Error> {
        let fail = |what: &str, e| Error::io(format!("{what} {}", dir.display()), e);
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| fail("cannot create the journal's holders' directory", e))?;
        let hidden = dir.join(format!(".{id}.{}", std::process::id()));
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .mode(0o600)
            .open(&hidden)
            .map_err(|e| fail("cannot create a lock file in", e))?;
        file.try_lock()
            .map_err(|e| fail("cannot lock a file in", std::io::Error::other(e)))?;
        let path = dir.join(id.to_string());
        std::fs::rename(&hidden, &path).map_err(|e| fail("cannot name a lock file in", e))?;
        Ok(LockFile { _file: file, path })
    }
}

impl Drop for LockFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Whether the conductor `holder` of the SQLite journal whose holders are in `dir` lives: its
/// file is there, locked. A file nobody locks is a dead conductor's, and goes.
pub(super) fn alive_in(dir: &Path, holder: i64) -> bool {
    let path = dir.join(holder.to_string());
    let Ok(file) = File::open(&path) else {
        return false;
    };
    match file.try_lock_shared() {
        Ok(()) => {
            let _ = std::fs::remove_file(&path);
            false
        }
        Err(std::fs::TryLockError::WouldBlock) => true,
        // Cannot tell: it counts as alive, so that a session never runs twice.
        Err(std::fs::TryLockError::Error(e)) => {
            tracing::warn!(
                holder,
                "cannot tell whether the journal's holder lives: {e}"
            );
            true
        }
    }
}

/// Whether any conductor holds a lease in `dir`.
pub(super) fn any_alive(dir: &Path) -> bool {
    let Ok(files) = std::fs::read_dir(dir) else {
        return false;
    };
    files
        .flatten()
        .filter_map(|f| f.file_name().to_str()?.parse::<i64>().ok())
        .any(|holder| alive_in(dir, holder))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(holder: Option<i64>, epoch: u64, closed: bool, setup: &str) -> Row {
        Row {
            holder,
            holder_name: holder.map(|h| format!("c{h}")),
            epoch,
            closed,
            setup: setup.into(),
        }
    }

    #[test]
    fn a_claim_takes_what_nobody_living_holds_and_names_who_does() {
        let me = Instance {
            id: 7,
            name: "me".into(),
        };
        let never = |_| -> Result<bool, Error> { panic!("nobody to ask about") };
        assert_eq!(decide(None, &me, never).unwrap(), Decision::Unknown);
        let closed = row(Some(3), 4, true, r#"{"ended":"parent"}"#);
        assert_eq!(
            decide(Some(&closed), &me, never).unwrap(),
            Decision::Closed { with_parent: true }
        );
        let mine = row(Some(7), 4, false, "{}");
        assert_eq!(
            decide(Some(&mine), &me, never).unwrap(),
            Decision::Ours { epoch: 4 }
        );
        let theirs = row(Some(3), 4, false, "{}");
        assert_eq!(
            decide(Some(&theirs), &me, |h| Ok(h == 3)).unwrap(),
            Decision::Held { by: "c3".into() }
        );
        assert_eq!(
            decide(Some(&theirs), &me, |_| Ok(false)).unwrap(),
            Decision::Take { epoch: 5 }
        );
        let released = row(None, 4, false, "{}");
        assert_eq!(
            decide(Some(&released), &me, never).unwrap(),
            Decision::Take { epoch: 5 }
        );
    }

    #[test]
    fn a_lock_file_says_its_conductor_lives_until_it_is_dropped() {
        let dir = std::env::temp_dir().join(format!("sacp-holders-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let lock = LockFile::take(&dir, 42).unwrap();
        assert!(alive_in(&dir, 42));
        assert!(!alive_in(&dir, 43));
        drop(lock);
        assert!(!alive_in(&dir, 42));
        // A file left by a conductor that died (nobody locks it) says it is gone, and goes.
        std::fs::write(dir.join("44"), "").unwrap();
        assert!(!alive_in(&dir, 44));
        assert!(!dir.join("44").exists());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
