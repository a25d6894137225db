//! The proxy runtime: the connection handler that every proxy runs on.
//!
//! It sorts what arrives from the conductor by side (plain messages come from the client,
//! `_proxy/successor/*` ones from the successor), performs the capability handshake on
//! `initialize`, gives the proxy's handlers what they take and forwards the rest.

use std::future::Future;

use super::envelope::{self, SUCCESSOR_NOTIFICATION, SUCCESSOR_REQUEST};
use super::{Cx, Proxy, handshake};
use crate::acp::Side;
use crate::incoming::{Incoming, Reply};
use crate::jsonrpc::{Connection, Handler, Notification, Request, Responder};
use crate::serving::{Exclusive, Relay, Role, Work};

const INITIALIZE: &str = "initialize";

/// A [`Proxy`] seen as a [`Role`].
pub(crate) struct AsProxy<P>(P);

impl<P: Proxy> Role for AsProxy<P> {
    type Cx = Cx;

    fn takes(method: &str, from: Side) -> bool {
        P::takes(method, from)
    }

    fn dispatch(&mut self, message: Incoming, cx: &Cx) -> impl Future<Output = ()> + Send {
        self.0.dispatch(message, cx)
    }

    fn unhandled(message: Incoming, cx: &Cx) -> Option<Relay> {
        forward(message, cx)
    }
}

pub(crate) struct ProxyHandler<P: Proxy> {
    proxy: Exclusive<AsProxy<P>>,
}

impl<P: Proxy> ProxyHandler<P> {
    pub(crate) fn new(proxy: P) -> Self {
        ProxyHandler {
            proxy: Exclusive::new(AsProxy(proxy)),
        }
    }
}

impl<P: Proxy> Handler for ProxyHandler<P> {
    fn handle_request(
        &mut self,
        request: Request,
        responder: Responder,
        conn: &Connection,
    ) -> impl Future<Output = ()> + Send + 'static {
        let Request { method, params, .. } = request;
        let reply = |from| Reply::new(responder, from, self.proxy.sink());
        let message = if method == SUCCESSOR_REQUEST {
            match envelope::unwrap(params.as_ref()) {
                Ok((method, params)) => Some(Incoming::request(method, params, reply(Side::Agent))),
                Err(e) => {
                    tracing::warn!(error = %e, "refused a malformed successor request");
                    reply(Side::Agent).relay(Err(e));
                    None
                }
            }
        } else if method == INITIALIZE {
            match handshake::accept_offer(params.as_ref()) {
                Ok(params) => Some(Incoming::request(
                    method,
                    Some(params),
                    reply(Side::Client).accepting_proxy(),
                )),
                Err(e) => {
                    tracing::error!("{}", e.message);
                    reply(Side::Client).relay(Err(e));
                    None
                }
            }
        } else {
            Some(Incoming::request(method, params, reply(Side::Client)))
        };
        match message {
            Some(message) => self.proxy.route(message, Cx::new(conn.clone())),
            None => Work::Done,
        }
    }

    fn handle_notification(
        &mut self,
        notification: Notification,
        conn: &Connection,
    ) -> impl Future<Output = ()> + Send + 'static {
        let Notification { method, params } = notification;
        let message = if method == SUCCESSOR_NOTIFICATION {
            match envelope::unwrap(params.as_ref()) {
                Ok((method, params)) => Some(Incoming::notification(Side::Agent, method, params)),
                Err(e) => {
                    tracing::warn!(error = %e, "dropped a malformed successor notification");
                    None
                }
            }
        } else {
            Some(Incoming::notification(Side::Client, method, params))
        };
        match message {
            Some(message) => self.proxy.route(message, Cx::new(conn.clone())),
            None => Work::Done,
        }
    }
}

/// Forwards a message unchanged to the other side: client to successor, successor to client.
/// A request's answer is relayed back by the returned [`Relay`].
pub(crate) fn forward(message: Incoming, cx: &Cx) -> Option<Relay> {
    let to = match message.from {
        Side::Client => cx.successor(),
        Side::Agent => cx.client(),
    };
    let (method, params, reply) = message.into_parts();
    match reply {
        Some(reply) => Some(Relay::new(to.request_raw(method, params), reply)),
        None => {
            if let Err(e) = to.notify_raw(method, params) {
                tracing::debug!(error = %e, "could not forward a notification");
            }
            None
        }
    }
}
