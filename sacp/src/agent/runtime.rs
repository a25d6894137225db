//! The agent runtime: the connection handler every agent runs on, its own answer to
//! `initialize`, and the default answer to what no handler takes.

use std::future::Future;
use std::sync::Arc;

use tokio_util::either::Either;

use super::turns::Turns;
use super::{Agent, Clients, Cx};
use crate::acp::{
    AgentCapabilities, CancelNotification, CloseSessionRequest, Implementation, InitializeRequest,
    InitializeResponse, PromptRequest, ProtocolVersion, Side,
};
use crate::jsonrpc::{
    BoxFuture, Connection, Error, Handler, Notification, RawJson, Request, Responder, Work,
};
use crate::protocol::version::Chosen;
use crate::protocol::{mcp, version};
use crate::runtime::{AfterAnswer, HandlerSet, Incoming, Neighbours, Reply, schedule};

/// An [`Agent`] seen as a [`HandlerSet`].
pub(crate) struct AsAgent<A>(A);

impl<A: Agent> HandlerSet for AsAgent<A> {
    type Cx = Cx;

    fn takes(method: &str, from: Side) -> bool {
        A::takes(method, from)
    }

    fn dispatch(&self, mut message: Incoming, cx: &Cx) -> impl Future<Output = ()> + Send {
        message.version = cx.protocol();
        self.0.dispatch(message, cx)
    }
}

pub(crate) struct AgentHandler<A: Agent> {
    agent: Arc<AsAgent<A>>,
    turns: Arc<Turns>,
    clients: Arc<Clients>,
    chosen: Arc<Chosen>,
}

impl<A: Agent> AgentHandler<A> {
    pub(crate) fn new(agent: A) -> Self {
        AgentHandler {
            agent: Arc::new(AsAgent(agent)),
            turns: Arc::default(),
            clients: Arc::default(),
            chosen: Arc::default(),
        }
    }

    fn cx(
        &self,
        conn: &Connection,
        turn: Option<super::Turn>,
        after: Option<Arc<AfterAnswer>>,
    ) -> Cx {
        Cx {
            neighbours: Neighbours::new(conn.clone(), Arc::default()),
            turns: self.turns.clone(),
            turn,
            clients: self.clients.clone(),
            after,
            chosen: self.chosen.clone(),
        }
    }
}

impl<A: Agent> Handler for AgentHandler<A> {
    /// An agent's one neighbour is its client: everything comes in the client's lane.
    type Lane = Side;

