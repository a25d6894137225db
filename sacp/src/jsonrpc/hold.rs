//! Holds: how a response keeps its place in its peer's stream after it was delivered; and what
//! the task being polled is (marked, or work running in a lane), which decides how a response
//! reaches it.
//!
//! A response is delivered in its lane's turn (see the `lanes` module), so it never overtakes
//! what its peer sent before it. The other half of spec §2 is that nothing its peer sent
//! *after* it may overtake what the receiving handler makes of it — its own answer, say,
//! built from the response. So a delivered response **holds** its lane: the lane takes nothing
//! more until the task that received it has acted on it, that is, until that task next waits
//! for something other than room to send. What the handler sends before that point — its
//! answer, a transformed copy — is queued ahead of everything the lane does next.
//!
//! Tasks the connection runs (request handlers, [`Connection::spawn`]ed work) are
//! [`Marked`]: their polls are counted, and a hold taken for one of them is released at the
//! end of its first poll that began after the delivery, unless that poll ended waiting for
//! room in the outgoing queue (then at the end of a later one: the writer always makes room).
//! A hold taken for a task that ended is released at once. A response awaited outside such a
//! task (a task of the user's own) holds nothing: it only keeps its place behind what came
//! before it.
//!
//! [`Connection::spawn`]: super::Connection::spawn

use crate::lock::lock;
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

/// Something released when dropped: a lane held for a delivered response.
pub(crate) type Hold = Box<dyn Send>;

/// The poll count of one task, and the holds waiting for it.
#[derive(Default)]
pub(crate) struct Marks {
    /// Polls begun.
    polls: AtomicU64,
    /// Whether `state.holds` may be non-empty (skips the lock on most polls).
    holding: AtomicBool,
    state: Mutex<MarksState>,
}

impl std::fmt::Debug for Marks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Marks")
            .field("polls", &self.polls)
            .finish_non_exhaustive()
    }
}

#[derive(Default)]
struct MarksState {
    /// The task has ended: holds are released as they come.
    ended: bool,
    /// Each hold with the poll count when it was taken.
    holds: Vec<(u64, Hold)>,
}

impl Marks {
    /// Keeps `hold` until the end of this task's first poll that begins after this call.
    /// Call it before waking the task with what the hold is for.
    pub(crate) fn hold(&self, hold: Hold) {
        let mut state = lock(&self.state);
        if state.ended {
            drop(state);
            drop(hold);
            return;
        }
        state.holds.push((self.polls.load(Ordering::SeqCst), hold));
        self.holding.store(true, Ordering::SeqCst);
    }

    /// At the end of poll number `poll`: releases the holds taken before it began.
    fn poll_ended(&self, poll: u64) {
        if !self.holding.load(Ordering::SeqCst) {
            return;
        }
        let released: Vec<_> = {
            let mut state = lock(&self.state);
            let (due, kept) = std::mem::take(&mut state.holds)
                .into_iter()
                .partition(|(taken, _)| *taken < poll);
            state.holds = kept;
            if state.holds.is_empty() {
                self.holding.store(false, Ordering::SeqCst);
            }
            due
        };
        drop(released);
    }

    fn end(&self) {
        let released = {
            let mut state = lock(&self.state);
            state.ended = true;
            self.holding.store(false, Ordering::SeqCst);
            std::mem::take(&mut state.holds)
        };
        drop(released);
    }
}

tokio::task_local! {
    /// Set while work runs in a lane (see the `lanes` module).
    static IN_LANE: ();
}

/// Whether the calling code runs as an in-turn item of a lane: work that a response must reach
/// at once, since its lane cannot move while it waits.
pub(crate) fn in_lane() -> bool {
    IN_LANE.try_with(|_| ()).is_ok()
}

/// Marks `work` as running in a lane, wherever it is polled.
pub(crate) fn scoped(work: impl Future<Output = ()> + Send + 'static) -> super::BoxFuture {
    Box::pin(IN_LANE.scope((), work))
}

