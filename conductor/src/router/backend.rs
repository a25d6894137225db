//! One backend: its connection, how many sessions it has (the router's table has them), and
//! how it ended.

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
    /// Who is about to use it, and whether it was retired: the one place where handing it
    /// out and stopping it for want of use are decided, so neither can overtake the other.
    usage: Mutex<Usage>,
    /// How it ended, once it did.
    ended: OnceLock<String>,
    ended_news: Notify,
}

/// See [`Backend::claim`].
#[derive(Debug, Default)]
struct Usage {
    /// Requests under way that may give it a session.
    claims: usize,
    /// Changes whenever a claim or a session comes or goes (idle timers check it did not).
    epoch: u64,
    /// How many sessions it has.
    sessions: usize,
    /// Chosen to stop: it gets no new work.
    retired: bool,
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
            usage: Mutex::default(),
            ended: OnceLock::new(),
            ended_news: Notify::new(),
        }
    }

    pub(super) fn conn(&self) -> Result<&Connection, Error> {
        self.conn
            .get()
            .ok_or_else(|| Error::internal_error("the backend is not connected yet"))
    }

    /// Ended, or retired and on its way out: no new work goes to it.
    pub(super) fn is_dead(&self) -> bool {
        self.ended.get().is_some() || lock(&self.usage).retired
    }

    /// Claims it for a request that may give it a session (`session/new`, `session/load`):
    /// until the claim is released it is not retired. `None` once it is retired or ended.
    pub(super) fn claim(&self) -> Option<u64> {
        let mut usage = lock(&self.usage);
        if usage.retired || self.ended.get().is_some() {
            return None;
        }
        usage.claims += 1;
        usage.epoch += 1;
        Some(usage.epoch)
    }

    /// Ends a claim. Returns the epoch to check for idleness when it left the backend with
    /// neither a claim nor a session.
    pub(super) fn release(&self) -> Option<u64> {
        let mut usage = lock(&self.usage);
        usage.claims -= 1;
        usage.epoch += 1;
        (usage.claims == 0 && usage.sessions == 0).then_some(usage.epoch)
    }

    /// Notes that a session came or went: it has `sessions` now.
    pub(super) fn sessions_changed(&self, sessions: usize) {
        let mut usage = lock(&self.usage);
        usage.sessions = sessions;
        usage.epoch += 1;
    }

    /// Retires it if nobody claims it, it has no session, and (with `since`) nothing changed
    /// since that epoch. Returns whether it did; the caller then stops it.
    pub(super) fn retire_if_unused(&self, since: Option<u64>) -> bool {
        let mut usage = lock(&self.usage);
        let unused = !usage.retired
            && usage.claims == 0
            && since.is_none_or(|epoch| epoch == usage.epoch)
            && usage.sessions == 0;
        if unused {
            usage.retired = true;
        }
        unused
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
            self.workspace.name,
            self.workspace.shown_command(),
            error.message
        ))
        .with_data(serde_json::json!({
            "workspace": self.workspace.name,
            "root": self.workspace.root,
            "command": self.workspace.shown_command(),
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
            self.workspace.name,
            self.workspace.shown_command()
        ))
        .with_data(serde_json::json!({
            "workspace": self.workspace.name,
            "root": self.workspace.root,
            "command": self.workspace.shown_command(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::future::Future;
    use std::pin::Pin;

    /// A process that is never asked anything here: these tests are about the bookkeeping.
    struct Idle;

    impl BackendProcess for Idle {
        fn stop(&self) {}
        fn ended(&self) -> Pin<Box<dyn Future<Output = String> + Send + '_>> {
            Box::pin(std::future::pending())
        }
    }

    fn backend() -> Backend {
        Backend::new(
            Workspace {
                root: "/w".into(),
                name: "w".into(),
                command: "agent".into(),
                paths: None,
            },
            Box::new(Idle),
        )
    }

    #[test]
    fn a_claimed_backend_is_not_retired_and_a_retired_one_is_not_claimed() {
        let backend = backend();
        let epoch = backend.claim().expect("a fresh backend can be claimed");
        assert!(!backend.retire_if_unused(None), "retired while claimed");
        assert!(
            !backend.retire_if_unused(Some(epoch)),
            "retired while claimed"
        );
        let idle_since = backend.release().expect("unused once released");
        // A claim in between makes the idle check of that moment void.
        backend.claim().unwrap();
        assert_eq!(backend.release(), Some(idle_since + 2));
        assert!(
            !backend.retire_if_unused(Some(idle_since)),
            "a stale idle check"
        );
        assert!(backend.retire_if_unused(Some(idle_since + 2)));
        assert!(backend.is_dead());
        assert_eq!(backend.claim(), None, "a retired backend was handed out");
    }

    #[test]
    fn a_backend_with_a_session_is_not_retired() {
        let backend = backend();
        backend.claim().unwrap();
        backend.sessions_changed(1);
        assert_eq!(backend.release(), None, "idle with a session");
        assert!(!backend.retire_if_unused(None));
        backend.sessions_changed(0);
        assert!(backend.retire_if_unused(None));
    }
}
