//! The proxy runtime: the connection handler that every proxy runs on, and the one path that
//! forwards what no handler takes.
//!
//! It sorts what arrives from the conductor by side (plain messages come from the client,
//! `_proxy/successor/*` ones from the successor), performs the capability handshake on
//! `initialize`, declares the proxy's MCP servers in the sessions the client opens and serves
//! the `_mcp/*` messages addressed to them (see [`crate::mcp`]), and hands every other message
//! to [`schedule`]: a lane per side, handlers started or run in turn, everything else
//! forwarded in turn by [`forward`].

use std::future::Future;
use std::sync::Arc;

use tokio_util::either::Either;

use super::idle::Idles;
use super::mcp_servers::registry::Registry;
use super::{Cx, Proxy};
use crate::acp::Side;
use crate::jsonrpc::{
    Admission, BoxFuture, Connection, Error, Handler, Notification, Outbound, RawJson, Request,
    Responder, Unsent, Work,
};
use crate::protocol::content::Transform;
use crate::protocol::dialect::{ConductorDialect, Dialect};
use crate::protocol::envelope;
use crate::protocol::version::Chosen;
use crate::protocol::{handshake, version};
use crate::runtime::{Adapter, AfterAnswer, HandlerSet, Incoming, MessageKind, Reply, schedule};

const INITIALIZE: &str = "initialize";

/// A [`Proxy`] seen as a [`HandlerSet`].
pub(crate) struct AsProxy<P>(Arc<P>);

impl<P: Proxy> HandlerSet for AsProxy<P> {
    type Cx = Cx;

    fn takes(method: &str, from: Side) -> bool {
        P::takes(method, from)
    }

    fn dispatch(&self, mut message: Incoming, cx: &Cx) -> impl Future<Output = ()> + Send {
        message.version = cx.protocol();
        self.0.dispatch(message, cx)
    }
}

/// A proxy's content handlers ([`Proxy::transform`]) as a [`Transform`].
struct ContentHandlers<P>(Arc<P>);

impl<P: Proxy> Transform for ContentHandlers<P> {
    fn transform(
        &self,
        media_type: &str,
        block: crate::acp::ContentBlock,
    ) -> Option<crate::acp::ContentBlock> {
        self.0.transform(media_type, block)
    }
}

pub(crate) struct ProxyHandler<P: Proxy> {
    proxy: Arc<AsProxy<P>>,
    mcp: Arc<Registry>,
    /// The dialect the conductor initialized this proxy in.
    dialect: Arc<ConductorDialect>,
    /// The ACP version of the connection: the successor's answer to `initialize`.
    chosen: Arc<Chosen>,
    /// Handlers waiting for a session to go idle ([`Cx::idle`]).
    idles: Arc<Idles>,
    /// The proxy's content handlers, if it has any.
    content: Option<Arc<Adapter>>,
}

impl<P: Proxy> ProxyHandler<P> {
    pub(crate) fn new(proxy: P) -> Self {
        let proxy = Arc::new(proxy);
        let dialect = Arc::<ConductorDialect>::default();
        let mcp = Arc::new(Registry::new(P::mcp_servers(&proxy), dialect.clone()));
        let content = (!P::CONTENT.is_empty()).then(|| {
            Arc::new(Adapter::new(
                P::CONTENT,
                Arc::new(ContentHandlers(proxy.clone())),
            ))
        });
        ProxyHandler {
            content,
            proxy: Arc::new(AsProxy(proxy)),
            mcp,
            dialect,
            chosen: Arc::default(),
            idles: Arc::default(),
        }
    }

    fn cx(&self, conn: &Connection, after: Option<Arc<AfterAnswer>>) -> Cx {
        Cx::new(
            conn.clone(),
            self.mcp.clone(),
            self.dialect.clone(),
            self.chosen.clone(),
            self.idles.clone(),
            after,
        )
        .adapting(self.content.clone())
    }

    /// `initialize`'s params on their way to the successor, with what the proxy takes declared
    /// when it has content handlers.
    fn declaring(&self, params: RawJson) -> RawJson {
        match &self.content {
            Some(content) => content.initializing(params),
            None => params,
        }
    }

    /// The reply to `initialize` (in any dialect): the successor's answer names the version
    /// of the connection, which must be one the proxy speaks.
    fn initialize_reply(&self, responder: Responder, requested: u16) -> Reply {
        let chosen = self.chosen.clone();
        let content = self.content.clone();
        Reply::new(responder, Side::Client).finishing(Box::new(move |result| {
            let answer = match (result?, &content) {
                (answer, Some(content)) => content.initialized(answer),
                (answer, None) => answer,
            };
            let Ok(answered) = version::of(Some(&answer)) else {
                return Ok(answer);
            };
            if P::PROTOCOLS.contains(&answered) {
                chosen.set(answered);
                return Ok(answer);
            }
            tracing::error!(
                answered,
                spoken = ?P::PROTOCOLS,
                "the successor answered an ACP version this proxy does not speak"
            );
            let mut e = version::unsupported(requested, &[]);
            e.message = format!(
                "Unsupported protocol version: the agent behind this proxy answered v{answered}, \
                 which the proxy (speaking {:?}) does not speak",
                P::PROTOCOLS
            );
            Err(e)
        }))
    }
}

