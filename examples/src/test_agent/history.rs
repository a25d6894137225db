//! The test agent's sessions: what each was set up with and what was said in it, kept in
//! memory and, with `--sessions DIR`, in `DIR/<session id>.jsonl` too, so that a later
//! process can load or resume them (as agents people run keep their threads on disk).
//!
//! A history is the list of `session/update`s the session's turns produced, the user's prompt
//! text included: `session/load` replays it as it was. It keeps a session's first
//! [`KEPT`] updates: enough for tests of loading and forking, while a turn that streams a
//! million chunks does not make the agent hold them all.

use std::collections::HashMap;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Mutex;

use sacp::acp::SessionUpdate;

use crate::lock::lock;

/// How many updates of a session a history keeps.
pub(crate) const KEPT: usize = 1000;

/// Every session the agent knows.
#[derive(Debug, Default)]
pub(crate) struct History {
    /// Where sessions are kept across processes, if anywhere.
    dir: Option<PathBuf>,
    sessions: Mutex<HashMap<String, Session>>,
}

/// One session.
#[derive(Debug, Clone, Default)]
pub(crate) struct Session {
    /// `cwd=… servers=…`: what `setup` says.
    pub(crate) setup: String,
    /// The session's working directory.
    pub(crate) cwd: String,
    /// What was said, in order.
    pub(crate) updates: Vec<SessionUpdate>,
}

impl History {
    /// Sessions kept in `dir` (made if need be) as well as in memory.
    pub(crate) fn on_disk(dir: PathBuf) -> History {
        if let Err(e) = std::fs::create_dir_all(&dir) {
            tracing::warn!("cannot keep sessions in {}: {e}", dir.display());
        }
        History {
            dir: Some(dir),
            ..History::default()
        }
    }

    /// A session id no session has had, in memory or on disk: `{prefix}{n}` for the smallest
    /// `n` from `*next` on.
    pub(crate) fn fresh_id(&self, prefix: &str, next: &std::sync::atomic::AtomicU64) -> String {
        loop {
            let n = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
            let id = format!("{prefix}{n}");
            let taken = lock(&self.sessions).contains_key(&id)
                || self.file(&id).is_some_and(|f| f.exists());
            if !taken {
                return id;
            }
        }
    }

    /// Starts (or restarts) a session.
    pub(crate) fn open(&self, id: &str, session: Session) {
        if let Some(file) = self.file(id) {
            let header = serde_json::json!({"setup": session.setup, "cwd": session.cwd});
            let mut text = format!("{header}\n");
            for update in &session.updates {
                text.push_str(&serde_json::to_string(update).unwrap_or_default());
                text.push('\n');
            }
            if let Err(e) = std::fs::write(&file, text) {
                tracing::warn!("cannot keep session {id} in {}: {e}", file.display());
            }
        }
        lock(&self.sessions).insert(id.to_owned(), session);
    }

    /// The session, from memory or from disk.
    pub(crate) fn get(&self, id: &str) -> Option<Session> {
        if let Some(session) = lock(&self.sessions).get(id) {
            return Some(session.clone());
        }
        let text = std::fs::read_to_string(self.file(id)?).ok()?;
        let mut lines = text.lines();
        let header: serde_json::Value = serde_json::from_str(lines.next()?).ok()?;
        let session = Session {
            setup: header["setup"].as_str()?.to_owned(),
            cwd: header["cwd"].as_str()?.to_owned(),
            updates: lines.filter_map(|l| serde_json::from_str(l).ok()).collect(),
        };
        lock(&self.sessions).insert(id.to_owned(), session.clone());
        Some(session)
    }

    /// Notes what was said in a session.
    pub(crate) fn said(&self, id: &str, update: &SessionUpdate) {
        let mut sessions = lock(&self.sessions);
        let Some(session) = sessions.get_mut(id) else {
            return;
        };
        if session.updates.len() >= KEPT {
            return;
        }
        session.updates.push(update.clone());
        drop(sessions);
        if let Some(file) = self.file(id) {
            let line = serde_json::to_string(update).unwrap_or_default();
            let appended = std::fs::OpenOptions::new()
                .append(true)
                .open(&file)
                .and_then(|mut f| writeln!(f, "{line}"));
            if let Err(e) = appended {
                tracing::warn!("cannot keep session {id} in {}: {e}", file.display());
            }
        }
    }

    /// Forgets a session (its file too).
    pub(crate) fn forget(&self, id: &str) {
        lock(&self.sessions).remove(id);
        if let Some(file) = self.file(id) {
            let _ = std::fs::remove_file(file);
        }
    }

    /// Every session in memory, by id.
    pub(crate) fn all(&self) -> Vec<(String, Session)> {
        let mut all: Vec<(String, Session)> = lock(&self.sessions)
            .iter()
            .map(|(id, s)| (id.clone(), s.clone()))
            .collect();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    }

    /// The file of session `id`; `None` without a directory, or for an id that is not a plain
    /// file name.
    fn file(&self, id: &str) -> Option<PathBuf> {
        let dir = self.dir.as_ref()?;
        let plain = !id.is_empty()
            && id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '@'))
            && !id.starts_with('.');
        plain.then(|| dir.join(format!("{id}.jsonl")))
    }
}
