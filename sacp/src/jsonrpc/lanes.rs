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
//! **Barriers.** Each lane counts the items admitted and the items done (an item that is started
//! counts as done once started). A response that arrives is tagged with its lane's admitted
//! count at that moment; whoever awaits it gets it only once the lane has done that many, so
//! what a request handler sends after awaiting a response goes out after everything its peer
//! sent before the response has been forwarded or handled (spec §2). Work running *in* a lane
//! (a notification handler) is not held to this: the lane it would wait for cannot move while
//! it waits, so it gets its responses as they arrive.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use tokio::sync::Notify;

use super::budget::{Budget, Permit};
use super::connection::Connection;
use super::handler::Order;

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
    pub(crate) work: BoxFuture,
    pub(crate) order: Order,
    /// The share of the lane's budget the item holds until it is done.
    pub(crate) permit: Option<Permit>,
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

    /// How many items lane `index` has admitted so far: the barrier of a response arriving now.
    pub(crate) fn admitted(&self, index: usize) -> u64 {
        self.lane(index).admitted.load(Ordering::SeqCst)
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
    pub(crate) async fn reached(&self, index: usize, barrier: u64) {
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
    let Item {
        mut work,
        order,
        permit,
    } = item;
    match order {
        Order::Start => {
            start(conn, work);
            drop(permit);
            lane.finish_one();
        }
        Order::InTurn => {
            let first =
                std::future::poll_fn(|cx| std::task::Poll::Ready(work.as_mut().poll(cx))).await;
            if first.is_ready() {
                drop(permit);
                lane.finish_one();
                return;
            }
            lock(&lane.state).busy = true;
            let item = Item {
                work,
                order,
                permit,
            };
            tokio::spawn(run(conn.clone(), index, item));
        }
    }
}

/// A lane's worker: runs `first`, then whatever queued behind it, until the lane is empty.
async fn run(conn: Connection, index: usize, first: Item) {
    let shared = conn.shared();
    let lane = shared.lanes.lane(index);
    let mut item = first;
    loop {
        let Item {
            work,
            order,
            permit,
        } = item;
        match order {
            Order::Start => start(&conn, work),
            Order::InTurn => {
                tokio::select! {
                    biased;
                    () = shared.abandon.cancelled() => return,
                    () = work => {}
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
/// work.
fn start(conn: &Connection, work: BoxFuture) {
    let abandon = conn.shared().abandon.clone();
    tokio::spawn(async move {
        tokio::select! {
            biased;
            () = abandon.cancelled() => {}
            () = work => {}
        }
    });
}
