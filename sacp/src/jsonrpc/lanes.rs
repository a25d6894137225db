//! Lanes: where a connection deals with what it receives, in arrival order, without letting a
//! handler that waits hold up anything it should not.
//!
//! A connection has one lane or more (a proxy has two: what comes from its client and what
//! comes from its successor). Each received request or notification is admitted to one lane,
//! in arrival order, as a [`Dispatch`](super::Dispatch):
//! - **in turn** (notifications, forwarding): the lane runs it to the end before it starts the
//!   next item, so notification handlers of one lane run one after another, in order;
//! - **started** (request handlers): when the lane reaches it, it starts in a task of its own and
//!   the lane goes on at once. A request handler never holds up its lane.
//!
//! An item reached while the lane is idle runs at once, inside the connection's reader, until it
//! first has to wait; only then does the lane get a worker task, which runs it on and then
//! everything queued behind it. Streams of notifications that are forwarded or transformed
//! without waiting never leave the reader.
//!
//! **Responses** are items too: a response to a request sent on a lane's behalf is **delivered**
//! in that lane's turn, so whoever awaits it gets it after everything its peer sent before it
//! was forwarded or handled (spec §2). A delivered response then **holds** the lane until the
//! task that got it has acted on it (see the `hold` module): what that task sends meanwhile —
//! its answer built on the response — goes out before anything its peer sent after the
//! response. Work running *in* a lane (a notification handler) is not held to this: the lane
//! cannot move while it waits, so it gets its responses as they arrive, from the reader.
//!
//! Each lane counts the items admitted and the items done (an item that is started counts as
//! done once started; a delivered response once its hold is released).

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

use super::budget::{Budget, Permit};
use super::connection::Connection;
use super::pending::Slot;
use super::{Error, RawJson};

pub(crate) type BoxFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

tokio::task_local! {
    /// Set while work runs in a lane.
    static IN_LANE: ();
}

/// Whether the calling code runs as an in-turn item of a lane.
pub(crate) fn in_lane() -> bool {
    IN_LANE.try_with(|_| ()).is_ok()
}

/// Marks `work` as running in a lane, wherever it is polled.
pub(crate) fn scoped(work: impl Future<Output = ()> + Send + 'static) -> BoxFuture {
    Box::pin(IN_LANE.scope((), work))
}

/// One item of a lane.
pub(crate) struct Item {
    pub(crate) work: Work,
    /// The share of the lane's budget the item holds until it is done.
    pub(crate) permit: Option<Permit>,
}

/// What an item does when its turn comes.
pub(crate) enum Work {
    /// Runs to the end before the next item.
    InTurn(BoxFuture),
    /// Starts in a task of its own; the lane goes on at once.
    Start(BoxFuture),
    /// Hands a response to the task awaiting it, and holds the lane until that task has acted
    /// on it.
    Deliver(Arc<Slot>, Result<RawJson, Error>),
}

/// The lanes of a connection.
#[derive(Debug)]
pub(crate) struct Lanes {
    lanes: Box<[Lane]>,
    /// Requests awaited by work running in a lane: while there are any, the reader reads on
    /// past full lanes (their responses may be behind what it has not read).
    awaited_in_lanes: AtomicUsize,
    awaited: Notify,
    /// Set when the connection gave up on its lanes: nobody waits for them any more.
    abandoned: std::sync::atomic::AtomicBool,
}

struct Lane {
    state: Mutex<State>,
    /// Items admitted; written by the reader only.
    admitted: AtomicU64,
    /// Items done (or started).
    done: AtomicU64,
    /// Tasks waiting for `done` to reach a barrier.
    waiters: AtomicUsize,
    progress: Notify,
    budget: Budget,
}

impl std::fmt::Debug for Lane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lane")
            .field("admitted", &self.admitted)
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

#[derive(Default)]
struct State {
    /// A worker task runs the lane.
    busy: bool,
    queue: VecDeque<Item>,
}

