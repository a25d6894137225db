//! Requests this side sent and is waiting on: the pending table, and the slot where a response
//! meets the task awaiting it.
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
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use super::hold::{self, Hold, Marks};
use super::{Error, Id, RawJson};
use crate::lock::lock;

/// Where one response meets the task that awaits it.
#[derive(Debug, Default)]
pub(crate) struct Slot {
    state: Mutex<SlotState>,
}

#[derive(Default)]
struct SlotState {
    arrived: Option<Result<RawJson, Error>>,
    waker: Option<Waker>,
    /// The marks of the task that awaits the response, when that task is marked: the one that
    /// last polled it, or until then the one that sent the request (or was handed it).
    awaiter: Option<Arc<Marks>>,
    /// Whether the response is awaited by work running in a lane: as last polled, or as
    /// created (or handed over, see [`Slot::hand_to`]) when it was never polled yet.
    in_lane: bool,
    /// Nobody awaits the response any more.
    dropped: bool,
    /// Takes the response in its lane's turn instead of a task ([`Slot::hand_over`]).
    hook: Option<Hook>,
}

/// What takes a response in its lane's turn: see [`Slot::hand_over`].
pub(crate) type Hook = Box<dyn FnOnce(Result<RawJson, Error>) + Send>;

impl std::fmt::Debug for SlotState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SlotState")
            .field("arrived", &self.arrived.is_some())
            .field("in_lane", &self.in_lane)
            .field("dropped", &self.dropped)
            .field("handed_over", &self.hook.is_some())
            .finish_non_exhaustive()
    }
}

impl Slot {
    /// A slot for a request about to be sent from here.
    /// The sending task awaits it, until it polls or hands it over: a response that comes
    /// before its first poll holds the lane for it all the same.
    pub(crate) fn for_request() -> Arc<Slot> {
        let slot = Slot::new(hold::in_lane());
        lock(&slot.state).awaiter = hold::current();
        slot
    }

    fn new(in_lane: bool) -> Arc<Slot> {
        Arc::new(Slot {
            state: Mutex::new(SlotState {
                in_lane,
                ..SlotState::default()
            }),
        })
    }

    /// The response goes to `hook`, called in the response's lane's turn (after what its peer
    /// sent before it, before anything it sent after): for an answer passed on at once, which
    /// needs neither a task nor a hold. Called with the connection's error if it ends first.
    pub(crate) fn hand_over(&self, hook: Hook) {
        let mut state = lock(&self.state);
        state.hook = Some(hook);
        state.in_lane = false;
        state.awaiter = None;
    }

    /// Whether the response is awaited by work running in a lane (and must be delivered at
    /// once, not in the lane's turn).
    pub(crate) fn awaited_in_lane(&self) -> bool {
        lock(&self.state).in_lane
    }

    /// Hands the response over. When the awaiting task is marked, `hold()` is kept until that
    /// task has acted on the response (see the `hold` module): returns whether it was.
    pub(crate) fn fill(&self, result: Result<RawJson, Error>, hold: impl FnOnce() -> Hold) -> bool {
        let mut state = lock(&self.state);
        if let Some(hook) = state.hook.take() {
            drop(state);
            hook(result);
            return false;
        }
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
        let mut state = lock(&self.state);
        if let Some(hook) = state.hook.take() {
            drop(state);
            hook(result);
            return;
        }
        state.arrived = Some(result);
        let waker = state.waker.take();
        drop(state);
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    pub(crate) fn poll_take(&self, cx: &mut Context<'_>) -> Poll<Result<RawJson, Error>> {
        let mut state = lock(&self.state);
        if let Some(result) = state.arrived.take() {
            return Poll::Ready(result);
        }
        state.waker = Some(cx.waker().clone());
        state.awaiter = hold::current();
        state.in_lane = hold::in_lane();
        Poll::Pending
    }

    /// Whether a task has polled for the response yet.
    #[cfg(test)]
    pub(crate) fn has_awaiter(&self) -> bool {
        let state = lock(&self.state);
        state.waker.is_some()
    }

    pub(crate) fn drop_receiver(&self) {
        let mut state = lock(&self.state);
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
    /// Registers `id`, sent on `lane`'s behalf; fails with the closing error when the
    /// connection has ended.
    pub(crate) fn insert(&self, id: Id, lane: usize, slot: Arc<Slot>) -> Result<(), Error> {
        let mut inner = lock(&self.inner);
        if let Some(e) = &inner.closed {
            return Err(e.clone());
        }
        inner.waiters.insert(id, (slot, lane));
        Ok(())
    }

    /// Takes the waiter of `id` out of the table, with the lane of the request; `None` when
    /// nobody waits on `id`.
    pub(crate) fn take(&self, id: &Id) -> Option<(Arc<Slot>, usize)> {
        lock(&self.inner).waiters.remove(id)
    }

    /// Forgets `id`; `true` when it was still pending.
    pub(crate) fn remove(&self, id: &Id) -> bool {
        lock(&self.inner).waiters.remove(id).is_some()
    }

    /// Fails every pending request with `error`, and every later one too.
    pub(crate) fn close(&self, error: Error) {
        let waiters = {
            let mut inner = lock(&self.inner);
            inner.closed.get_or_insert(error.clone());
            std::mem::take(&mut inner.waiters)
        };
        for (_, (slot, _)) in waiters {
            slot.fill_now(Err(error.clone()));
        }
    }

    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        lock(&self.inner).waiters.is_empty()
    }
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
