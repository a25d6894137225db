//! Requests this side sent and is waiting on: the pending table, the slot where a response
//! meets the task awaiting it, and the response future.
//!
//! The reader takes each response out of the table and delivers it in the turn of the lane
//! the request was sent for (the lane of the peer's side that answers it; see the `lanes`
//! module): after everything the peer sent before the response was handled or forwarded, and
//! — through a hold (see the `hold` module) — before anything it sent after the response is,
//! until the task that awaits it has acted on it. So a handler's answer built on
//! `request(..).await` goes out after the updates streamed ahead of the response and ahead of
//! the ones streamed behind it.
//!
//! Work running *in* a lane (a notification handler) gets its responses as they arrive,
//! straight from the reader: the lane cannot move while it waits, so a delivery in the lane's
//! turn would wait for ever. It also tells the reader that it waits, so that the reader reads
//! on past full lanes: the response may be behind what it has not read yet.

use std::collections::HashMap;
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use tokio::time::Instant;

use super::connection::Connection;
use super::hold::{self, Hold, Marks};
use super::lanes;
use super::{Error, Id, RawJson};

/// Where one response meets the task that awaits it.
#[derive(Debug, Default)]
pub(crate) struct Slot {
    state: Mutex<SlotState>,
}

#[derive(Debug, Default)]
struct SlotState {
    arrived: Option<Result<RawJson, Error>>,
    waker: Option<Waker>,
    /// The marks of the task that last polled for the response, when that task is marked.
    awaiter: Option<Arc<Marks>>,
    /// Whether the response is awaited by work running in a lane: as last polled, or as
    /// created when it was never polled yet.
    in_lane: bool,
    /// Nobody awaits the response any more.
    dropped: bool,
}

impl Slot {
    fn new(in_lane: bool) -> Arc<Slot> {
        Arc::new(Slot {
            state: Mutex::new(SlotState {
                in_lane,
                ..SlotState::default()
            }),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, SlotState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether the response is awaited by work running in a lane (and must be delivered at
    /// once, not in the lane's turn).
    pub(crate) fn awaited_in_lane(&self) -> bool {
        self.lock().in_lane
    }

    /// Hands the response over. When the awaiting task is marked, `hold()` is kept until that
    /// task has acted on the response (see the `hold` module): returns whether it was.
    pub(crate) fn fill(&self, result: Result<RawJson, Error>, hold: impl FnOnce() -> Hold) -> bool {
        let mut state = self.lock();
        if state.dropped {
            return false;
        }
        // Taken before the task is woken: the hold then waits for a poll that sees it.
        let held = match &state.awaiter {
            Some(marks) => {
                marks.hold(hold());
                true
            }
            None => false,
        };
        state.arrived = Some(result);
        let waker = state.waker.take();
        drop(state);
        if let Some(waker) = waker {
            waker.wake();
        }
        held
    }

    /// Hands the response over with no hold.
    pub(crate) fn fill_now(&self, result: Result<RawJson, Error>) {
        let mut state = self.lock();
        state.arrived = Some(result);
        let waker = state.waker.take();
        drop(state);
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    fn poll_take(&self, cx: &mut Context<'_>) -> Poll<Result<RawJson, Error>> {
        let mut state = self.lock();
        if let Some(result) = state.arrived.take() {
            return Poll::Ready(result);
        }
        state.waker = Some(cx.waker().clone());
        state.awaiter = hold::current();
        state.in_lane = lanes::in_lane();
        Poll::Pending
    }

    fn drop_receiver(&self) {
        let mut state = self.lock();
        state.dropped = true;
        state.awaiter = None;
    }
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
    waiters: HashMap<Id, (Arc<Slot>, usize)>,
}

impl PendingTable {
    fn lock(&self) -> std::sync::MutexGuard<'_, PendingInner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers `id`, sent on `lane`'s behalf; fails with the closing error when the
    /// connection has ended.
    pub(crate) fn insert(&self, id: Id, lane: usize, slot: Arc<Slot>) -> Result<(), Error> {
        let mut inner = self.lock();
        if let Some(e) = &inner.closed {
            return Err(e.clone());
        }
        inner.waiters.insert(id, (slot, lane));
        Ok(())
    }

    /// Takes the waiter of `id` out of the table, with the lane of the request; `None` when
    /// nobody waits on `id`.
    pub(crate) fn take(&self, id: &Id) -> Option<(Arc<Slot>, usize)> {
        self.lock().waiters.remove(id)
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
        for (_, (slot, _)) in waiters {
            slot.fill_now(Err(error.clone()));
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
    /// A new slot for a request about to be sent.
    pub(crate) fn slot() -> Arc<Slot> {
        Slot::new(lanes::in_lane())
    }

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
        if polled.is_pending() && !self.counted && lanes::in_lane() {
            // Work in a lane that waits for a response must not be left waiting behind a
            // reader that paused on a full lane.
            self.counted = true;
            self.conn.shared().lanes.begin_awaiting();
        }
        polled
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.slot.drop_receiver();
        if self.counted {
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
        let slot = Slot::new(false);
        table.insert(Id::Number(1), 0, slot.clone()).unwrap();
        assert!(!table.is_empty());
        table.close(Error::peer_closed("peer", "EOF"));
        let mut cx = Context::from_waker(Waker::noop());
        match slot.poll_take(&mut cx) {
            Poll::Ready(result) => assert!(result.unwrap_err().is_peer_closed()),
            Poll::Pending => panic!("the closing error was not delivered"),
        }
        assert!(
            table
                .insert(Id::Number(2), 0, Slot::new(false))
                .unwrap_err()
                .is_peer_closed()
        );
        assert!(table.is_empty());
    }

    #[test]
    fn unknown_ids_are_not_taken() {
        let table = PendingTable::default();
        assert!(table.take(&Id::Number(9)).is_none());
    }

    #[test]
    fn a_dropped_receiver_takes_no_hold() {
        let slot = Slot::new(false);
        slot.drop_receiver();
        assert!(!slot.fill(Ok(RawJson::null()), || panic!("no hold for nobody")));
    }
}
