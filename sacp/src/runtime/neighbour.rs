//! [`Neighbour`]: one neighbour of a proxy or agent — its client, or a proxy's successor — and
//! [`Neighbours`], what both roles' contexts hold to reach them.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use super::content::Adapter;
use crate::acp::Side;
use crate::jsonrpc::{
    Admission, Connection, Error, JsonRpcNotification, JsonRpcRequest, Lane, Outbound,
    PendingResponse, RawJson, Unsent,
};
use crate::protocol::dialect::{Carried, ConductorDialect};
use crate::protocol::envelope;

/// A neighbour to send requests and notifications to: the client (the editor, or the proxy in
/// front), or a proxy's successor (the next proxy, or the agent).
///
/// Both neighbours of a proxy are reached over its one connection to the conductor: what goes
/// to the client is sent as is, what goes to the successor is wrapped in
/// `_proxy/successor/request` or `_proxy/successor/notification` (or the envelope of the
/// conductor's dialect, see [`crate::protocol::dialect`]). A `Neighbour` hides the difference:
/// the response to a wrapped request is the successor's own response.
///
/// Requests go out at once. Notifications wait (`.await`) while the conductor reads too slowly,
/// so a handler that streams updates cannot fill memory faster than they are written.
#[derive(Clone)]
pub struct Neighbour {
    conn: Connection,
    /// Which neighbour: the client, or the successor (`Side::Agent`).
    side: Side,
    /// The envelopes the conductor speaks.
    dialect: Arc<ConductorDialect>,
    /// A proxy's content handlers, which adapt what it sends.
    content: Option<Arc<Adapter>>,
}

impl fmt::Debug for Neighbour {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let to = match self.side {
            Side::Client => "client",
            Side::Agent => "successor",
        };
        f.debug_struct("Neighbour")
            .field("to", &to)
            .field("connection", &self.conn)
            .finish()
    }
}

/// What [`Neighbour::send`] sends: a request or a notification of `method`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MessageKind {
    Request,
    Notification,
}

impl Neighbour {
    /// Which neighbour this is: [`Side::Client`], or [`Side::Agent`] for the successor.
    pub fn side(&self) -> Side {
        self.side
    }

    /// Sends a typed request; await the result for the response. The request goes out now,
    /// keeping its place among the messages sent before and after it.
    pub fn request<R: JsonRpcRequest>(&self, request: R) -> PendingResponse<R::Response> {
        PendingResponse::typed(&request, |params| self.request_raw(R::METHOD, Some(params)))
    }

    /// Sends a request by method name with raw params; the result stays raw.
    pub fn request_raw(
        &self,
        method: impl Into<String>,
        params: Option<RawJson>,
    ) -> PendingResponse<RawJson> {
        let outbound = self.address(MessageKind::Request, method.into(), params);
        self.conn
            .send_request(outbound, Admission::Now)
            .unwrap_or_else(|e| PendingResponse::failed(e, Ok))
    }