    fn handle_request(
        &mut self,
        mut request: Request,
        responder: Responder,
        conn: &Connection,
    ) -> Work<impl Future<Output = ()> + Send + 'static, Side> {
        if request.method == mcp::REQUEST && self.clients.owns(request.params.as_ref()) {
            // An MCP server asks the agent's MCP client something.
            let answer = Clients::answer(request.params.as_ref());
            let work: BoxFuture = Box::pin(async move { responder.answer_raw(answer) });
            return Work::in_turn(Either::Right(work), Side::Client);
        }
        if let Some(e) = self
            .chosen
            .get()
            .and_then(|v| version::refusal(v, &request.id, &request.method))
        {
            // What the connection's version forbids no handler sees.
            let work: BoxFuture = Box::pin(async move { responder.answer_error(e) });
            return Work::in_turn(Either::Right(work), Side::Client);
        }
        let mut chosen = None;
        if request.method == InitializeRequest::METHOD {
            // The SDK answers the version (see `protocol::version`); a handler sees the
            // request asking for the one chosen.
            let answer = match version::accept(request.params.take(), A::PROTOCOLS) {
                Ok((v, params)) if A::takes_in(v, &request.method, Side::Client) => {
                    self.chosen.set(v);
                    request.params = Some(params);
                    chosen = Some(v);
                    None
                }
                Ok((v, params)) => {
                    self.chosen.set(v);
                    Some(initialize::<A>(&params, v))
                }
                Err(e) => Some(Err(e)),
            };
            if let Some(answer) = answer {
                // Answered in turn: nothing that came before it is overtaken.
                let work: BoxFuture = Box::pin(async move { responder.answer_raw(answer) });
                return Work::in_turn(Either::Right(work), Side::Client);
            }
        }
        // Closing a session ends its turn as a `session/cancel` would (the schema: the agent
        // "must cancel any ongoing work related to the session"), before any handler runs.
        if request.method == CloseSessionRequest::METHOD {
            self.turns.cancel(request.params.as_ref());
        }
        // A turn opens as the prompt arrives, so a `session/cancel` right behind it counts.
        let turn = if request.method == PromptRequest::METHOD {
            self.turns.open_for(request.params.as_ref())
        } else {
            None
        };
        let mut reply = Reply::new(responder, Side::Client);
        if let Some(v) = chosen {
            reply = reply.finishing(Box::new(move |result| {
                result.and_then(|answer| version::with_version(answer, v))
            }));
        }
        let message = Incoming::request(request.method, request.params, reply);
        let after = AfterAnswer::for_request::<AsAgent<A>>(&message);
        let cx = self.cx(conn, turn, after.clone());
        schedule(&self.agent, message, cx, conn)
            .map(|work| Either::Left(AfterAnswer::following(work, after, conn)))
    }

    fn handle_notification(
        &mut self,
        notification: Notification,
        conn: &Connection,
    ) -> Work<impl Future<Output = ()> + Send + 'static, Side> {
        if notification.method == mcp::NOTIFICATION
            && self.clients.owns(notification.params.as_ref())
        {
            Clients::note(notification.params.as_ref());
            return Work::done(Side::Client);
        }
        if let Some(v) = self.chosen.get()
            && version::lacks(v, &notification.method)
        {
            tracing::debug!(method = %notification.method, version = v, "ignoring a notification its ACP version lacks");
            return Work::done(Side::Client);
        }
        if notification.method == CancelNotification::METHOD {
            // The turn ends as soon as the cancel arrives, before any handler runs.
            self.turns.cancel(notification.params.as_ref());
        }
        let message =
            Incoming::notification(Side::Client, notification.method, notification.params);
        schedule(&self.agent, message, self.cx(conn, None, None), conn)
    }
}

/// The runtime's answer to `initialize` for an agent without a handler for it: the version
/// chosen, default capabilities, and MCP over ACP when the agent declared it; for v2 also the
/// agent's `info`, which v2 requires of both sides.
fn initialize<A: Agent>(params: &RawJson, chosen: u16) -> Result<RawJson, Error> {
    let invalid = |e: Error| Error::invalid_params(format!("initialize params: {}", e.message));
    if chosen >= 2 {
        // The request must at least be one of its version: v2 requires the client's `info`.
        params
            .parse::<sacp_schema::acp::v2::InitializeRequest>()
            .map_err(invalid)?;
        let (name, version) = A::INFO;
        let mut answer = serde_json::json!({
            "protocolVersion": chosen,
            "info": {"name": name, "version": version},
            "capabilities": {},
        });
        if A::MCP_OVER_ACP {
            answer["_meta"] = serde_json::Value::Object(mcp::capability_meta());
        }
        return RawJson::to_raw(&answer);
    }
    params.parse::<InitializeRequest>().map_err(invalid)?;
    let (name, version) = A::INFO;
    let answer = InitializeResponse::new(ProtocolVersion::from(chosen))
        .agent_capabilities(AgentCapabilities::default())
        .agent_info(Implementation::new(name, version));
    let answer = if A::MCP_OVER_ACP {
        answer.meta(mcp::capability_meta())
    } else {
        answer
    };
    RawJson::to_raw(&answer)
}

/// What an agent does with a message it has no handler for: `-32601` for a request (or
/// `-32602` when its handler's type rejected the params), nothing for a notification.
pub(crate) fn unhandled(message: Incoming) {
    let Incoming {
        method,
        reply,
        rejected,
        ..
    } = message;
    match reply {
        Some(reply) => reply.answer::<(), Error>(Err(
            rejected.unwrap_or_else(|| Error::method_not_found(&method))
        )),
        None => tracing::debug!(%method, "ignoring a notification the agent has no handler for"),
    }
}
