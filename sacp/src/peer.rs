//! [`Peer`]: one neighbour of a proxy or agent — its client, or a proxy's successor.

use std::fmt;
use std::future::Future;

use crate::acp::Side;
use crate::jsonrpc::{
    Connection, Error, JsonRpcNotification, JsonRpcRequest, Message, Notification, PendingResponse,
    RawJson, decode_typed,
};
use crate::protocol::envelope::{self, SUCCESSOR_NOTIFICATION, SUCCESSOR_REQUEST};
use crate::role::lane;

/// A neighbour to send requests and notifications to.
///
/// Both neighbours of a proxy are reached over its one connection to the conductor: what goes
/// to the client is sent as is, what goes to the successor is wrapped in
/// `_proxy/successor/request` or `_proxy/successor/notification`. A `Peer` hides the
/// difference: the response to a wrapped request is the successor's own response.
///
/// Requests go out at once. Notifications wait (`.await`) while the conductor reads too slowly,
/// so a handler that streams updates cannot fill memory faster than they are written.
#[derive(Clone)]
pub struct Peer {
    conn: Connection,
    /// Which neighbour: the client, or the successor (`Side::Agent`).
    side: Side,
}

impl fmt::Debug for Peer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let to = match self.side {
            Side::Client => "client",
            Side::Agent => "successor",
        };
        f.debug_struct("Peer")
            .field("to", &to)
            .field("connection", &self.conn)
            .finish()
    }
}

impl Peer {
    pub(crate) fn client(conn: Connection) -> Peer {
        Peer {
            conn,
            side: Side::Client,
        }
    }

    pub(crate) fn successor(conn: Connection) -> Peer {
        Peer {
            conn,
            side: Side::Agent,
        }
    }

    fn wrapped(&self) -> bool {
        self.side == Side::Agent
    }

    /// Sends a typed request; await the result for the response. The request goes out now,
    /// keeping its place among the messages sent before and after it.
    pub fn request<R: JsonRpcRequest>(&self, request: R) -> PendingResponse<R::Response> {
        let params = if self.wrapped() {
            envelope::wrap_typed(R::METHOD, &request)
        } else {
            RawJson::to_raw(&request)
        };
        match params {
            Ok(params) => self.start(R::METHOD, params, decode_typed::<R::Response>, None),
            Err(e) => PendingResponse::failed(e, decode_typed::<R::Response>),
        }
    }

    /// Sends a request by method name with raw params; the result stays raw.
    pub fn request_raw(
        &self,
        method: impl Into<String>,
        params: Option<RawJson>,
    ) -> PendingResponse<RawJson> {
        let (method, params) = self.on_the_wire(method.into(), params, SUCCESSOR_REQUEST);
        self.conn
            .start_request(lane(self.side), method, params, Ok, None)
    }

    /// Sends a request once the outgoing queue has room for it (forwarding, which must slow
    /// down with the peer it writes to).
    pub(crate) async fn request_when_room(
        &self,
        method: String,
        params: Option<RawJson>,
    ) -> PendingResponse<RawJson> {
        let (method, params) = self.on_the_wire(method, params, SUCCESSOR_REQUEST);
        let permit = self
            .conn
            .room_for(params.as_ref().map_or(0, RawJson::len))
            .await;
        self.conn
            .start_request(lane(self.side), method, params, Ok, permit)
    }

    /// Sends a request at once if the outgoing queue has room for it; gives the method and
    /// params back if not.
    pub(crate) fn request_raw_now(
        &self,
        method: String,
        params: Option<RawJson>,
    ) -> Result<PendingResponse<RawJson>, (String, Option<RawJson>)> {
        let Some(permit) = self.room_now(&method, params.as_ref()) else {
            return Err((method, params));
        };
        let (method, params) = self.on_the_wire(method, params, SUCCESSOR_REQUEST);
        Ok(self
            .conn
            .start_request(lane(self.side), method, params, Ok, Some(permit)))
    }

    /// Sends a notification at once if the outgoing queue has room for it; gives the method
    /// and params back if not. (Sending on a closed connection counts as sent: nobody is left
    /// to tell.)
    pub(crate) fn notify_raw_now(
        &self,
        method: String,
        params: Option<RawJson>,
    ) -> Result<(), (String, Option<RawJson>)> {
        let Some(permit) = self.room_now(&method, params.as_ref()) else {
            return Err((method, params));
        };
        let (method, params) = self.on_the_wire(method, params, SUCCESSOR_NOTIFICATION);
        let sent = self.conn.send_with(
            Message::Notification(Notification { method, params }),
            Some(permit),
        );
        if let Err(e) = sent {
            tracing::debug!(error = %e, "could not forward a notification");
        }
        Ok(())
    }

    fn room_now(&self, method: &str, params: Option<&RawJson>) -> Option<crate::jsonrpc::Permit> {
        let wrapping = if self.wrapped() { method.len() + 24 } else { 0 };
        self.conn
            .try_room_for(params.map_or(0, RawJson::len) + wrapping)
    }

    fn start<T: Send + 'static>(
        &self,
        method: &str,
        params: RawJson,
        decode: fn(RawJson) -> Result<T, Error>,
        permit: Option<crate::jsonrpc::Permit>,
    ) -> PendingResponse<T> {
        let method = if self.wrapped() {
            SUCCESSOR_REQUEST
        } else {
            method
        };
        self.conn.start_request(
            lane(self.side),
            method.to_owned(),
            Some(params),
            decode,
            permit,
        )
    }

    /// Sends a typed notification, once the outgoing queue has room for it.
    pub fn notify<N: JsonRpcNotification>(
        &self,
        notification: N,
    ) -> impl Future<Output = Result<(), Error>> + Send + '_ {
        let params = if self.wrapped() {
            envelope::wrap_typed(N::METHOD, &notification)
        } else {
            RawJson::to_raw(&notification)
        };
        let method = if self.wrapped() {
            SUCCESSOR_NOTIFICATION
        } else {
            N::METHOD
        };
        async move {
            self.send_notification(method.to_owned(), Some(params?))
                .await
        }
    }

    /// Sends a notification by method name with raw params, once the outgoing queue has room
    /// for it.
    pub fn notify_raw(
        &self,
        method: impl Into<String>,
        params: Option<RawJson>,
    ) -> impl Future<Output = Result<(), Error>> + Send + '_ {
        let (method, params) = self.on_the_wire(method.into(), params, SUCCESSOR_NOTIFICATION);
        self.send_notification(method, params)
    }

    async fn send_notification(
        &self,
        method: String,
        params: Option<RawJson>,
    ) -> Result<(), Error> {
        let permit = self
            .conn
            .room_for(params.as_ref().map_or(0, RawJson::len))
            .await;
        self.conn.send_with(
            Message::Notification(Notification { method, params }),
            permit,
        )
    }

    /// The method and params as they go on the wire: wrapped in `envelope` for the successor.
    fn on_the_wire(
        &self,
        method: String,
        params: Option<RawJson>,
        envelope: &str,
    ) -> (String, Option<RawJson>) {
        if self.wrapped() {
            let wrapped = envelope::wrap_owned(method, params);
            (envelope.to_owned(), Some(wrapped))
        } else {
            (method, params)
        }
    }
}