thread_local! {
    /// The marks of the task being polled on this thread, if it is [`Marked`].
    static CURRENT: RefCell<Option<Arc<Marks>>> = const { RefCell::new(None) };
    /// Set when the current poll waits for room to send.
    static WAITS_TO_SEND: Cell<bool> = const { Cell::new(false) };
}

/// The marks of the task being polled, if it is [`Marked`].
pub(crate) fn current() -> Option<Arc<Marks>> {
    CURRENT.with(|c| c.borrow().clone())
}

/// Says that the current poll ends waiting for room to send: its holds are kept.
pub(crate) fn waiting_to_send() {
    WAITS_TO_SEND.with(|w| w.set(true));
}

pin_project_lite::pin_project! {
    /// A task's future whose polls are counted (see the module docs).
    pub(crate) struct Marked<F> {
        marks: Arc<Marks>,
        #[pin]
        inner: F,
    }

    impl<F> PinnedDrop for Marked<F> {
        fn drop(this: Pin<&mut Self>) {
            this.marks.end();
        }
    }
}

impl<F> Marked<F> {
    pub(crate) fn new(inner: F) -> Self {
        Marked {
            marks: Arc::default(),
            inner,
        }
    }
}

impl<F: Future> Future for Marked<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        let poll = this.marks.polls.fetch_add(1, Ordering::SeqCst) + 1;
        let outer = CURRENT.with(|c| c.replace(Some(this.marks.clone())));
        let outer_waits = WAITS_TO_SEND.with(|w| w.replace(false));
        let result = this.inner.poll(cx);
        let waits_to_send = WAITS_TO_SEND.with(|w| w.replace(outer_waits));
        CURRENT.with(|c| *c.borrow_mut() = outer);
        if result.is_ready() {
            this.marks.end();
        } else if !waits_to_send {
            this.marks.poll_ended(poll);
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    struct Counted(Arc<AtomicUsize>);
    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[tokio::test]
    async fn a_hold_lasts_until_the_end_of_the_next_poll() {
        let released = Arc::new(AtomicUsize::new(0));
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let (marks_tx, marks_rx) = tokio::sync::oneshot::channel();
        let task = tokio::spawn(Marked::new(async move {
            let _ = marks_tx.send(current().expect("a marked task has marks"));
            let _ = rx.await;
            // Acting on the value: still inside the poll that took it.
            tokio::task::yield_now().await;
        }));
        let marks = marks_rx.await.unwrap();
        marks.hold(Box::new(Counted(released.clone())));
        assert_eq!(released.load(Ordering::SeqCst), 0);
        tx.send(()).unwrap();
        task.await.unwrap();
        assert_eq!(released.load(Ordering::SeqCst), 1);
        // After the end, a hold is released at once.
        marks.hold(Box::new(Counted(released.clone())));
        assert_eq!(released.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn a_poll_waiting_to_send_keeps_its_holds() {
        let released = Arc::new(AtomicUsize::new(0));
        let marks = Arc::new(Marks::default());
        marks.hold(Box::new(Counted(released.clone())));
        // A poll that began before the hold was taken releases nothing.
        marks.poll_ended(0);
        assert_eq!(released.load(Ordering::SeqCst), 0);
        let mut first = true;
        let task = Marked {
            marks: marks.clone(),
            inner: std::future::poll_fn(move |_| {
                if std::mem::take(&mut first) {
                    waiting_to_send();
                }
                Poll::<()>::Pending
            }),
        };
        let mut task = std::pin::pin!(task);
        let mut cx = Context::from_waker(std::task::Waker::noop());
        assert!(task.as_mut().poll(&mut cx).is_pending());
        assert_eq!(
            released.load(Ordering::SeqCst),
            0,
            "kept while waiting to send"
        );
        assert!(task.as_mut().poll(&mut cx).is_pending());
        assert_eq!(
            released.load(Ordering::SeqCst),
            1,
            "released by the next wait"
        );
    }
}