    /// Sends a typed notification, once the outgoing queue has room for it.
    pub fn notify<N: JsonRpcNotification>(
        &self,
        notification: N,
    ) -> impl Future<Output = Result<(), Error>> + Send + '_ {
        let params = notification.write();
        async move { self.notify_raw(N::METHOD, Some(params?)).await }
    }

    /// Sends a notification by method name with raw params, once the outgoing queue has room
    /// for it.
    pub fn notify_raw(
        &self,
        method: impl Into<String>,
        params: Option<RawJson>,
    ) -> impl Future<Output = Result<(), Error>> + Send + '_ {
        let method = method.into();
        async move {
            self.send_when_room(MessageKind::Notification, method, params)
                .await
                .map(drop)
        }
    }

    /// The one send primitive of the runtimes: addresses a message to this neighbour (wrapped
    /// in the successor envelope, or as it is), then hands it to the connection's own
    /// ([`Connection::send`]) with `admission`. What finds no room comes back as it was given.
    pub(crate) fn send(
        &self,
        kind: MessageKind,
        method: String,
        params: Option<RawJson>,
        admission: Admission,
    ) -> Result<Option<PendingResponse<RawJson>>, Unsent> {
        let outbound = self.address(kind, method, params);
        match self.conn.send(outbound, admission) {
            Err(Unsent::NoRoom(outbound)) => Err(Unsent::NoRoom(self.unaddress(outbound))),
            sent => sent,
        }
    }

    /// [`Neighbour::send`], waiting for room in the outgoing queue when there is none.
    pub(crate) async fn send_when_room(
        &self,
        kind: MessageKind,
        method: String,
        params: Option<RawJson>,
    ) -> Result<Option<PendingResponse<RawJson>>, Error> {
        let outbound = self.address(kind, method, params);
        self.conn.send_when_room(outbound).await
    }

    /// The message as it goes on the wire: wrapped for the successor, as it is for the client;
    /// a request's response is delivered in the turn of this neighbour's lane.
    fn address(&self, kind: MessageKind, method: String, params: Option<RawJson>) -> Outbound {
        let params = match (&self.content, params) {
            (Some(content), Some(params)) => Some(content.adapt(self.side, &method, params)),
            (_, params) => params,
        };
        let (method, params) = match self.side {
            Side::Client => (method, params),
            Side::Agent => {
                let envelope = self.dialect.get().envelope(match kind {
                    MessageKind::Request => Carried::Request,
                    MessageKind::Notification => Carried::Notification,
                });
                (
                    envelope.to_owned(),
                    Some(envelope::wrap_owned(method, params)),
                )
            }
        };
        match kind {
            MessageKind::Request => Outbound::Request {
                method,
                params,
                lane: self.side.index(),
            },
            MessageKind::Notification => Outbound::Notification { method, params },
        }
    }

    /// The message as it was before [`Neighbour::address`].
    fn unaddress(&self, outbound: Outbound) -> Outbound {
        let (Outbound::Request { params, .. } | Outbound::Notification { params, .. }) = &outbound;
        if self.side == Side::Client {
            return outbound;
        }
        match envelope::unwrap(params.as_ref()) {
            Ok((method, params)) => match outbound {
                Outbound::Request { lane, .. } => Outbound::Request {
                    method,
                    params,
                    lane,
                },
                Outbound::Notification { .. } => Outbound::Notification { method, params },
            },
            // Wrapped here a moment ago: it unwraps.
            Err(_) => outbound,
        }
    }
}

/// A component's neighbours, over its one connection: what both roles' contexts hold.
#[derive(Debug, Clone)]
pub(crate) struct Neighbours {
    conn: Connection,
    dialect: Arc<ConductorDialect>,
    content: Option<Arc<Adapter>>,
}

impl Neighbours {
    /// The neighbours over `conn`, wrapping for the successor in `dialect`'s envelopes.
    pub(crate) fn new(conn: Connection, dialect: Arc<ConductorDialect>) -> Neighbours {
        Neighbours {
            conn,
            dialect,
            content: None,
        }
    }

    /// These neighbours, what is sent to them adapted by a proxy's content handlers.
    pub(crate) fn adapting(mut self, content: Option<Arc<Adapter>>) -> Neighbours {
        self.content = content;
        self
    }

    /// The client side: the editor, or the proxy in front.
    pub(crate) fn client(&self) -> Neighbour {
        Neighbour {
            conn: self.conn.clone(),
            side: Side::Client,
            dialect: self.dialect.clone(),
            content: self.content.clone(),
        }
    }

    /// The successor: the next proxy, or the agent.
    pub(crate) fn successor(&self) -> Neighbour {
        Neighbour {
            conn: self.conn.clone(),
            side: Side::Agent,
            dialect: self.dialect.clone(),
            content: self.content.clone(),
        }
    }

    /// The neighbour a message from `from` goes on to when it is forwarded.
    pub(crate) fn other_than(&self, from: Side) -> Neighbour {
        match from {
            Side::Client => self.successor(),
            Side::Agent => self.client(),
        }
    }

    /// Runs `work` in the background until it finishes or the connection ends.
    pub(crate) fn spawn<F>(&self, work: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.conn.spawn(work)
    }

    /// The proxy-chain dialect of the conductor on the other end.
    pub(crate) fn dialect(&self) -> crate::protocol::dialect::Dialect {
        self.dialect.get()
    }

    /// The connection to the conductor (or the client).
    pub(crate) fn connection(&self) -> &Connection {
        &self.conn
    }
}
