//! One backend: its connection, its sessions (by its own ids, with the ids the editor sees),
//! and how it ended.

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use tokio::sync::Notify;

use super::{BackendProcess, Workspace};
use crate::lock::lock;
use sacp::jsonrpc::{Connection, Error};

/// A running backend.
pub(super) struct Backend {
    pub(super) workspace: Workspace,
    pub(super) conn: OnceLock<Connection>,
    pub(super) process: Box<dyn BackendProcess>,
    /// Its sessions: its own id → the editor's.
    pub(super) sessions: Mutex<HashMap<String, String>>,
    /// Changes whenever a session comes or goes (idle timers check it did not).
    pub(super) epoch: AtomicU64,
    /// How it ended, once it did.
    ended: OnceLock<String>,
    ended_news: Notify,
}

impl std::fmt::Debug for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Backend")
            .field("workspace", &self.workspace)
            .field("ended", &self.ended.get())
            .finish_non_exhaustive()
    }
}

impl Backend {
    pub(super) fn new(workspace: Workspace, process: Box<dyn BackendProcess>) -> Backend {
        Backend {
            workspace,
            conn: OnceLock::new(),
            process,
            sessions: Mutex::default(),
            epoch: AtomicU64::new(0),
            ended: OnceLock::new(),
            ended_news: Notify::new(),
        }
    }

    pub(super) fn conn(&self) -> Result<&Connection, Error> {
        self.conn
            .get()
            .ok_or_else(|| Error::internal_error("the backend is not connected yet"))
    }

    pub(super) fn sessions(&self) -> std::sync::MutexGuard<'_, HashMap<String, String>> {
        lock(&self.sessions)
    }

    pub(super) fn is_dead(&self) -> bool {
        self.ended.get().is_some()
    }

    /// Notes how it ended.
    pub(super) fn set_ended(&self, how: String) {
        let _ = self.ended.set(how);
        self.ended_news.notify_waiters();
    }

    /// The error of a backend that is alive but refused to start its work (its `initialize`
    /// failed): it names the backend, its workspace, and what it said.
    pub(super) fn failure_with(&self, error: &Error) -> Error {
        Error::internal_error(format!(
            "the backend of workspace {:?} (`{}`) refused to start: {}",
            self.workspace.name, self.workspace.command, error.message
        ))
        .with_data(serde_json::json!({
            "workspace": self.workspace.name,
            "root": self.workspace.root,
            "command": self.workspace.command,
        }))
    }

    /// The error its sessions' requests get once it ended: it names the backend and its
    /// workspace. Waits a little for the news of its end, which may come after the request
    /// failed.
    pub(super) async fn failure(&self) -> Error {
        let news = self.ended_news.notified();
        let how = match self.ended.get() {
            Some(how) => how.clone(),
            None => {
                let _ = tokio::time::timeout(Duration::from_secs(1), news).await;
                self.ended
                    .get()
                    .cloned()
                    .unwrap_or_else(|| "stopped answering".to_owned())
            }
        };
        Error::internal_error(format!(
            "the backend of workspace {:?} (`{}`) {how}",
            self.workspace.name, self.workspace.command
        ))
        .with_data(serde_json::json!({
            "workspace": self.workspace.name,
            "root": self.workspace.root,
            "command": self.workspace.command,
        }))
    }
}
