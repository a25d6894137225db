//! [`Failure`]: why the conductor itself failed ([`Exit::Failed`](super::Exit::Failed)), as
//! a cause a caller can match; its message is what the conductor prints.

use std::path::PathBuf;
use std::sync::Arc;

/// Why the conductor failed (as opposed to a component ending the chain).
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Failure {
    /// The trace file (`--trace`) could not be created.
    #[error("cannot create the trace file {}: {source}", path.display())]
    Trace {
        /// The file.
        path: PathBuf,
        /// Why.
        source: Arc<std::io::Error>,
    },
    /// A component could not be started: its program, or its server over the network.
    #[error(
        "cannot start component {position} ({name:?}{}): {source}",
        command.as_deref().map(|c| format!(", `{c}`")).unwrap_or_default()
    )]
    Start {
        /// Its 1-based position in the chain.
        position: usize,
        /// Its name.
        name: String,
        /// Its command line (none for a server over the network).
        command: Option<String>,
        /// Why.
        source: Arc<std::io::Error>,
    },
    /// A component refused the chain (a proxy that did not accept the proxy capability, or
    /// refused the editor's protocol version): the error the editor was given.
    #[error("{message}")]
    Refused {
        /// Its 1-based position in the chain.
        position: usize,
        /// What it said, or what the conductor says of its refusal.
        message: String,
    },
    /// A registry agent of the chain (`registry:ID`) could not be resolved: the registry, the
    /// agent, its archive.
    #[error("{0}")]
    Registry(Arc<crate::registry::Error>),
    /// The conductor could not listen for `SIGTERM` and `SIGINT`.
    #[error("cannot listen for signals: {0}")]
    Signals(Arc<std::io::Error>),
    /// Serving the chain over the network (`--listen`) could not start or stopped: the token
    /// file, the TLS certificate, the address, the server.
    #[error("{0}")]
    Serve(String),
    /// The conductor's event loop itself failed (a panic in it).
    #[error("the conductor's event loop failed: {0}")]
    Loop(String),
}

/// Two failures are equal when they say the same (their I/O errors have no equality of their
/// own).
impl PartialEq for Failure {
    fn eq(&self, other: &Failure) -> bool {
        std::mem::discriminant(self) == std::mem::discriminant(other)
            && self.to_string() == other.to_string()
    }
}

impl Eq for Failure {}
