//! Proxies: components that sit between a client and a successor, in a chain run by a conductor.
//!
//! A proxy talks only to its conductor, over one connection (stdio when it runs as a process).
//! Messages from its **client** arrive as they are; messages from its **successor** arrive
//! wrapped in `_proxy/successor/request|notification`, and so do messages it sends downstream.
//! This module does all of that, so that a proxy is just the handlers it wants:
//!
//! ```no_run
//! use std::sync::atomic::{AtomicU64, Ordering};
//!
//! use sacp::acp::{ContentBlock, PromptRequest, PromptResponse, TextContent};
//! use sacp::proxy::Cx;
//!
//! /// Adds a line to every prompt before the agent sees it, and counts the prompts.
//! #[derive(Default)]
//! struct Reminder {
//!     prompts: AtomicU64,
//! }
//!
//! #[sacp::proxy]
//! impl Reminder {
//!     #[on_request]
//!     async fn prompt(&self, mut req: PromptRequest, cx: &Cx) -> sacp::Result<PromptResponse> {
//!         self.prompts.fetch_add(1, Ordering::Relaxed);
//!         req.prompt.push(ContentBlock::Text(TextContent::new("Be brief.")));
//!         cx.successor().request(req).await
//!     }
//! }
//!
//! #[tokio::main]
//! async fn main() -> sacp::Result<()> {
//!     sacp::proxy::serve_stdio(Reminder::default()).await
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
//!   with responses relayed back. Its params are moved as bytes, never parsed. Cancelling a
//!   forwarded request (`$/cancel_request`) cancels it downstream.
//! - **Concurrency**: handlers take `&self` and run concurrently. A request handler runs in a
//!   task of its own, so while a prompt handler awaits its successor, the agent's permission
//!   requests, tool calls and updates — and every other session — go on. Keep state behind a
//!   `Mutex`, atomics or another type with interior mutability.
//! - **Order**: what comes from one side is dealt with in arrival order: notification handlers
//!   of a side run one after another, a request handler starts after what came before it, and
//!   forwarding keeps its place. An answer keeps its place in its peer's stream both ways: when
//!   a handler's `cx.successor().request(..).await` returns, the updates the agent streamed
//!   before its response have all been forwarded or handled, and the ones it streamed after
//!   the response wait until the handler next waits for something else (other than room to
//!   send) — so an answer the handler sends on, changed or not, goes out between the two, as
//!   the agent sent it. (A handler that awaits something else before answering lets them go
//!   on meanwhile: holding them would hold up every other session.)
//! - **Bounded memory**: `notify` waits while the conductor reads too slowly, and so does
//!   forwarding, which makes the proxy stop reading: a slow editor slows the agent down
//!   instead of filling memory. Limits are set with [`spawn_with`]
//!   ([`Limits`](crate::jsonrpc::Limits)).
//! - **MCP servers**: the servers a proxy gives agents — its `#[tool]` methods, attached `rmcp`
//!   servers — are served by this runtime too (see [`crate::mcp`]).
//! - **The end**: when the conductor closes the connection, the requests still being handled
//!   get a short grace (250 ms) to finish, then are cancelled, and [`serve`] returns.
//!
//! A handler returning `Err` answers the request with that error (any error type that converts
//! into [`sacp::Error`](crate::Error)); a notification handler's error is logged, since
//! notifications are never answered.

mod cx;
mod idle;
pub(crate) mod mcp_servers;
mod runtime;

pub use self::cx::{Cx, META_KEY};
pub use crate::runtime::{Incoming, Neighbour, Reply};

use std::future::Future;
use std::sync::Arc;

use self::mcp_servers::McpServer;
use crate::acp::Side;
use crate::jsonrpc::{Builder, Connection, Error, Transport};

