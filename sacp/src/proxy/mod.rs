//! Proxies: components that sit between a client and a successor, in a chain run by a conductor.
//!
//! A proxy talks only to its conductor, over one connection (stdio when it runs as a process).
//! Messages from its **client** arrive as they are; messages from its **successor** arrive
//! wrapped in `_proxy/successor/request|notification`, and so do messages it sends downstream.
//! This module does all of that, so that a proxy is just the handlers it wants:
//!
//! ```no_run
//! use sacp::acp::{ContentBlock, PromptRequest, PromptResponse, TextContent};
//! use sacp::proxy::Cx;
//!
//! /// Adds a line to every prompt before the agent sees it.
//! struct Reminder;
//!
//! #[sacp::proxy]
//! impl Reminder {
//!     #[on_request]
//!     async fn prompt(&mut self, mut req: PromptRequest, cx: &Cx) -> sacp::Result<PromptResponse> {
//!         req.prompt.push(ContentBlock::Text(TextContent::new("Be brief.")));
//!         cx.successor().request(req).await
//!     }
//! }
//!
//! #[tokio::main]
//! async fn main() -> sacp::Result<()> {
//!     sacp::proxy::serve_stdio(Reminder).await
//! }
//! ```
//!
//! What the runtime does for every proxy:
//! - **Handshake**: `initialize` must offer the proxy capability (`_meta.proxy: true`); without
//!   it the proxy answers with a clear error. The offer is removed, `initialize` goes on to the
//!   successor (through a handler for it, if there is one), and the answer says
//!   `_meta.proxy: true`.
//! - **Default forwarding**: every message no handler takes goes on unchanged — requests and
//!   notifications from the client to the successor, and from the successor to the client —
//!   with responses relayed back. Its params are moved as bytes, never parsed.
//! - **Order**: messages are handled and forwarded in the order they arrive. Handlers run one at
//!   a time (they have `&mut self`): while one waits — for its successor, say — the messages
//!   that other handlers take wait for it, but messages no handler takes are forwarded at once.
//!   So a handler that awaits its successor's answer to a prompt does not hold back the
//!   `session/update`s streamed before that answer, and they reach the client first.
//!
//! A handler returning `Err` answers the request with that error (a notification handler's
//! error is logged: notifications are never answered).

mod cx;
pub mod envelope;
pub mod handshake;
pub(crate) mod runtime;

pub use self::cx::Cx;
pub use crate::incoming::{Incoming, Reply};
pub use crate::peer::Peer;

use std::future::Future;

use crate::acp::Side;
use crate::jsonrpc::{ByteStream, Connection, Error, Transport};

/// A proxy: the handlers it has, and how to call them. Written by `#[sacp::proxy]`.
///
/// [`Proxy::takes`] says which messages [`Proxy::dispatch`] handles, before it is called: the
/// runtime forwards everything else itself without waiting for the proxy's handlers.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a proxy",
    note = "write `#[sacp::proxy]` on an `impl {Self}` block (an empty one forwards everything)"
)]
pub trait Proxy: Send + 'static {
    /// Whether [`Proxy::dispatch`] handles messages of `method` sent from `from`.
    fn takes(method: &str, from: Side) -> bool;

    /// Handles one message that [`Proxy::takes`]; anything it does not answer after all is
    /// forwarded by [`Incoming`]'s default path.
    fn dispatch(&mut self, message: Incoming, cx: &Cx) -> impl Future<Output = ()> + Send;
}

/// Runs `proxy` on a transport to its conductor until the conductor closes the connection.
pub async fn serve<P: Proxy>(proxy: P, transport: impl Transport) -> Result<(), Error> {
    let conn = spawn(proxy, transport);
    let why = conn.closed().await;
    tracing::debug!(%why, "the conductor connection ended");
    Ok(())
}

/// Runs `proxy` on stdin/stdout, as a component process of a conductor's chain.
pub async fn serve_stdio<P: Proxy>(proxy: P) -> Result<(), Error> {
    serve(proxy, ByteStream::stdio()).await
}

/// Starts `proxy` on a transport and returns the connection to the conductor (for in-process
/// chains and tests; [`Connection::closed`] says when it ended).
pub fn spawn<P: Proxy>(proxy: P, transport: impl Transport) -> Connection {
    Connection::builder()
        .name("conductor")
        .spawn(transport, runtime::ProxyHandler::new(proxy))
}