impl<P: Proxy> Handler for ProxyHandler<P> {
    /// One lane for what comes from the client, one for what comes from the successor.
    type Lane = Side;

    fn handle_request(
        &mut self,
        request: Request,
        responder: Responder,
        conn: &Connection,
    ) -> Work<impl Future<Output = ()> + Send + 'static, Side> {
        let Request { id, method, params } = request;
        let lacked = |method: &str| {
            let v = self.chosen.get()?;
            version::refusal(v, &id, method)
        };
        let message = if envelope::is_envelope(&method) {
            match envelope::unwrap(params.as_ref()) {
                Ok((method, params)) if self.mcp.owns(&method, params.as_ref()) => {
                    // The agent's MCP client, to one of this proxy's servers.
                    return serve_mcp(
                        self.mcp.clone(),
                        self.cx(conn, None),
                        method,
                        params,
                        responder,
                    );
                }
                Ok((method, _)) if let Some(e) = lacked(&method) => {
                    return refuse(responder, e, Side::Agent);
                }
                Ok((method, params)) => {
                    Incoming::request(method, params, Reply::new(responder, Side::Agent))
                }
                Err(e) => {
                    tracing::warn!(error = %e, "refused a malformed successor request");
                    return refuse(responder, e, Side::Agent);
                }
            }
        } else if let Some(dialect) = Dialect::of_init_method(&method) {
            // A conductor of another dialect: its init method carries `initialize`'s params
            // unchanged, and takes the successor's result as it is.
            self.dialect.set(dialect);
            tracing::debug!(%dialect, "initialized by a conductor of another dialect");
            match negotiated(params, P::PROTOCOLS) {
                Ok((requested, params)) => {
                    let params = self.declaring(params);
                    let reply = self.initialize_reply(responder, requested);
                    Incoming::request(INITIALIZE.to_owned(), Some(params), reply)
                }
                Err(e) => return refuse(responder, e, Side::Client),
            }
        } else if method == INITIALIZE {
            let params = handshake::accept_offer(params.as_ref()).inspect_err(|e| {
                tracing::error!("{}", e.message);
            });
            match params.and_then(|p| negotiated(Some(p), P::PROTOCOLS)) {
                Ok((requested, params)) => {
                    let params = self.declaring(params);
                    self.dialect.set(Dialect::Sacp);
                    let reply = self
                        .initialize_reply(responder, requested)
                        .finishing(Box::new(|result| result.and_then(handshake::mark_accepted)));
                    Incoming::request(method, Some(params), reply)
                }
                Err(e) => return refuse(responder, e, Side::Client),
            }
        } else if let Some(e) = lacked(&method) {
            // What the connection's version forbids is neither handled nor passed on.
            return refuse(responder, e, Side::Client);
        } else {
            match self.mcp.on_client_request(&method, params.as_ref()) {
                Ok(None) => Incoming::request(method, params, Reply::new(responder, Side::Client)),
                // A new session: the proxy's MCP servers are declared in it, and learn its id
                // from the answer.
                Ok(Some((params, urls))) => {
                    let registry = self.mcp.clone();
                    let reply =
                        Reply::new(responder, Side::Client).finishing(Box::new(move |result| {
                            if let Ok(answer) = &result {
                                registry.bind_from_result(&urls, answer);
                            }
                            result
                        }));
                    Incoming::request(method, Some(params), reply)
                }
                Err(e) => {
                    let e = Error::invalid_params(format!("{method} params: {}", e.message));
                    return refuse(responder, e, Side::Client);
                }
            }
        };
        let after = AfterAnswer::for_request::<AsProxy<P>>(&message);
        let cx = self.cx(conn, after.clone());
        schedule(&self.proxy, message, cx, conn)
            .map(|work| Either::Left(AfterAnswer::following(work, after, conn)))
    }

    fn handle_notification(
        &mut self,
        notification: Notification,
        conn: &Connection,
    ) -> Work<impl Future<Output = ()> + Send + 'static, Side> {
        let Notification { method, params } = notification;
        let message = if envelope::is_envelope(&method) {
            match envelope::unwrap(params.as_ref()) {
                Ok((method, params)) if self.mcp.owns(&method, params.as_ref()) => {
                    self.mcp.notify(&method, params.as_ref());
                    return Work::done(Side::Agent);
                }
                Ok((method, params)) => {
                    // Seen as it arrives, before any handler: a turn's end wakes its waiters.
                    self.idles.observe(&method, params.as_ref());
                    Incoming::notification(Side::Agent, method, params)
                }
                Err(e) => {
                    // Notifications are never answered, not even with an error.
                    tracing::warn!(error = %e, "dropped a malformed successor notification");
                    return Work::done(Side::Agent);
                }
            }
        } else {
            Incoming::notification(Side::Client, method, params)
        };
        schedule(&self.proxy, message, self.cx(conn, None), conn).map(Either::<_, BoxFuture>::Left)
    }
}

