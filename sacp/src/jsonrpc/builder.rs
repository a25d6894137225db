//! [`Builder`]: configures a connection and starts its tasks — the reader (see the `reader`
//! module), the writer (see the `writer` module), and the one that says when both have ended.

use std::time::Duration;

use super::connection::{Connection, Limits};
use super::lanes::Lane;
use super::transport::Transport;
use super::{Handler, reader, writer};

/// Configures and starts a [`Connection`].
#[derive(Debug, Clone)]
pub struct Builder {
    name: String,
    default_timeout: Option<Duration>,
    limits: Limits,
    eof_grace: Option<Duration>,
}

impl Default for Builder {
    fn default() -> Self {
        Builder {
            name: "peer".into(),
            default_timeout: None,
            limits: Limits::default(),
            eof_grace: None,
        }
    }
}

impl Connection {
    /// Configures a new connection.
    pub fn builder() -> Builder {
        Builder::default()
    }
}

impl Builder {
    /// Names the peer in logs and errors (default `"peer"`).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// A timeout for every request sent on this connection (each request can set its own
    /// with [`PendingResponse::timeout`](super::PendingResponse::timeout)). Default: none.
    pub fn request_timeout(mut self, after: Duration) -> Self {
        self.default_timeout = Some(after);
        self
    }

    /// Sets every limit at once (the EOF grace is not a limit: it stays as it was).
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// See [`Limits::max_backlog`].
    pub fn max_backlog(mut self, messages: usize) -> Self {
        self.limits.max_backlog = messages.max(1);
        self
    }

    /// After the peer's stream ended, how long the requests it sent may still be handled before
    /// they are cancelled. `None` (a plain connection's default) waits for them; the proxy and
    /// agent runtimes use 250 ms.
    pub fn eof_grace(mut self, grace: Option<Duration>) -> Self {
        self.eof_grace = grace;
        self
    }

    /// The limits this builder will use.
    pub fn current_limits(&self) -> &Limits {
        &self.limits
    }

    /// The EOF grace this builder will use.
    pub fn current_eof_grace(&self) -> Option<Duration> {
        self.eof_grace
    }

    /// Starts the connection's tasks on the current Tokio runtime (call it from within one).
    pub fn spawn<T: Transport, H: Handler>(self, transport: T, handler: H) -> Connection {
        let (reader, writer) = transport.split();
        let (conn, queue) = Connection::new(
            self.name,
            self.limits,
            self.eof_grace,
            self.default_timeout,
            <H::Lane as Lane>::COUNT,
        );
        let reader = tokio::spawn(reader::run(reader, handler, conn.clone()));
        let writer = tokio::spawn(writer::run(writer, conn.clone(), queue));
        let done = conn.clone();
        tokio::spawn(async move {
            for (task, result) in [("reader", reader.await), ("writer", writer.await)] {
                if let Err(e) = result {
                    tracing::error!(peer = %done.name(), task, error = %e, "connection task failed");
                }
            }
            done.set_done();
        });
        conn
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn setting_the_limits_keeps_the_eof_grace() {
        let grace = Some(Duration::from_millis(250));
        let builder = Builder::default()
            .eof_grace(grace)
            .limits(Limits::default().max_in_flight(8));
        assert_eq!(builder.current_eof_grace(), grace);
        assert_eq!(builder.current_limits().max_in_flight, 8);
        // The roles' builders come with their grace, and keep it under new limits.
        let proxy = crate::proxy::builder().limits(Limits::default());
        assert_eq!(proxy.current_eof_grace(), grace);
    }
}
