//! The proxy runtime: the connection handler that every proxy runs on, and the one path that
//! forwards what no handler takes.
//!
//! It sorts what arrives from the conductor by side (plain messages come from the client,
//! `_proxy/successor/*` ones from the successor), performs the capability handshake on
//! `initialize`, declares the proxy's MCP servers in the sessions the client opens and serves
//! the `_mcp/*` messages addressed to them (see [`crate::mcp`]), and hands every other message
//! to [`role::dispatch`]: a lane per side, handlers started or run in turn, everything else
//! forwarded in turn by [`forward`].

use std::future::{Future, IntoFuture};
use std::sync::Arc;

use tokio_util::either::Either;

use super::{Cx, Proxy};
use crate::acp::Side;
use crate::incoming::{Incoming, Reply};
use crate::jsonrpc::{
    Connection, Dispatch, Error, Handler, Notification, PendingResponse, RawJson, Request,
    Responder,
};
use crate::mcp::registry::Registry;
use crate::protocol::envelope::{self, SUCCESSOR_NOTIFICATION, SUCCESSOR_REQUEST};
use crate::protocol::handshake;
use crate::role::{self, AGENT_LANE, CLIENT_LANE, Role};

const INITIALIZE: &str = "initialize";

/// A [`Proxy`] seen as a [`Role`].
pub(crate) struct AsProxy<P>(Arc<P>);

impl<P: Proxy> Role for AsProxy<P> {
    type Cx = Cx;

    fn takes(method: &str, from: Side) -> bool {
        P::takes(method, from)
    }

    fn dispatch(&self, message: Incoming, cx: &Cx) -> impl Future<Output = ()> + Send {
        self.0.dispatch(message, cx)
    }
}

pub(crate) struct ProxyHandler<P: Proxy> {
    proxy: Arc<AsProxy<P>>,
    mcp: Arc<Registry>,
}

impl<P: Proxy> ProxyHandler<P> {
    pub(crate) fn new(proxy: P) -> Self {
        let proxy = Arc::new(proxy);
        let mcp = Arc::new(Registry::new(P::mcp_servers(&proxy)));
        ProxyHandler {
            proxy: Arc::new(AsProxy(proxy)),
            mcp,
        }
    }

    fn cx(&self, conn: &Connection) -> Cx {
        Cx::new(conn.clone(), self.mcp.clone())
    }
}

impl<P: Proxy> Handler for ProxyHandler<P> {
    /// One lane for what comes from the client, one for what comes from the successor.
    const LANES: usize = 2;

    fn handle_request(
        &mut self,
        request: Request,
        responder: Responder,
        conn: &Connection,
    ) -> Dispatch<impl Future<Output = ()> + Send + 'static> {
        let Request { method, params, .. } = request;
        let message = if method == SUCCESSOR_REQUEST {
            match envelope::unwrap(params.as_ref()) {
                Ok((method, params)) if self.mcp.owns(&method, params.as_ref()) => {
                    // The agent's MCP client, to one of this proxy's servers.
                    return serve_mcp(self.mcp.clone(), self.cx(conn), method, params, responder);
                }
                Ok((method, params)) => {
                    Incoming::request(method, params, Reply::new(responder, Side::Agent))
                }
                Err(e) => {
                    tracing::warn!(error = %e, "refused a malformed successor request");
                    return refuse(responder, e, AGENT_LANE);
                }
            }
        } else if method == INITIALIZE {
            match handshake::accept_offer(params.as_ref()) {
                Ok(params) => Incoming::request(
                    method,
                    Some(params),
                    Reply::new(responder, Side::Client).accepting_proxy(),
                ),
                Err(e) => {
                    tracing::error!("{}", e.message);
                    return refuse(responder, e, CLIENT_LANE);
                }
            }
        } else {
            match self.mcp.on_client_request(&method, params.as_ref()) {
                Ok(None) => Incoming::request(method, params, Reply::new(responder, Side::Client)),
                // A new session: the proxy's MCP servers are declared in it.
                Ok(Some((params, urls))) => {
                    let reply =
                        Reply::new(responder, Side::Client).binding_session(self.mcp.clone(), urls);
                    Incoming::request(method, Some(params), reply)
                }
                Err(e) => {
                    let e = Error::invalid_params(format!("{method} params: {}", e.message));
                    return refuse(responder, e, CLIENT_LANE);
                }
            }
        };
        role::dispatch(&self.proxy, message, self.cx(conn)).map(Either::Left)
    }

    fn handle_notification(
        &mut self,
        notification: Notification,
        conn: &Connection,
    ) -> Dispatch<impl Future<Output = ()> + Send + 'static> {
        let Notification { method, params } = notification;
        let message = if method == SUCCESSOR_NOTIFICATION {
            match envelope::unwrap(params.as_ref()) {
                Ok((method, params)) if self.mcp.owns(&method, params.as_ref()) => {
                    self.mcp.notify(&method, params.as_ref());
                    return Dispatch::done().on_lane(AGENT_LANE);
                }
                Ok((method, params)) => Incoming::notification(Side::Agent, method, params),
                Err(e) => {
                    // Notifications are never answered, not even with an error.
                    tracing::warn!(error = %e, "dropped a malformed successor notification");
                    return Dispatch::done().on_lane(AGENT_LANE);
                }
            }
        } else {
            Incoming::notification(Side::Client, method, params)
        };
        role::dispatch(&self.proxy, message, self.cx(conn)).map(Either::<_, Boxed>::Left)
    }
}

