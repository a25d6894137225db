//! [`Cx`]: what a proxy's handler can reach.

use std::future::Future;
use std::sync::Arc;

use super::mcp_servers::McpServers;
use super::mcp_servers::registry::Registry;
use crate::jsonrpc::Connection;
use crate::runtime::{AfterAnswer, Context, Incoming, Neighbour, Neighbours};

/// A proxy handler's context: its two neighbours and a place to run background work.
///
/// Cheap to clone; a clone can be moved into [`Cx::spawn`]ed work.
#[derive(Debug, Clone)]
pub struct Cx {
    neighbours: Neighbours,
    mcp: Arc<Registry>,
    chosen: Arc<crate::protocol::version::Chosen>,
    /// Read by [`Cx::idle`] (ACP v2).
    #[cfg_attr(not(feature = "unstable_protocol_v2"), allow(dead_code))]
    idles: Arc<super::idle::Idles>,
    /// Work to start once this request handler's answer is queued ([`Cx::after_answer`]);
    /// `None` outside a request handler.
    after: Option<Arc<AfterAnswer>>,
}

impl Cx {
    pub(crate) fn new(
        conn: Connection,
        mcp: Arc<Registry>,
        dialect: Arc<crate::protocol::dialect::ConductorDialect>,
        chosen: Arc<crate::protocol::version::Chosen>,
        idles: Arc<super::idle::Idles>,
        after: Option<Arc<AfterAnswer>>,
    ) -> Cx {
        Cx {
            neighbours: Neighbours::new(conn, dialect),
            mcp,
            chosen,
            idles,
            after,
        }
    }

    /// This context, its messages to each neighbour adapted by the proxy's content handlers.
    pub(crate) fn adapting(mut self, content: Option<Arc<crate::runtime::Adapter>>) -> Cx {
        self.neighbours = self.neighbours.adapting(content);
        self
    }

