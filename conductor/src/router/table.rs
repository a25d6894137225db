//! The router's session table: every session the editor knows, by the id the editor knows it
//! by, with its backend, the backend's own id, and its parent (a subagent's session).
//!
//! A session enters the table wherever its id is born — a result or a message of a backend
//! that names an id the table does not have (`session/new`, `session/fork`, a subagent's
//! announcement, a `session/list` entry) — or when the editor loads or resumes an id it kept.
//! Each backend keeps the other direction (its own id → the editor's); the table changes both
//! under its one lock, so that two messages introducing the same id cannot name it twice.

use std::collections::HashMap;
use std::sync::Arc;

use super::backend::Backend;
use super::ids::{Given, tag};

/// One session.
#[derive(Debug, Clone)]
pub(super) struct Entry {
    pub(super) backend: Arc<Backend>,
    /// The backend's own id of it.
    pub(super) own: String,
    /// The session that announced it as a subagent, if one did.
    pub(super) parent: Option<String>,
}

/// Every session, by the editor's id.
#[derive(Debug, Default)]
pub(super) struct Table {
    sessions: HashMap<String, Entry>,
    given: Given,
}

impl Table {
    /// The session the editor calls `id`.
    pub(super) fn get(&self, id: &str) -> Option<&Entry> {
        self.sessions.get(id)
    }

    /// The editor's id of `backend`'s session `own`: the one it has, or a new one (see
    /// [`super::ids`]) for a session born just now, a child of `parent` if given.
    pub(super) fn learn(
        &mut self,
        backend: &Arc<Backend>,
        own: &str,
        parent: Option<&str>,
    ) -> String {
        if let Some(id) = backend.sessions().get(own) {
            return id.clone();
        }
        let id = self.given.name(own, &tag(&backend.workspace.name));
        self.enter(id.clone(), backend, own, parent.map(str::to_owned));
        id
    }

    /// Takes in a session the editor loads or resumes by the id `id` it kept: `backend`'s
    /// session `own`. No other session will be given `id`.
    pub(super) fn adopt(&mut self, id: &str, backend: &Arc<Backend>, own: &str) {
        self.given.keep(id);
        if let Some(old) = self.sessions.get(id) {
            old.backend.sessions().remove(&old.own);
        }
        self.enter(id.to_owned(), backend, own, None);
    }

    fn enter(&mut self, id: String, backend: &Arc<Backend>, own: &str, parent: Option<String>) {
        backend.sessions().insert(own.to_owned(), id.clone());
        backend.sessions_changed();
        self.sessions.insert(
            id,
            Entry {
                backend: backend.clone(),
                own: own.to_owned(),
                parent,
            },
        );
    }

    /// Forgets the sessions of a backend that ended (their ids stay given: the editor may
    /// still send them, and they must not name another session).
    pub(super) fn forget_backend(&mut self, backend: &Arc<Backend>) {
        self.sessions
            .retain(|_, e| !Arc::ptr_eq(&e.backend, backend));
    }

    /// Forgets session `id` and its subagents (theirs too, at any depth). Returns each backend
    /// that lost a session, with how many it has left.
    pub(super) fn close(&mut self, id: &str) -> Vec<(Arc<Backend>, usize)> {
        let mut closing = vec![id.to_owned()];
        let mut i = 0;
        while i < closing.len() {
            let parent = closing[i].clone();
            closing.extend(
                self.sessions
                    .iter()
                    .filter(|(_, e)| e.parent.as_deref() == Some(parent.as_str()))
                    .map(|(child, _)| child.clone()),
            );
            i += 1;
        }
        let mut touched: Vec<(Arc<Backend>, usize)> = Vec::new();
        for id in closing {
            let Some(entry) = self.sessions.remove(&id) else {
                continue;
            };
            let left = {
                let mut sessions = entry.backend.sessions();
                sessions.remove(&entry.own);
                sessions.len()
            };
            entry.backend.sessions_changed();
            match touched
                .iter_mut()
                .find(|(b, _)| Arc::ptr_eq(b, &entry.backend))
            {
                Some(seen) => seen.1 = left,
                None => touched.push((entry.backend, left)),
            }
        }
        touched
    }

    /// The backends with a session, each once.
    pub(super) fn backends(&self) -> Vec<Arc<Backend>> {
        let mut seen: Vec<Arc<Backend>> = Vec::new();
        for entry in self.sessions.values() {
            if !seen.iter().any(|b| Arc::ptr_eq(b, &entry.backend)) {
                seen.push(entry.backend.clone());
            }
        }
        seen
    }
}