/// Work off the hot path: boxed, so that one type covers it all.
type Boxed = crate::jsonrpc::BoxFuture;

/// Answers a request with `error`, in turn in `lane`.
fn refuse<F>(responder: Responder, error: Error, lane: usize) -> Dispatch<Either<F, Boxed>> {
    Dispatch::in_turn(Either::Right(
        Box::pin(async move { responder.respond_error(error) }) as Boxed,
    ))
    .on_lane(lane)
}

/// Serves `_mcp/connect` or `_mcp/request` for one of the proxy's servers, in a task of its own
/// (a tool may take its time, and call the agent back meanwhile).
fn serve_mcp<F>(
    registry: Arc<Registry>,
    cx: Cx,
    method: String,
    params: Option<RawJson>,
    responder: Responder,
) -> Dispatch<Either<F, Boxed>> {
    let work = async move {
        let answer = if method == crate::protocol::mcp::CONNECT {
            registry.connect(&cx, params.as_ref())
        } else {
            registry.request(params.as_ref()).await
        };
        responder.respond(answer);
    };
    Dispatch::start(Either::Right(Box::pin(work) as Boxed)).on_lane(AGENT_LANE)
}

/// Forwards a message unchanged to the other side: client to successor, successor to client.
///
/// This is the one path for everything no handler takes (and for a handled message whose params
/// did not fit the handler's type). It waits while the conductor reads too slowly, so a lane
/// that forwards stops taking messages, and the reader stops reading. A request's answer is
/// relayed by a task tied to the connection and to the request: if the request is cancelled
/// (`$/cancel_request`) before it is forwarded, it is never sent; if after, the forwarded
/// request is cancelled downstream.
pub(crate) async fn forward(message: Incoming, cx: &Cx) {
    let to = match message.from {
        Side::Client => cx.successor(),
        Side::Agent => cx.client(),
    };
    let (method, params, reply) = message.into_parts();
    match reply {
        Some(reply) => {
            if reply.is_cancelled() {
                return;
            }
            let pending = to.request_when_room(method, params).await;
            cx.spawn(relay(pending, reply));
        }
        None => {
            if let Err(e) = to.notify_raw(method, params).await {
                tracing::debug!(error = %e, "could not forward a notification");
            }
        }
    }
}

/// [`forward`] at once, if the outgoing queue has room; gives the message back if not.
// The message goes back by value only when the queue is full; boxing it would cost an
// allocation on the path every forwarded message takes.
#[allow(clippy::result_large_err)]
pub(crate) fn forward_now(message: Incoming, cx: &Cx) -> Result<(), Incoming> {
    let to = match message.from {
        Side::Client => cx.successor(),
        Side::Agent => cx.client(),
    };
    let Incoming {
        from,
        method,
        params,
        reply,
        rejected,
    } = message;
    let give_back = |(method, params), reply| Incoming {
        from,
        method,
        params,
        reply,
        rejected,
    };
    match reply {
        None => to
            .notify_raw_now(method, params)
            .map_err(|back| give_back(back, None)),
        Some(reply) if reply.is_cancelled() => Ok(()),
        Some(reply) => match to.request_raw_now(method, params) {
            Ok(pending) => {
                cx.spawn(relay(pending, reply));
                Ok(())
            }
            Err(back) => Err(give_back(back, Some(reply))),
        },
    }
}

/// Relays a forwarded request's answer to whoever sent the original, unless the original is
/// cancelled first: then dropping `pending` cancels the forwarded request downstream.
async fn relay(pending: PendingResponse<RawJson>, reply: Reply) {
    let answer = pending.into_future();
    let result = tokio::select! {
        biased;
        () = reply.cancelled() => None,
        result = answer => Some(result),
    };
    if let Some(result) = result {
        reply.relay(result);
    }
}
