//! A session router: one ACP agent for the editor that runs every session on an agent process
//! of the session's own workspace (a *backend*).
//!
//! The editor sees one agent. [`serve()`] answers `initialize` itself, from its configuration
//! ([`Config::capabilities`], ACP v1), as the design has it ("respond with proxy capabilities,
//! cache for forwarding to agents later"): no backend starts for it, since a backend runs for a
//! workspace and may only be able to run there (`docker exec -i ws-{workspace} …`). For each
//! `session/new` it picks the workspace of its `cwd` ([`Config::workspace_for`]), starts that
//! workspace's backend through a [`Launcher`] (or reuses it: one process per workspace),
//! replays the editor's `initialize` (and `authenticate`, if it came) to it, translates
//! the paths (`cwd`, stdio MCP servers' `command`, `args` and `cwd`) from the host's to the
//! backend's, and keeps the session → backend table. Then:
//!
//! - every message of the editor with a `sessionId` goes to its session's backend
//!   (`session/prompt`, `session/cancel`, `session/set_mode`, `session/load`, and methods the
//!   router does not know), and everything a backend sends (updates, permission and file
//!   requests, …) comes back to the editor;
//! - every session is learned wherever its id is born — `session/new`, `session/fork`, a
//!   `session/load` or `session/resume` of an id from an earlier router, a subagent announced
//!   in a `subagent_update`, a `session/list` entry, any other result or message naming a new
//!   id — and its id is rewritten both ways wherever session ids travel (the top-level
//!   `sessionId` of params and results, a subagent's `update.sessionId`, a session message's
//!   sender and recipient, `session/list` entries);
//! - the ids the editor sees are `<backend's id>@<workspace>`: unique across backends (agents
//!   number their sessions alike), the same in every router process, read back with the
//!   workspace a `session/load`'s `cwd` names, and never handed out twice by one router (see
//!   `ids.rs`); closing a session forgets its subagents too;
//! - `session/list` merges every live backend's sessions; `authenticate` goes to every live
//!   backend;
//! - backends run side by side: one session's turn never waits for another's, and each
//!   backend's updates reach the editor before its answers, in order;
//! - a backend ends when its last session is closed or deleted (`session/close`,
//!   `session/delete`), after [`Config::idle_timeout`] without sessions, and when the editor
//!   closes the connection; one that crashes fails its sessions' requests with an error that
//!   names it and its workspace, and the next `session/new` there starts a fresh one; one that
//!   cannot start — or does not answer the replayed `initialize` within
//!   [`Config::start_timeout`] — fails that `session/new` with an error naming the workspace,
//!   the command and what did not answer, and the router goes on serving the others (their
//!   workspaces never wait for it).
//!
//! The process side — starting commands, process groups, how a process ended — is the
//! [`Launcher`]'s: `conductor route` has one, which also reaches backends that are ACP servers
//! over the network (a template that is a URL, `ws://{workspace}.devbox:8080/acp`).

mod backend;
mod config;
mod ids;
mod rewrite;
mod serve;
mod table;

pub use self::config::{Config, PathMap, Rule, Workspace};
pub use self::serve::serve;

use std::future::Future;
use std::pin::Pin;

use sacp::jsonrpc::{ByteStream, Either, Error};
use sacp::remote::RemoteTransport;

/// The byte streams of a backend (its stdout, its stdin).
pub type BackendStream = ByteStream<
    Box<dyn tokio::io::AsyncRead + Send + Unpin>,
    Box<dyn tokio::io::AsyncWrite + Send + Unpin>,
>;

/// How the router reaches a backend: the byte streams of a process (`Either::Left`), or ACP's
/// remote transport to a server (`Either::Right`: a backend template that is a `ws://`,
/// `wss://`, `http://` or `https://` URL).
pub type BackendTransport = Either<BackendStream, RemoteTransport>;

/// A started backend: its connection, and how to end it.
pub struct Launched {
    /// The transport to the backend (say, its stdout and stdin).
    pub transport: BackendTransport,
    /// The backend's process.
    pub process: Box<dyn BackendProcess>,
}

impl std::fmt::Debug for Launched {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Launched").finish_non_exhaustive()
    }
}

/// What the router needs of a backend's process.
pub trait BackendProcess: Send + Sync + 'static {
    /// Ends it (and whatever it started).
    fn stop(&self);
    /// How it ended, once it did (waits a little for the news): "exited with status 3".
    fn ended(&self) -> Pin<Box<dyn Future<Output = String> + Send + '_>>;
}

/// Starts backends.
pub trait Launcher: Send + Sync + 'static {
    /// Starts the backend of `workspace` (its command is [`Workspace::command`]).
    fn launch(
        &self,
        workspace: &Workspace,
    ) -> Pin<Box<dyn Future<Output = Result<Launched, BackendError>> + Send + '_>>;
}

/// Why a workspace's backend could not be had: what a [`Launcher`] says, and what the
/// editor's `session/new` there is answered with (`-32602` for a command that is not one,
/// `-32603` otherwise; the message is this error's).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BackendError {
    /// The workspace's command is not a command line.
    #[error("the backend command of workspace {workspace:?}: {why}")]
    Command {
        /// The workspace.
        workspace: String,
        /// What is wrong with the command.
        why: crate::ChainError,
    },
    /// Its process could not be started.
    #[error("cannot start the backend of workspace {workspace:?} (`{command}`): {source}")]
    Start {
        /// The workspace.
        workspace: String,
        /// The command.
        command: String,
        /// Why.
        source: std::io::Error,
    },
    /// Its server (a backend that is a URL) could not be reached.
    #[error("cannot reach the backend of workspace {workspace:?}: {source}")]
    Unreachable {
        /// The workspace.
        workspace: String,
        /// Why (the URL, without credentials, is in the message).
        source: std::io::Error,
    },
    /// Anything else a launcher of your own has to say.
    #[error("{0}")]
    Other(String),
}

impl From<BackendError> for Error {
    fn from(e: BackendError) -> Error {
        match e {
            BackendError::Command { .. } => Error::invalid_params(e.to_string()),
            _ => Error::internal_error(e.to_string()),
        }
    }
}
