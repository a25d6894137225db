//! Requests this side sent and is waiting on: the pending table and the response future.
//!
//! The table is resolved by the reader task directly, never through a lane, so a handler that
//! awaits a response from its own peer is never waiting on itself.
//!
//! Ordering: each request is sent on a lane's behalf (the lane of the peer's side that answers
//! it), and its response is delivered only once that lane has dealt with every message the
//! peer sent *before* the response (see the `lanes` module). So when `request(..).await`
//! returns, the `session/update`s streamed ahead of the response have all been handled or
//! forwarded. Work running in a lane gets its responses as they arrive (the lane cannot move
//! while it waits), and tells the reader so: the reader then reads on past full lanes, because
//! the response may be behind what it has not read yet.

use std::collections::HashMap;
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::oneshot;
use tokio::time::Instant;

use super::connection::Connection;
use super::lanes::{self, Lanes};
use super::{Error, Id, RawJson};

/// A response that arrived, with its place in the peer's stream.
#[derive(Debug)]
pub(crate) struct Arrived {
    pub(crate) result: Result<RawJson, Error>,
    /// The lane whose messages the response must not overtake.
    pub(crate) lane: usize,
    /// How many messages that lane had admitted when the response arrived.
    pub(crate) barrier: u64,
}

/// The requests awaiting a response.
#[derive(Debug, Default)]
pub(crate) struct PendingTable {
    inner: Mutex<PendingInner>,
}

#[derive(Debug, Default)]
struct PendingInner {
    /// Set once the connection cannot receive responses any more.
    closed: Option<Error>,
    /// Each waiter, with the lane of the request.
    waiters: HashMap<Id, (oneshot::Sender<Arrived>, usize)>,
}

impl PendingTable {
    fn lock(&self) -> std::sync::MutexGuard<'_, PendingInner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers `id`, sent on `lane`'s behalf; fails with the closing error when the
    /// connection has ended.
    pub(crate) fn insert(
        &self,
        id: Id,
        lane: usize,
        tx: oneshot::Sender<Arrived>,
    ) -> Result<(), Error> {
        let mut inner = self.lock();
        if let Some(e) = &inner.closed {
            return Err(e.clone());
        }
        inner.waiters.insert(id, (tx, lane));
        Ok(())
    }

    /// Hands a response to its waiter, with its place in `lanes`; `false` when nobody waits on
    /// `id`.
    pub(crate) fn resolve(&self, id: &Id, result: Result<RawJson, Error>, lanes: &Lanes) -> bool {
        let waiter = self.lock().waiters.remove(id);
        match waiter {
            Some((tx, lane)) => {
                let arrived = Arrived {
                    result,
                    lane,
                    barrier: lanes.admitted(lane),
                };
                // The waiter may have been dropped a moment ago; nothing to do then.
                let _ = tx.send(arrived);
                true
            }
            None => false,
        }
    }

    /// Forgets `id`; `true` when it was still pending.
    pub(crate) fn remove(&self, id: &Id) -> bool {
        self.lock().waiters.remove(id).is_some()
    }

    /// Fails every pending request with `error`, and every later one too.
    pub(crate) fn close(&self, error: Error) {
        let waiters = {
            let mut inner = self.lock();
            inner.closed.get_or_insert(error.clone());
            std::mem::take(&mut inner.waiters)
        };
        for (_, (tx, lane)) in waiters {
            let _ = tx.send(Arrived {
                result: Err(error.clone()),
                lane,
                barrier: 0,
            });
        }
    }

    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.lock().waiters.is_empty()
    }
}

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
    rx: oneshot::Receiver<Arrived>,
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
        rx: oneshot::Receiver<Arrived>,
        decode: fn(RawJson) -> Result<T, Error>,
    ) -> Self {
        // Work in a lane that waits for a response must not be left waiting behind a reader
        // that paused on a full lane.
        let in_lane = lanes::in_lane();
        if in_lane {
            conn.shared().lanes.begin_awaiting();
        }
        PendingResponse {
            state: Ok(Sent {
                guard: CancelOnDrop {
                    conn: conn.clone(),
                    id,
                    armed: true,
                    in_lane,
                },
                method,
                rx,
                sent_at: Instant::now(),
                timeout: conn.shared().default_timeout,
            }),
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
                rx,
                sent_at,
                timeout,
            } = self.state?;
            let arrived = match timeout {
                None => rx.await,
                Some(after) => match tokio::time::timeout_at(sent_at + after, rx).await {
                    Ok(arrived) => arrived,
                    // The guard cancels the request at the peer as it drops.
                    Err(_) => return Err(Error::timeout(&method, after)),
                },
            };
            guard.armed = false;
            let arrived = arrived
                .map_err(|_| Error::peer_closed(&guard.conn.shared().name, "connection dropped"))?;
            if !lanes::in_lane() {
                guard
                    .conn
                    .shared()
                    .lanes
                    .reached(arrived.lane, arrived.barrier)
                    .await;
            }
            arrived.result.and_then(decode)
        })
    }
}

/// Sends `$/cancel_request` for a request that is still pending when this drops.
struct CancelOnDrop {
    conn: Connection,
    id: Id,
    armed: bool,
    /// Counted as awaited by work in a lane.
    in_lane: bool,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if self.in_lane {
            self.conn.shared().lanes.end_awaiting();
        }
        if self.armed && self.conn.shared().pending.remove(&self.id) {
            self.conn.send_cancel(&self.id);
        }
    }
}

/// Shared by typed and raw requests: the decode step for a raw result.
pub(crate) fn keep_raw(raw: RawJson) -> Result<RawJson, Error> {
    Ok(raw)
}

/// The decode step for a typed result: a result that does not fit is an internal error (the
/// peer answered something else than the method promises), not invalid params.
pub(crate) fn decode_typed<T: serde::de::DeserializeOwned>(raw: RawJson) -> Result<T, Error> {
    serde_json::from_slice(raw.as_bytes()).map_err(|e| {
        Error::internal_error(format!(
            "the peer's response does not match the expected type: {e}"
        ))
        .with_data(raw.as_str())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_fails_current_and_future_requests() {
        let table = PendingTable::default();
        let (tx, mut rx) = oneshot::channel();
        table.insert(Id::Number(1), 0, tx).unwrap();
        assert!(!table.is_empty());
        table.close(Error::peer_closed("peer", "EOF"));
        assert!(rx.try_recv().unwrap().result.unwrap_err().is_peer_closed());
        let (tx, _rx) = oneshot::channel();
        assert!(
            table
                .insert(Id::Number(2), 0, tx)
                .unwrap_err()
                .is_peer_closed()
        );
        assert!(table.is_empty());
    }

    #[test]
    fn unknown_ids_are_not_resolved() {
        let table = PendingTable::default();
        let lanes = Lanes::new(1, 1024);
        assert!(!table.resolve(&Id::Number(9), Ok(RawJson::null()), &lanes));
    }
}