    /// Completes with the next idle `state_update` of `session` from the agent: in ACP v2 a
    /// prompt is answered at once, and its turn ends there. It waits from the call on, so call
    /// it before passing the prompt on:
    ///
    /// ```no_run
    /// use sacp::acp::v2::{PromptRequest, PromptResponse};
    /// use sacp::proxy::Cx;
    ///
    /// struct Timer;
    ///
    /// #[sacp::proxy(protocol = 2)]
    /// impl Timer {
    ///     #[on_request]
    ///     async fn prompt(&self, req: PromptRequest, cx: &Cx) -> sacp::Result<PromptResponse> {
    ///         let idle = cx.idle(&req.session_id);
    ///         let started = std::time::Instant::now();
    ///         let ack = cx.successor().request(req).await?;
    ///         cx.spawn(async move {
    ///             if let Ok(idle) = idle.await {
    ///                 eprintln!("turn over after {:?}: {:?}", started.elapsed(), idle.kind);
    ///             }
    ///         });
    ///         Ok(ack)
    ///     }
    /// }
    /// ```
    ///
    /// It fails when the connection ends first.
    #[cfg(feature = "unstable_protocol_v2")]
    pub fn idle(
        &self,
        session: &crate::acp::v2::SessionId,
    ) -> impl Future<Output = crate::Result<crate::acp::v2::IdleStateUpdate>> + Send + 'static {
        let idle = self.idles.wait(&session.0);
        async move {
            idle.await.map_err(|_| {
                crate::Error::internal_error("the connection ended before the session went idle")
            })
        }
    }

    /// The ACP version this proxy's connections speak, once the successor has answered
    /// `initialize`.
    pub fn protocol(&self) -> Option<u16> {
        self.chosen.get()
    }

    /// The proxy's MCP servers: to give a server to one session (see [`McpServers`]).
    pub fn mcp_servers(&self) -> McpServers {
        McpServers::new(self.mcp.clone())
    }

    /// The client side: the editor, or the proxy in front of this one.
    pub fn client(&self) -> Neighbour {
        self.neighbours.client()
    }

    /// The successor: the next proxy, or the agent.
    pub fn successor(&self) -> Neighbour {
        self.neighbours.successor()
    }

    /// Passes `message` on unchanged to the other side — from the client to the successor, or
    /// back — exactly as the runtime does with what no handler takes: the params as bytes,
    /// the answer relayed back, a cancel passed on. For a hand-written [`Proxy`](super::Proxy)
    /// that looks at a message and lets it go.
    pub async fn forward(&self, message: Incoming) {
        super::runtime::forward(message, self).await
    }

    /// Runs `work` in the background until it finishes or the connection ends.
    ///
    /// **Ordering.** What handlers send and forward keeps the order it arrived in, per
    /// direction (see the module docs); `work` started here runs beside that, so what it sends
    /// may overtake messages still being handled (and a handler's own answer). The same holds
    /// for `tokio::spawn`, which the runtime does not see at all (nor end with the connection).
    pub fn spawn<F>(&self, work: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.neighbours.spawn(work)
    }

    /// Starts a turn of the proxy's own with the agent in `session`: a prompt the editor did
    /// not send. The editor sees the prompt first, each block as a `user_message_chunk` marked
    /// as the proxy's (`"_meta": {"sacp": {"from": "proxy"}}`, [`META_KEY`]), then the
    /// agent's updates as they come, like any others; the answer is the proxy's. A
    /// `session/cancel` the editor sends for the session reaches the agent and cancels this
    /// turn as it would one of the editor's.
    ///
    /// Call it from work started with [`Cx::after_answer`] or [`Cx::spawn`] (a turn between
    /// the editor's turns), not while a turn of the session is open: ACP runs one turn at a
    /// time per session.
    pub async fn start_turn(
        &self,
        session: &crate::acp::SessionId,
        prompt: Vec<crate::acp::ContentBlock>,
    ) -> crate::Result<crate::acp::PromptResponse> {
        use crate::acp::{ContentChunk, PromptRequest, SessionNotification, SessionUpdate};
        for block in &prompt {
            let mut chunk = ContentChunk::new(block.clone());
            chunk.meta = Some(from_proxy());
            let update = SessionUpdate::UserMessageChunk(chunk);
            self.client()
                .notify(SessionNotification::new(session.clone(), update))
                .await?;
        }
        self.successor()
            .request(PromptRequest::new(session.clone(), prompt))
            .await
    }

    /// Runs `work` in the background once this request handler's answer has been queued for
    /// whoever asked, so that whatever `work` sends goes out after the answer: a message a
    /// proxy sends its client between turns, say, once the prompt it answered itself is
    /// answered (the `reminder-proxy` example). Unlike [`Cx::spawn`]'s work, it gets the
    /// grace requests get when the connection closes.
    ///
    /// An error, and `work` is not run, outside a request handler (a notification's handler,
    /// or work spawned earlier): there is no answer to wait for there — [`Cx::spawn`] is what
    /// runs work at once.
    pub fn after_answer<F>(&self, work: F) -> crate::Result<()>
    where
        F: Future<Output = ()> + Send + 'static,
    {
        AfterAnswer::leave(self.after.as_deref(), Box::pin(work))
    }

    /// The connection to the conductor, for what the methods above do not cover.
    pub fn connection(&self) -> &Connection {
        self.neighbours.connection()
    }

    pub(crate) fn neighbours(&self) -> &Neighbours {
        &self.neighbours
    }
}

/// The `_meta` key of sacp's own marks: a `user_message_chunk` of a prompt a proxy sent
/// ([`Cx::start_turn`]) carries `{"from": "proxy"}` under it.
pub const META_KEY: &str = "sacp";

/// `{"sacp": {"from": "proxy"}}`.
fn from_proxy() -> serde_json::Map<String, serde_json::Value> {
    let mut meta = serde_json::Map::new();
    meta.insert(META_KEY.to_owned(), serde_json::json!({"from": "proxy"}));
    meta
}

impl Context for Cx {
    fn unhandled(&self, message: Incoming) -> impl Future<Output = ()> + Send {
        super::runtime::forward(message, self)
    }

    fn unhandled_now(&self, message: Incoming) -> Result<(), Incoming> {
        super::runtime::forward_now(message, self)
    }
}
