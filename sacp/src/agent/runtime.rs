//! The agent runtime: the connection handler every agent runs on, and the default answer to
//! what no handler takes.

use std::future::Future;
use std::sync::Arc;

use super::turns::Turns;
use super::{AfterAnswer, Agent, AgentCx};
use crate::acp::{CancelNotification, PromptRequest, Side};
use crate::incoming::{Incoming, Reply};
use crate::jsonrpc::{Connection, Dispatch, Error, Handler, Notification, Request, Responder};
use crate::mcp::Clients;
use crate::protocol::mcp;
use crate::role::{self, Role};
use tokio_util::either::Either;

/// An [`Agent`] seen as a [`Role`].
pub(crate) struct AsAgent<A>(A);

impl<A: Agent> Role for AsAgent<A> {
    type Cx = AgentCx;

    fn takes(method: &str, from: Side) -> bool {
        A::takes(method, from)
    }

    fn dispatch(&self, message: Incoming, cx: &AgentCx) -> impl Future<Output = ()> + Send {
        self.0.dispatch(message, cx)
    }
}

pub(crate) struct AgentHandler<A: Agent> {
    agent: Arc<AsAgent<A>>,
    turns: Arc<Turns>,
    clients: Arc<Clients>,
}

impl<A: Agent> AgentHandler<A> {
    pub(crate) fn new(agent: A) -> Self {
        AgentHandler {
            agent: Arc::new(AsAgent(agent)),
            turns: Arc::default(),
            clients: Arc::default(),
        }
    }

    fn cx(
        &self,
        conn: &Connection,
        turn: Option<super::Turn>,
        after: Option<Arc<AfterAnswer>>,
    ) -> AgentCx {
        AgentCx {
            conn: conn.clone(),
            turns: self.turns.clone(),
            turn,
            clients: self.clients.clone(),
            after,
        }
    }
}

impl<A: Agent> Handler for AgentHandler<A> {
    fn handle_request(
        &mut self,
        request: Request,
        responder: Responder,
        conn: &Connection,
    ) -> Dispatch<impl Future<Output = ()> + Send + 'static> {
        if request.method == mcp::REQUEST && self.clients.owns(request.params.as_ref()) {
            // An MCP server asks the agent's MCP client something.
            let answer = Clients::answer(request.params.as_ref());
            return Dispatch::in_turn(Either::Right(async move { responder.respond(answer) }));
        }
        // A turn opens as the prompt arrives, so a `session/cancel` right behind it counts.
        let turn = if request.method == PromptRequest::METHOD {
            self.turns.open_for(request.params.as_ref())
        } else {
            None
        };
        let reply = Reply::new(responder, Side::Client);
        let message = Incoming::request(request.method, request.params, reply);
        let after = Arc::new(AfterAnswer::default());
        let cx = self.cx(conn, turn, Some(after.clone()));
        let conn = conn.clone();
        role::dispatch(&self.agent, message, cx).map(|work| {
            Either::Left(async move {
                work.await;
                after.start(&conn);
            })
        })
    }

    fn handle_notification(
        &mut self,
        notification: Notification,
        conn: &Connection,
    ) -> Dispatch<impl Future<Output = ()> + Send + 'static> {
        if notification.method == mcp::NOTIFICATION
            && self.clients.owns(notification.params.as_ref())
        {
            Clients::note(notification.params.as_ref());
            return Dispatch::done();
        }
        if notification.method == CancelNotification::METHOD {
            // The turn ends as soon as the cancel arrives, before any handler runs.
            self.turns.cancel(notification.params.as_ref());
        }
        let message =
            Incoming::notification(Side::Client, notification.method, notification.params);
        role::dispatch(&self.agent, message, self.cx(conn, None, None))
    }
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
