//! Agents: the last component of a chain, talking plain ACP to its client.
//!
//! `#[sacp::agent]` turns an impl block into an [`Agent`]: each `#[on_request]` or
//! `#[on_notification]` method handles one message type the client sends. Requests without a
//! handler are answered `-32601 Method not found`; notifications without one are ignored —
//! except `initialize`, which the runtime answers itself when the agent has no handler for it:
//! the protocol version chosen (see [`Agent::PROTOCOLS`]), default capabilities, and
//! `_meta.mcp_acp_transport: true` for an agent that uses [`McpClient`] (declared with
//! `#[sacp::agent(mcp_over_acp)]`).
//!
//! ```no_run
//! use std::sync::atomic::{AtomicU64, Ordering};
//!
//! use sacp::acp::{
//!     ContentChunk, NewSessionRequest, NewSessionResponse, PromptRequest, PromptResponse,
//!     SessionNotification, SessionUpdate, StopReason,
//! };
//! use sacp::agent::Cx;
//!
//! /// Answers every prompt by repeating it.
//! #[derive(Default)]
//! struct Echo {
//!     sessions: AtomicU64,
//! }
//!
//! #[sacp::agent]
//! impl Echo {
//!     #[on_request]
//!     async fn new_session(&self, _req: NewSessionRequest, _cx: &Cx) -> sacp::Result<NewSessionResponse> {
//!         let n = self.sessions.fetch_add(1, Ordering::Relaxed) + 1;
//!         Ok(NewSessionResponse::new(format!("s{n}")))
//!     }
//!
//!     #[on_request]
//!     async fn prompt(&self, req: PromptRequest, cx: &Cx) -> sacp::Result<PromptResponse> {
//!         for block in req.prompt {
//!             let update = SessionUpdate::AgentMessageChunk(ContentChunk::new(block));
//!             cx.client().notify(SessionNotification::new(req.session_id.clone(), update)).await?;
//!         }
//!         Ok(PromptResponse::new(StopReason::EndTurn))
//!     }
//! }
//!
//! #[tokio::main]
//! async fn main() -> sacp::Result<()> {
//!     sacp::agent::serve_stdio(Echo::default()).await
//! }
//! ```
//!
//! Handlers take `&self` and run as [`crate::proxy`](mod@crate::proxy) describes: each request
//! handler in a task of its own (prompts of different sessions run side by side, and a prompt
//! that waits does not hold up a `session/cancel`), notification handlers one after another in
//! arrival order. `notify` waits while the client reads too slowly. When the client closes the
//! connection (stdin ends), the requests still being handled, and the work they left for after
//! their answers ([`Cx::after_answer`], a v2 turn), get a short grace (250 ms) to finish, then
//! are cancelled, and [`serve`] returns.

use std::future::Future;
use std::sync::Arc;

#[cfg(feature = "unstable_protocol_v2")]
mod dual;
mod mcp_client;
mod runtime;
mod turns;
#[cfg(feature = "unstable_protocol_v2")]
mod v2_turn;

#[cfg(feature = "unstable_protocol_v2")]
pub use self::dual::Dual;
#[cfg(feature = "unstable_protocol_v2")]
pub use self::v2_turn::V2Turn;

pub use self::mcp_client::McpClient;
pub use self::turns::Turn;
pub use crate::runtime::{Incoming, Neighbour, Reply};

pub(crate) use self::mcp_client::Clients;
use self::turns::Turns;

use crate::acp::Side;
use crate::jsonrpc::{Builder, Connection, Error, Transport};
use crate::protocol::version::{self, Chosen};
use crate::runtime::{AfterAnswer, Context, Neighbours};

