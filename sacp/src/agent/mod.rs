//! Agents: the last component of a chain, talking plain ACP to its client.
//!
//! `#[sacp::agent]` turns an impl block into an [`Agent`]: each `#[on_request]` or
//! `#[on_notification]` method handles one message type the client sends. Requests without a
//! handler are answered `-32601 Method not found`; notifications without one are ignored.
//!
//! ```no_run
//! use sacp::acp::{
//!     AgentCapabilities, ContentBlock, ContentChunk, InitializeRequest, InitializeResponse,
//!     NewSessionRequest, NewSessionResponse, PromptRequest, PromptResponse, SessionNotification,
//!     SessionUpdate, StopReason,
//! };
//! use sacp::agent::AgentCx;
//!
//! /// Answers every prompt by repeating it.
//! #[derive(Default)]
//! struct Echo {
//!     sessions: u64,
//! }
//!
//! #[sacp::agent]
//! impl Echo {
//!     #[on_request]
//!     async fn initialize(&mut self, req: InitializeRequest, _cx: &AgentCx) -> sacp::Result<InitializeResponse> {
//!         Ok(InitializeResponse::new(req.protocol_version).agent_capabilities(AgentCapabilities::default()))
//!     }
//!
//!     #[on_request]
//!     async fn new_session(&mut self, _req: NewSessionRequest, _cx: &AgentCx) -> sacp::Result<NewSessionResponse> {
//!         self.sessions += 1;
//!         Ok(NewSessionResponse::new(format!("s{}", self.sessions)))
//!     }
//!
//!     #[on_request]
//!     async fn prompt(&mut self, req: PromptRequest, cx: &AgentCx) -> sacp::Result<PromptResponse> {
//!         for block in req.prompt {
//!             let update = SessionUpdate::AgentMessageChunk(ContentChunk::new(block));
//!             cx.client().notify(SessionNotification::new(req.session_id.clone(), update))?;
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
//! Handlers run one at a time, in arrival order (they have `&mut self`); see
//! [`crate::proxy`](mod@crate::proxy) for what that means for a handler that waits.

use std::future::Future;

mod turns;

pub use self::turns::Turn;
pub use crate::incoming::{Incoming, Reply};

use std::sync::Arc;

use self::turns::Turns;

use crate::acp::Side;
use crate::jsonrpc::{
    ByteStream, Connection, Error, Handler, Notification, Request, Responder, Transport,
};
use crate::peer::Peer;
use crate::serving::{Exclusive, Relay, Role};

/// An agent: the handlers it has, and how to call them. Written by `#[sacp::agent]`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an agent",
    note = "write `#[sacp::agent]` on an `impl {Self}` block"
)]
pub trait Agent: Send + 'static {
    /// Whether [`Agent::dispatch`] handles messages of `method` (`from` is always
    /// [`Side::Client`] for an agent).
    fn takes(method: &str, from: Side) -> bool;

    /// Handles one message that [`Agent::takes`].
    fn dispatch(&mut self, message: Incoming, cx: &AgentCx) -> impl Future<Output = ()> + Send;
}

/// An agent handler's context: its client and a place to run background work.
#[derive(Debug, Clone)]
pub struct AgentCx {
    conn: Connection,
    turns: Arc<Turns>,
}

impl AgentCx {
    /// Starts a prompt turn of `session`: [`Turn::cancelled`] completes when the client sends
    /// `session/cancel` for it, even while this handler still holds the agent.
    ///
    /// ```no_run
    /// # use sacp::acp::{PromptRequest, PromptResponse, StopReason};
    /// # use sacp::agent::AgentCx;
    /// # struct Slow;
    /// #[sacp::agent]
    /// impl Slow {
    ///     #[on_request]
    ///     async fn prompt(&mut self, req: PromptRequest, cx: &AgentCx) -> sacp::Result<PromptResponse> {
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
        self.turns.open(session)
    }

    /// The client: the editor, or the conductor's last proxy.
    pub fn client(&self) -> Peer {
        Peer::client(self.conn.clone())
    }

    /// Runs `work` in the background until it finishes or the connection ends.
    pub fn spawn<F>(&self, work: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.conn.spawn(work)
    }

    /// The connection to the client, for what the methods above do not cover.
    pub fn connection(&self) -> &Connection {
        &self.conn
    }
}

/// Runs `agent` on a transport to its client until the client closes the connection.
pub async fn serve<A: Agent>(agent: A, transport: impl Transport) -> Result<(), Error> {
    let conn = spawn(agent, transport);
    let why = conn.closed().await;
    tracing::debug!(%why, "the client connection ended");
    Ok(())
}

/// Runs `agent` on stdin/stdout.
pub async fn serve_stdio<A: Agent>(agent: A) -> Result<(), Error> {
    serve(agent, ByteStream::stdio()).await
}

/// Starts `agent` on a transport and returns the connection to its client.
pub fn spawn<A: Agent>(agent: A, transport: impl Transport) -> Connection {
    Connection::builder().name("client").spawn(
        transport,
        AgentHandler {
            agent: Exclusive::new(AsAgent(agent)),
            turns: Arc::default(),
        },
    )
}

struct AsAgent<A>(A);

impl<A: Agent> Role for AsAgent<A> {
    type Cx = AgentCx;

    fn takes(method: &str, from: Side) -> bool {
        A::takes(method, from)
    }

    fn dispatch(&mut self, message: Incoming, cx: &AgentCx) -> impl Future<Output = ()> + Send {
        self.0.dispatch(message, cx)
    }

    fn unhandled(message: Incoming, _cx: &AgentCx) -> Option<Relay> {
        unhandled(message);
        None
    }
}

struct AgentHandler<A: Agent> {
    agent: Exclusive<AsAgent<A>>,
    turns: Arc<Turns>,
}

impl<A: Agent> AgentHandler<A> {
    fn cx(&self, conn: &Connection) -> AgentCx {
        AgentCx {
            conn: conn.clone(),
            turns: self.turns.clone(),
        }
    }
}

impl<A: Agent> Handler for AgentHandler<A> {
    fn handle_request(
        &mut self,
        request: Request,
        responder: Responder,
        conn: &Connection,
    ) -> impl Future<Output = ()> + Send + 'static {
        let reply = Reply::new(responder, Side::Client, self.agent.sink());
        let message = Incoming::request(request.method, request.params, reply);
        self.agent.route(message, self.cx(conn))
    }

    fn handle_notification(
        &mut self,
        notification: Notification,
        conn: &Connection,
    ) -> impl Future<Output = ()> + Send + 'static {
        let message =
            Incoming::notification(Side::Client, notification.method, notification.params);
        if message.method
            == <crate::acp::CancelNotification as crate::jsonrpc::JsonRpcNotification>::METHOD
        {
            self.turns.cancel(message.params.as_ref());
        }
        self.agent.route(message, self.cx(conn))
    }
}

/// What an agent does with a message it has no handler for: `-32601` for a request, nothing
/// for a notification.
pub(crate) fn unhandled(message: Incoming) {
    let Incoming {
        method,
        reply,
        rejected,
        ..
    } = message;
    match reply {
        Some(reply) => reply.answer::<()>(Err(
            rejected.unwrap_or_else(|| Error::method_not_found(&method))
        )),
        None => tracing::debug!(%method, "ignoring a notification the agent has no handler for"),
    }
}
