//! [`Peer`]: one neighbour of a proxy or agent — its client, or a proxy's successor.

use std::fmt;

use crate::jsonrpc::{
    Connection, Error, JsonRpcNotification, JsonRpcRequest, PendingResponse, RawJson, decode_typed,
};
use crate::proxy::envelope::{self, SUCCESSOR_NOTIFICATION, SUCCESSOR_REQUEST};

/// A neighbour to send requests and notifications to.
///
/// Both neighbours of a proxy are reached over its one connection to the conductor: what goes
/// to the client is sent as is, what goes to the successor is wrapped in
/// `_proxy/successor/request` or `_proxy/successor/notification`. A `Peer` hides the
/// difference: the response to a wrapped request is the successor's own response.
#[derive(Clone)]
pub struct Peer {
    conn: Connection,
    wrapped: bool,
}

impl fmt::Debug for Peer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Peer")
            .field("to", &if self.wrapped { "successor" } else { "client" })
            .field("connection", &self.conn)
            .finish()
    }
}

impl Peer {
    pub(crate) fn client(conn: Connection) -> Peer {
        Peer {
            conn,
            wrapped: false,
        }
    }

    pub(crate) fn successor(conn: Connection) -> Peer {
        Peer {
            conn,
            wrapped: true,
        }
    }

    /// Sends a typed request; await the result for the response. The request goes out now,
    /// keeping its place among the messages sent before and after it.
    pub fn request<R: JsonRpcRequest>(&self, request: R) -> PendingResponse<R::Response> {
        if !self.wrapped {
            return self.conn.request(request);
        }
        let params = envelope::wrap_typed(R::METHOD, &request);
        self.start(params, decode_typed::<R::Response>)
    }

    /// Sends a request by method name with raw params; the result stays raw.
    pub fn request_raw(
        &self,
        method: impl Into<String>,
        params: Option<RawJson>,
    ) -> PendingResponse<RawJson> {
        let method = method.into();
        if !self.wrapped {
            return self.conn.request_raw(method, params);
        }
        self.start(Ok(envelope::wrap(&method, params.as_ref())), Ok)
    }

    fn start<T: Send + 'static>(
        &self,
        wrapped: Result<RawJson, Error>,
        decode: fn(RawJson) -> Result<T, Error>,
    ) -> PendingResponse<T> {
        match wrapped {
            Ok(params) => {
                self.conn
                    .start_request(SUCCESSOR_REQUEST.to_owned(), Some(params), decode)
            }
            Err(e) => PendingResponse::failed(e, decode),
        }
    }

    /// Sends a typed notification.
    pub fn notify<N: JsonRpcNotification>(&self, notification: N) -> Result<(), Error> {
        if !self.wrapped {
            return self.conn.notify(notification);
        }
        let params = envelope::wrap_typed(N::METHOD, &notification)?;
        self.conn.notify_raw(SUCCESSOR_NOTIFICATION, Some(params))
    }

    /// Sends a notification by method name with raw params.
    pub fn notify_raw(
        &self,
        method: impl Into<String>,
        params: Option<RawJson>,
    ) -> Result<(), Error> {
        let method = method.into();
        if !self.wrapped {
            return self.conn.notify_raw(method, params);
        }
        self.conn.notify_raw(
            SUCCESSOR_NOTIFICATION,
            Some(envelope::wrap(&method, params.as_ref())),
        )
    }
}