/// An agent: the handlers it has, and how to call them. Written by `#[sacp::agent]`.
///
/// Handlers take `&self` and run concurrently, so an agent is `Sync`: keep mutable state behind
/// a `Mutex` or atomics.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an agent",
    note = "write `#[sacp::agent]` on an `impl {Self}` block"
)]
pub trait Agent: Send + Sync + 'static {
    /// Whether the agent speaks MCP over ACP itself (it uses [`McpClient`]): the runtime's own
    /// answer to `initialize` then says so (`_meta.mcp_acp_transport: true`), and a conductor
    /// hands it the proxies' `acp:` servers as they are. `#[sacp::agent(mcp_over_acp)]` sets
    /// it.
    const MCP_OVER_ACP: bool = false;

    /// The ACP versions the agent speaks, ascending: v1 unless it declares others
    /// (`#[sacp::agent(protocol = 2)]`, or `Dual` for both, with `unstable_protocol_v2`). The
    /// runtime answers `initialize` with the highest of them at or below the client's
    /// (`-32022` when none is), hands the handlers the request asking for that one, and from
    /// then on answers `-32601` to the methods that version lacks (see
    /// [`crate::protocol::version`]).
    const PROTOCOLS: &'static [u16] = version::SPOKEN;

    /// The agent's name and version, for the runtime's own answer to `initialize` (`info` in
    /// v2, `agentInfo` in v1): `#[sacp::agent]` gives its crate's.
    const INFO: (&'static str, &'static str) = ("sacp-agent", env!("CARGO_PKG_VERSION"));

    /// Whether [`Agent::dispatch`] handles messages of `method` (`from` is always
    /// [`Side::Client`] for an agent).
    fn takes(method: &str, from: Side) -> bool;

    /// Whether the handlers of a connection at ACP `version` take messages of `method`:
    /// [`Agent::takes`], unless the agent has a handler set per version (`Dual`, with
    /// `unstable_protocol_v2`).
    fn takes_in(version: u16, method: &str, from: Side) -> bool {
        let _ = version;
        Self::takes(method, from)
    }

    /// Handles one message that [`Agent::takes`].
    fn dispatch(&self, message: Incoming, cx: &Cx) -> impl Future<Output = ()> + Send;
}

/// A shared agent is an agent: keep an `Arc` to read its state while it runs.
impl<A: Agent> Agent for Arc<A> {
    const MCP_OVER_ACP: bool = A::MCP_OVER_ACP;
    const PROTOCOLS: &'static [u16] = A::PROTOCOLS;
    const INFO: (&'static str, &'static str) = A::INFO;

    fn takes(method: &str, from: Side) -> bool {
        A::takes(method, from)
    }

    fn takes_in(version: u16, method: &str, from: Side) -> bool {
        A::takes_in(version, method, from)
    }

    fn dispatch(&self, message: Incoming, cx: &Cx) -> impl Future<Output = ()> + Send {
        A::dispatch(self, message, cx)
    }
}

/// An agent handler's context: its client and a place to run background work.
#[derive(Debug, Clone)]
pub struct Cx {
    neighbours: Neighbours,
    turns: Arc<Turns>,
    /// The turn opened when this handler's `session/prompt` arrived.
    turn: Option<Turn>,
    /// The MCP connections the agent opened ([`McpClient`]).
    clients: Arc<Clients>,
    /// Work to start once this handler's request is answered.
    after: Option<Arc<AfterAnswer>>,
    /// The ACP version the connection negotiated.
    chosen: Arc<Chosen>,
}

impl Cx {
    /// The prompt turn of `session`: [`Turn::cancelled`] completes when the client sends
    /// `session/cancel` for it, as soon as that arrives. In a prompt handler this is the turn
    /// that opened when the prompt arrived, so a cancel sent right after the prompt counts;
    /// elsewhere it opens a new one.
    ///
    /// ```no_run
    /// # use sacp::acp::{PromptRequest, PromptResponse, StopReason};
    /// # use sacp::agent::Cx;
    /// # struct Slow;
    /// #[sacp::agent]
    /// impl Slow {
    ///     #[on_request]
    ///     async fn prompt(&self, req: PromptRequest, cx: &Cx) -> sacp::Result<PromptResponse> {
    ///         let turn = cx.turn(&req.session_id);
    ///         tokio::select! {
    ///             _ = turn.cancelled() => Ok(PromptResponse::new(StopReason::Cancelled)),
    ///             _ = tokio::time::sleep(std::time::Duration::from_secs(60)) => {
    ///                 Ok(PromptResponse::new(StopReason::EndTurn))
    ///             }
    ///         }
    ///     }
    /// }
    /// ```
    pub fn turn(&self, session: &crate::acp::SessionId) -> Turn {
        self.turn_of(&session.0)
    }