/// A proxy: the handlers it has, and how to call them. Written by `#[sacp::proxy]`, or by hand:
///
/// ```no_run
/// use sacp::acp::Side;
/// use sacp::proxy::{Cx, Incoming, Proxy};
///
/// /// Counts the messages it sees, and passes every one on unchanged.
/// #[derive(Default)]
/// struct Counter(std::sync::atomic::AtomicU64);
///
/// impl Proxy for Counter {
///     fn takes(_method: &str, _from: Side) -> bool {
///         true
///     }
///
///     async fn dispatch(&self, message: Incoming, cx: &Cx) {
///         self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
///         cx.forward(message).await
///     }
/// }
/// ```
///
/// [`Proxy::takes`] says which messages [`Proxy::dispatch`] handles, before it is called: the
/// runtime forwards everything else itself. Handlers take `&self` and run concurrently, so a
/// proxy is `Sync`: keep mutable state behind a `Mutex` or atomics.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a proxy",
    note = "write `#[sacp::proxy]` on an `impl {Self}` block (an empty one forwards everything)"
)]
pub trait Proxy: Send + Sync + 'static {
    /// The ACP versions the proxy speaks, ascending: v1 unless it declares others
    /// (`#[sacp::proxy(protocol = [1, 2])]`, say, for a proxy whose handlers read both). A
    /// `#[sacp::proxy]` with nothing typed — no handler, tool or MCP server, like
    /// `#[sacp::proxy] impl PassThrough {}` — reads nothing it forwards and speaks every
    /// version the SDK knows ([`KNOWN`](crate::protocol::version::KNOWN)): a v2 chain through
    /// it stays v2. The runtime negotiates like an agent — the highest of them at or below the
    /// client's, `-32022` when none is — and passes `initialize` on asking for that one; the
    /// successor's answer is the connection's version, and must be one of these.
    const PROTOCOLS: &'static [u16] = crate::protocol::version::SPOKEN;

    /// Whether [`Proxy::dispatch`] handles messages of `method` sent from `from`.
    fn takes(method: &str, from: Side) -> bool;

    /// Handles one message that [`Proxy::takes`]; what it does not answer after all it passes
    /// on with [`Cx::forward`].
    fn dispatch(&self, message: Incoming, cx: &Cx) -> impl Future<Output = ()> + Send;

    /// The MCP servers the proxy gives every session: `#[sacp::proxy]` returns the server of
    /// its `#[tool]` methods and whatever its `#[mcp_server]` methods make. None by default.
    fn mcp_servers(this: &Arc<Self>) -> Vec<Arc<dyn McpServer>> {
        let _ = this;
        Vec::new()
    }

    /// The media ranges the proxy transforms itself (`#[sacp::proxy]`: its
    /// `#[content("…")]` methods; none by default). The runtime declares in `initialize` that
    /// the proxy takes them (`_meta.sacp.content`, see [`crate::protocol::content`]), so the
    /// conductor leaves them to it, and hands [`Proxy::transform`] every block of them on its
    /// way to a neighbour that does not take it.
    const CONTENT: &'static [&'static str] = &[];

    /// `block`, of `media_type` (one of [`Proxy::CONTENT`]), made into a block for a
    /// neighbour that does not take that type; `None` leaves it as it is (and the conductor
    /// adapts it, as it does for a proxy without content handlers).
    fn transform(
        &self,
        media_type: &str,
        block: crate::acp::ContentBlock,
    ) -> Option<crate::acp::ContentBlock> {
        let _ = (media_type, block);
        None
    }
}

/// A shared proxy is a proxy: keep an `Arc` to read its state while it runs (how
/// `sacp::testing` hands a proxy's state back after a run).
impl<P: Proxy> Proxy for Arc<P> {
    const PROTOCOLS: &'static [u16] = P::PROTOCOLS;

    fn takes(method: &str, from: Side) -> bool {
        P::takes(method, from)
    }

    fn dispatch(&self, message: Incoming, cx: &Cx) -> impl Future<Output = ()> + Send {
        P::dispatch(self, message, cx)
    }

    fn mcp_servers(this: &Arc<Self>) -> Vec<Arc<dyn McpServer>> {
        P::mcp_servers(this)
    }

    const CONTENT: &'static [&'static str] = P::CONTENT;

    fn transform(
        &self,
        media_type: &str,
        block: crate::acp::ContentBlock,
    ) -> Option<crate::acp::ContentBlock> {
        P::transform(self, media_type, block)
    }
}

/// The connection settings a proxy runs with by default: the peer is named `conductor`, and
/// the requests still being handled get 250 ms once the conductor closes the connection.
pub fn builder() -> Builder {
    crate::runtime::builder("conductor")
}

/// Runs `proxy` on a transport to its conductor until the connection ends: `Ok` when the
/// conductor closed it, an error when reading or writing failed.
pub async fn serve<P: Proxy>(proxy: P, transport: impl Transport) -> Result<(), Error> {
    spawn(proxy, transport).closed().await
}

/// Runs `proxy` on stdin/stdout, as a component process of a conductor's chain (feature
/// `stdio`, on by default).
#[cfg(any(feature = "stdio", all(target_os = "wasi", target_env = "p2")))]
pub async fn serve_stdio<P: Proxy>(proxy: P) -> Result<(), Error> {
    serve(proxy, crate::jsonrpc::ByteStream::stdio()).await
}

/// Starts `proxy` on a transport and returns the connection to the conductor (for in-process
/// chains and tests; [`Connection::closed`] says when and how it ended).
pub fn spawn<P: Proxy>(proxy: P, transport: impl Transport) -> Connection {
    spawn_with(proxy, transport, builder())
}

/// [`spawn`] with other connection settings (limits, name, timeouts), starting from
/// [`builder`].
pub fn spawn_with<P: Proxy>(proxy: P, transport: impl Transport, builder: Builder) -> Connection {
    crate::runtime::spawn(runtime::ProxyHandler::new(proxy), transport, builder)
}
