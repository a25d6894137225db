//! [`PendingResponse`]: a request that has been sent, and the future of its response.

use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::time::Instant;

use super::connection::Connection;
use super::hold;
use super::pending::Slot;
use super::{Error, Id, JsonRpcRequest, RawJson};

/// A request that has been sent; await it for the response.
///
/// The request goes out when [`Connection::request`] is called, not when this is first polled,
/// so it keeps its place relative to messages sent after it. Dropping this before the response
/// arrives (or calling [`PendingResponse::cancel`]) sends `$/cancel_request` to the peer.
#[must_use = "dropping a PendingResponse cancels the request"]
pub struct PendingResponse<T> {
    state: Result<Sent, Error>,
    decode: fn(RawJson) -> Result<T, Error>,
}

struct Sent {
    guard: CancelOnDrop,
    method: String,
    sent_at: Instant,
    timeout: Option<Duration>,
}

impl<T> std::fmt::Debug for PendingResponse<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.state {
            Ok(s) => write!(f, "PendingResponse({} {})", s.method, s.guard.id),
            Err(e) => write!(f, "PendingResponse(failed: {e})"),
        }
    }
}

impl<T: Send + 'static> PendingResponse<T> {
    pub(crate) fn sent(
        conn: &Connection,
        id: Id,
        method: String,
        slot: Arc<Slot>,
        decode: fn(RawJson) -> Result<T, Error>,
    ) -> Self {
        PendingResponse {
            state: Ok(Sent {
                guard: CancelOnDrop {
                    conn: conn.clone(),
                    id,
                    slot,
                    armed: true,
                    counted: false,
                },
                method,
                sent_at: Instant::now(),
                timeout: conn.default_timeout(),
            }),
            decode,
        }
    }

    /// Sends a typed request with `send` (raw params in, the raw response's future out): the
    /// one way both a connection and a neighbour turn a typed request into a typed response.
    pub(crate) fn typed<R>(
        request: &R,
        send: impl FnOnce(RawJson) -> PendingResponse<RawJson>,
    ) -> Self
    where
        R: JsonRpcRequest<Response = T>,
        T: serde::de::DeserializeOwned,
    {
        match request.write() {
            Ok(params) => send(params).decoded(R::read_response),
            Err(e) => PendingResponse::failed(e, R::read_response),
        }
    }

    /// The same request, its result decoded by `decode` instead.
    pub(crate) fn decoded<U>(self, decode: fn(RawJson) -> Result<U, Error>) -> PendingResponse<U> {
        PendingResponse {
            state: self.state,
            decode,
        }
    }

    pub(crate) fn failed(error: Error, decode: fn(RawJson) -> Result<T, Error>) -> Self {
        PendingResponse {
            state: Err(error),
            decode,
        }
    }

    /// Fails the request with a timeout error (and cancels it at the peer) when no response
    /// arrived within `after` of sending it.
    pub fn timeout(mut self, after: Duration) -> Self {
        if let Ok(sent) = &mut self.state {
            sent.timeout = Some(after);
        }
        self
    }

    /// Where the response will meet its awaiter (`None` if the request could not be sent).
    pub(crate) fn slot(&self) -> Option<Arc<Slot>> {
        Some(self.state.as_ref().ok()?.guard.slot.clone())
    }

    /// Why the request could not be sent, if it could not.
    pub(crate) fn failure(&self) -> Option<Error> {
        self.state.as_ref().err().cloned()
    }

    /// Lets go of a request whose response was handed over elsewhere: nothing to cancel.
    pub(crate) fn answered(self) {
        if let Ok(mut sent) = self.state {
            sent.guard.armed = false;
        }
    }

    /// The id the request was sent with (`None` if it could not be sent).
    pub fn id(&self) -> Option<&Id> {
        self.state.as_ref().ok().map(|s| &s.guard.id)
    }

    /// Cancels the request: the peer gets `$/cancel_request` unless it already answered.
    pub fn cancel(self) {
        drop(self);
    }
}

impl<T: Send + 'static> IntoFuture for PendingResponse<T> {
    type Output = Result<T, Error>;
    type IntoFuture = Pin<Box<dyn Future<Output = Result<T, Error>> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        let decode = self.decode;
        Box::pin(async move {
            let Sent {
                mut guard,
                method,
                sent_at,
                timeout,
            } = self.state?;
            let arrived = std::future::poll_fn(|cx| guard.poll_arrived(cx));
            let result = match timeout {
                None => arrived.await,
                Some(after) => match tokio::time::timeout_at(sent_at + after, arrived).await {
                    Ok(result) => result,
                    // The guard cancels the request at the peer as it drops.
                    Err(_) => return Err(Error::timeout(&method, after)),
                },
            };
            guard.armed = false;
            result.and_then(decode)
        })
    }
}

/// Sends `$/cancel_request` for a request that is still pending when this drops.
struct CancelOnDrop {
    conn: Connection,
    id: Id,
    slot: Arc<Slot>,
    armed: bool,
    /// Counted as awaited by work in a lane.
    counted: bool,
}

impl CancelOnDrop {
    fn poll_arrived(&mut self, cx: &mut Context<'_>) -> Poll<Result<RawJson, Error>> {
        let polled = self.slot.poll_take(cx);
        if polled.is_pending() && !self.counted && hold::in_lane() {
            // Work in a lane that waits for a response must not be left waiting behind a
            // reader that paused on a full lane.
            self.counted = true;
            self.conn.lanes().begin_awaiting();
        }
        polled
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.slot.drop_receiver();
        if self.counted {
            self.conn.lanes().end_awaiting();
        }
        if self.armed {
            self.conn.withdraw(&self.id);
        }
    }
}

/// Shared by typed and raw requests: the decode step for a raw result.
pub(crate) fn keep_raw(raw: RawJson) -> Result<RawJson, Error> {
    Ok(raw)
}