impl Lanes {
    /// `count` lanes (at least one), each with a budget of `bytes`.
    pub(crate) fn new(count: usize, bytes: usize) -> Lanes {
        let lanes = (0..count.max(1))
            .map(|_| Lane {
                state: Mutex::new(State::default()),
                admitted: AtomicU64::new(0),
                done: AtomicU64::new(0),
                waiters: AtomicUsize::new(0),
                progress: Notify::new(),
                budget: Budget::new(bytes),
            })
            .collect();
        Lanes {
            lanes,
            awaited_in_lanes: AtomicUsize::new(0),
            awaited: Notify::new(),
            abandoned: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// The lane `index` (an index past the last names the first lane).
    fn lane(&self, index: usize) -> &Lane {
        self.lanes.get(index).unwrap_or(&self.lanes[0])
    }

    pub(crate) fn budget(&self, index: usize) -> &Budget {
        &self.lane(index).budget
    }

    /// Whether lane `index` has done everything admitted (so nothing waits in it). Exact when
    /// asked by the reader, the only one that admits.
    pub(crate) fn is_idle(&self, index: usize) -> bool {
        let lane = self.lane(index);
        lane.done.load(Ordering::SeqCst) >= lane.admitted.load(Ordering::SeqCst)
    }

    /// Counts an item that was dealt with as it arrived, in lane `index` (which was idle).
    pub(crate) fn count_done(&self, index: usize) {
        let lane = self.lane(index);
        lane.admitted.fetch_add(1, Ordering::SeqCst);
        lane.finish_one();
    }

    /// Items admitted but not done yet, in all lanes.
    pub(crate) fn backlog(&self) -> u64 {
        self.lanes
            .iter()
            .map(|l| {
                l.admitted
                    .load(Ordering::SeqCst)
                    .saturating_sub(l.done.load(Ordering::SeqCst))
            })
            .sum()
    }

    /// Completes once lane `index` has done `barrier` items.
    async fn reached(&self, index: usize, barrier: u64) {
        let lane = self.lane(index);
        let reached =
            || lane.done.load(Ordering::SeqCst) >= barrier || self.abandoned.load(Ordering::SeqCst);
        if reached() {
            return;
        }
        struct Waiting<'a>(&'a AtomicUsize);
        impl Drop for Waiting<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::SeqCst);
            }
        }
        lane.waiters.fetch_add(1, Ordering::SeqCst);
        let _waiting = Waiting(&lane.waiters);
        loop {
            let notified = lane.progress.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if reached() {
                return;
            }
            notified.await;
        }
    }

    /// Completes once every lane has done everything admitted so far.
    pub(crate) async fn idle(&self) {
        for (index, lane) in self.lanes.iter().enumerate() {
            self.reached(index, lane.admitted.load(Ordering::SeqCst))
                .await;
        }
    }

    /// Gives up on everything queued: the connection is ending. Waiters are released.
    pub(crate) fn abandon(&self) {
        self.abandoned.store(true, Ordering::SeqCst);
        for lane in self.lanes.iter() {
            let dropped = std::mem::take(&mut lock(&lane.state).queue);
            drop(dropped);
            lane.progress.notify_waiters();
        }
    }

    /// Records that work in a lane awaits a response (until [`Lanes::end_awaiting`]).
    pub(crate) fn begin_awaiting(&self) {
        self.awaited_in_lanes.fetch_add(1, Ordering::SeqCst);
        self.awaited.notify_waiters();
    }

    /// See [`Lanes::begin_awaiting`].
    pub(crate) fn end_awaiting(&self) {
        self.awaited_in_lanes.fetch_sub(1, Ordering::SeqCst);
    }

    /// Whether work in a lane awaits a response.
    pub(crate) fn awaited_in_lanes(&self) -> bool {
        self.awaited_in_lanes.load(Ordering::SeqCst) > 0
    }

    /// Completes when work in a lane starts awaiting a response (check
    /// [`Lanes::awaited_in_lanes`] after enabling it).
    pub(crate) fn awaited(&self) -> tokio::sync::futures::Notified<'_> {
        self.awaited.notified()
    }
}