/// The version the client asked for, and `initialize`'s params asking for the version the
/// proxy chose: it negotiates like an agent and passes on only what it speaks (see
/// [`version`]).
fn negotiated(params: Option<RawJson>, spoken: &[u16]) -> Result<(u16, RawJson), Error> {
    let requested = version::of(params.as_ref())?;
    let (chosen, params) = version::accept(params, spoken).inspect_err(|e| {
        tracing::info!(error = %e, ?spoken, "no ACP version this proxy speaks fits");
    })?;
    tracing::debug!(
        chosen,
        "initialize passed on for the version this proxy speaks"
    );
    Ok((requested, params))
}

/// Answers a request with `error`, in turn in the lane of `side`.
fn refuse<F>(responder: Responder, error: Error, side: Side) -> Work<Either<F, BoxFuture>, Side> {
    let work: BoxFuture = Box::pin(async move { responder.answer_error(error) });
    Work::in_turn(Either::Right(work), side)
}

/// Serves `_mcp/connect` or `_mcp/request` for one of the proxy's servers, in a task of its own
/// (a tool may take its time, and call the agent back meanwhile).
fn serve_mcp<F>(
    registry: Arc<Registry>,
    cx: Cx,
    method: String,
    params: Option<RawJson>,
    responder: Responder,
) -> Work<Either<F, BoxFuture>, Side> {
    let work: BoxFuture = Box::pin(async move {
        let answer = match method.as_str() {
            crate::protocol::mcp::CONNECT => registry.connect(&cx, params.as_ref()),
            crate::protocol::mcp::RFD_MESSAGE => {
                registry.stateless_request(&cx, params.as_ref()).await
            }
            _ => registry.request(params.as_ref()).await,
        };
        responder.answer_raw(answer);
    });
    Work::start(Either::Right(work), Side::Agent)
}

/// Forwards a message unchanged to the other side: client to successor, successor to client.
///
/// This is the one path for everything no handler takes (and for a handled message whose params
/// did not fit the handler's type). It waits while the conductor reads too slowly, so a lane
/// that forwards stops taking messages, and the reader stops reading. A request's answer is
/// relayed ([`PendingResponse::relay_to`]) by a task tied to the connection and to the request:
/// if the request is
/// cancelled (`$/cancel_request`) before it is forwarded, it is never sent; if after, the
/// forwarded request is cancelled downstream.
pub(crate) async fn forward(message: Incoming, cx: &Cx) {
    let to = cx.neighbours().other_than(message.from());
    let (method, params, reply) = message.into_parts();
    match reply {
        Some(reply) if reply.is_cancelled() => {}
        Some(reply) => match to
            .send_when_room(MessageKind::Request, method, params)
            .await
        {
            Ok(Some(pending)) => pending.relay_to(reply),
            Ok(None) => {}
            Err(e) => reply.answer_raw(Err(e)),
        },
        None => {
            if let Err(e) = to
                .send_when_room(MessageKind::Notification, method, params)
                .await
            {
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
    let to = cx.neighbours().other_than(message.from());
    let Incoming {
        from,
        method,
        params,
        reply,
        rejected,
        version,
    } = message;
    let kind = match &reply {
        None => MessageKind::Notification,
        Some(reply) if reply.is_cancelled() => return Ok(()),
        Some(_) => MessageKind::Request,
    };
    match to.send(kind, method, params, Admission::Try) {
        Ok(pending) => {
            if let (Some(pending), Some(reply)) = (pending, reply) {
                pending.relay_to(reply);
            }
            Ok(())
        }
        Err(Unsent::NoRoom(
            Outbound::Request { method, params, .. } | Outbound::Notification { method, params },
        )) => Err(Incoming {
            from,
            method,
            params,
            reply,
            rejected,
            version,
        }),
        Err(Unsent::Failed(e)) => {
            match reply {
                Some(reply) => reply.answer_raw(Err(e)),
                // A closed connection has nobody left to tell.
                None => tracing::debug!(error = %e, "could not forward a notification"),
            }
            Ok(())
        }
    }
}