    /// [`Cx::turn`] by the session's id, of any ACP version.
    pub(crate) fn turn_of(&self, session: &str) -> Turn {
        match &self.turn {
            Some(turn) if turn.is_of(session) => turn.clone(),
            _ => self.turns.open(session),
        }
    }

    /// The ACP version this connection speaks, once `initialize` has chosen it (a handler of
    /// `initialize` already sees it).
    pub fn protocol(&self) -> Option<u16> {
        self.chosen.get()
    }

    /// The client: the editor, or the conductor's last proxy.
    pub fn client(&self) -> Neighbour {
        self.neighbours.client()
    }

    /// Runs `work` in the background until it finishes or the connection ends.
    ///
    /// **Ordering.** What a handler sends keeps its order with the answers and with what
    /// other handlers of the same session send (see the module docs); `work` started here
    /// runs beside all of that, so what it sends may overtake the answer of the handler that
    /// started it. For work that must follow the answer, use [`Cx::after_answer`]. The same
    /// holds for `tokio::spawn`, which the runtime does not see at all (nor end with the
    /// connection).
    pub fn spawn<F>(&self, work: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.neighbours.spawn(work)
    }

    /// Runs `work` in the background once this request handler's answer has been queued for
    /// the client, so that whatever `work` sends goes out after the answer: the updates an
    /// agent streams after answering a prompt, say. Unlike [`Cx::spawn`]'s work, it gets the
    /// grace requests get when the client closes the connection.
    ///
    /// An error, and `work` is not run, outside a request handler (a notification's handler,
    /// or work spawned earlier): there is no answer to wait for there — [`Cx::spawn`] is
    /// what runs work at once.
    pub fn after_answer<F>(&self, work: F) -> crate::Result<()>
    where
        F: Future<Output = ()> + Send + 'static,
    {
        AfterAnswer::leave(self.after.as_deref(), Box::pin(work))
    }

    /// The connection to the client, for what the methods above do not cover.
    pub fn connection(&self) -> &Connection {
        self.neighbours.connection()
    }

    pub(crate) fn clients(&self) -> &Arc<Clients> {
        &self.clients
    }
}

impl Context for Cx {
    fn unhandled(&self, message: Incoming) -> impl Future<Output = ()> + Send {
        runtime::unhandled(message);
        std::future::ready(())
    }

    fn unhandled_now(&self, message: Incoming) -> Result<(), Incoming> {
        runtime::unhandled(message);
        Ok(())
    }
}

/// The connection settings an agent runs with by default: the peer is named `client`, and
/// the requests still being handled get 250 ms once the client closes the connection.
pub fn builder() -> Builder {
    crate::runtime::builder("client")
}

/// Runs `agent` on a transport to its client until the connection ends: `Ok` when the client
/// closed it, an error when reading or writing failed.
pub async fn serve<A: Agent>(agent: A, transport: impl Transport) -> Result<(), Error> {
    spawn(agent, transport).closed().await
}

/// Runs `agent` on stdin/stdout (feature `stdio`, on by default).
#[cfg(any(feature = "stdio", all(target_os = "wasi", target_env = "p2")))]
pub async fn serve_stdio<A: Agent>(agent: A) -> Result<(), Error> {
    serve(agent, crate::jsonrpc::ByteStream::stdio()).await
}

/// Starts `agent` on a transport and returns the connection to its client.
pub fn spawn<A: Agent>(agent: A, transport: impl Transport) -> Connection {
    spawn_with(agent, transport, builder())
}

/// [`spawn`] with other connection settings (limits, name, timeouts), starting from
/// [`builder`].
pub fn spawn_with<A: Agent>(agent: A, transport: impl Transport, builder: Builder) -> Connection {
    crate::runtime::spawn(runtime::AgentHandler::new(agent), transport, builder)
}
