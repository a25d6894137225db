//! The router's sessions: the session layer's table ([`crate::sessions::table`]), whose
//! chains are backends, with the router's way of naming them (see [`super::ids`]).
//!
//! A session enters it wherever its id is born — a result or a message of a backend that
//! names an id the table does not have (`session/new`, `session/fork`, a subagent's
//! announcement, a `session/list` entry) — or when the editor loads or resumes an id it kept.
//! Each backend hears how many sessions it has, whenever that changes.

use std::sync::Arc;

use super::backend::Backend;
use super::ids::{Given, tag};
use crate::sessions::table;

/// One session: its backend, and the backend's own id of it.
pub(super) type Entry = table::Entry<Backend, ()>;

/// Every session, by the editor's id.
#[derive(Debug, Default)]
pub(super) struct Table {
    sessions: table::Table<Backend, ()>,
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
        if let Some(id) = self.sessions.id_of(backend, own) {
            return id.to_owned();
        }
        let id = self.given.name(own, &tag(&backend.workspace.name));
        self.enter(id.clone(), backend, own, parent.map(str::to_owned));
        id
    }

    /// Takes in a session the editor loads or resumes by the id `id` it kept: `backend`'s
    /// session `own`. No other session will be given `id`.
    pub(super) fn adopt(&mut self, id: &str, backend: &Arc<Backend>, own: &str) {
        self.given.keep(id);
        self.enter(id.to_owned(), backend, own, None);
    }

    fn enter(&mut self, id: String, backend: &Arc<Backend>, own: &str, parent: Option<String>) {
        let displaced = self
            .sessions
            .insert(id, backend, own.to_owned(), parent, ());
        self.counted(backend);
        for old in displaced {
            if !Arc::ptr_eq(&old.chain, backend) {
                self.counted(&old.chain);
            }
        }
    }

    /// Tells `backend` how many sessions it has now.
    fn counted(&self, backend: &Arc<Backend>) -> usize {
        let left = self.sessions.count(backend);
        backend.sessions_changed(left);
        left
    }

    /// Forgets the sessions of a backend that ended (their ids stay given: the editor may
    /// still send them, and they must not name another session).
    pub(super) fn forget_backend(&mut self, backend: &Arc<Backend>) {
        self.sessions.forget_chain(backend);
        self.counted(backend);
    }

    /// Forgets session `id` and its subagents (theirs too, at any depth). Returns each backend
    /// that lost a session, with how many it has left.
    pub(super) fn close(&mut self, id: &str) -> Vec<(Arc<Backend>, usize)> {
        let mut touched: Vec<(Arc<Backend>, usize)> = Vec::new();
        for entry in self.sessions.close(id) {
            if !touched.iter().any(|(b, _)| Arc::ptr_eq(b, &entry.chain)) {
                touched.push((entry.chain, 0));
            }
        }
        for (backend, left) in &mut touched {
            *left = self.counted(backend);
        }
        touched
    }

    /// The backends with a session, each once.
    pub(super) fn backends(&self) -> Vec<Arc<Backend>> {
        self.sessions.chains()
    }
}