impl Lane {
    fn finish_one(&self) {
        self.done.fetch_add(1, Ordering::SeqCst);
        if self.waiters.load(Ordering::SeqCst) > 0 {
            self.progress.notify_waiters();
        }
    }
}

fn lock(state: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    state.lock().unwrap_or_else(|e| e.into_inner())
}

/// Admits `item` to lane `index` of `conn`. Called by the reader only, in arrival order.
pub(crate) async fn admit(conn: &Connection, index: usize, item: Item) {
    let lanes = &conn.shared().lanes;
    let lane = lanes.lane(index);
    lane.admitted.fetch_add(1, Ordering::SeqCst);
    {
        let mut state = lock(&lane.state);
        if state.busy {
            state.queue.push_back(item);
            return;
        }
    }
    // Idle, and only the reader admits: nobody else touches the lane until it is marked busy.
    let Item { work, permit } = item;
    match work {
        Work::Start(work) => {
            start(conn, work);
            drop(permit);
            lane.finish_one();
        }
        Work::InTurn(mut work) => {
            let first =
                std::future::poll_fn(|cx| std::task::Poll::Ready(work.as_mut().poll(cx))).await;
            if first.is_ready() {
                drop(permit);
                lane.finish_one();
                return;
            }
            lock(&lane.state).busy = true;
            let item = Item {
                work: Work::InTurn(work),
                permit,
            };
            tokio::spawn(run(conn.clone(), index, item));
        }
        Work::Deliver(slot, result) => {
            // Busy before the hand-over: a hold may be released at once, on another thread.
            lock(&lane.state).busy = true;
            if !deliver(conn, index, &slot, result) {
                drop(permit);
                lane.finish_one();
                // Nothing was queued meanwhile: only the reader admits.
                lock(&lane.state).busy = false;
            }
        }
    }
}

/// Hands a response over; `true` when it holds the lane (see the `hold` module).
fn deliver(conn: &Connection, index: usize, slot: &Slot, result: Result<RawJson, Error>) -> bool {
    slot.fill(result, || {
        Box::new(LaneHold {
            conn: conn.clone(),
            index,
        })
    })
}

/// A lane held by a delivered response: dropping it lets the lane go on.
struct LaneHold {
    conn: Connection,
    index: usize,
}

impl Drop for LaneHold {
    fn drop(&mut self) {
        let lane = self.conn.shared().lanes.lane(self.index);
        lane.finish_one();
        let next = {
            let mut state = lock(&lane.state);
            let next = state.queue.pop_front();
            if next.is_none() {
                state.busy = false;
            }
            next
        };
        if let Some(next) = next
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(run(self.conn.clone(), self.index, next));
        }
    }
}

/// A lane's worker: runs `first`, then whatever queued behind it, until the lane is empty or a
/// delivered response holds it.
async fn run(conn: Connection, index: usize, first: Item) {
    let shared = conn.shared();
    let lane = shared.lanes.lane(index);
    let mut item = first;
    loop {
        let Item { work, permit } = item;
        match work {
            Work::Start(work) => start(&conn, work),
            Work::InTurn(work) => {
                tokio::select! {
                    biased;
                    () = shared.abandon.cancelled() => return,
                    () = work => {}
                }
            }
            Work::Deliver(slot, result) => {
                if deliver(&conn, index, &slot, result) {
                    // The hold goes on from here when it is released.
                    return;
                }
            }
        }
        drop(permit);
        lane.finish_one();
        let mut state = lock(&lane.state);
        match state.queue.pop_front() {
            Some(next) => item = next,
            None => {
                state.busy = false;
                return;
            }
        }
    }
}

/// Starts a request handler in a task of its own; it stops when the connection abandons its
/// work. Its polls are marked (see the `hold` module).
fn start(conn: &Connection, work: BoxFuture) {
    let abandon = conn.shared().abandon.clone();
    tokio::spawn(super::hold::Marked::new(async move {
        tokio::select! {
            biased;
            () = abandon.cancelled() => {}
            () = work => {}
        }
    }));
}
