//! Lanes: where a connection deals with what it receives, in arrival order, without letting a
//! handler that waits hold up anything it should not.
//!
//! A connection has one lane or more (a proxy has two: what comes from its client and what
//! comes from its successor), named by the handler's [`Lane`] type. Each received request or
//! notification is admitted to one lane, in arrival order, as the [`Work`](super::Work) its
//! handler made of it:
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
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::budget::{Budget, Permit};
use super::hold::Marked;
pub(crate) use super::hold::scoped;
use super::pending::Slot;
use super::{BoxFuture, Error, RawJson};
use crate::lock::lock;

/// The lanes a handler sorts what it receives into: a small `Copy` type with one value per
/// lane. Messages of different lanes never wait for each other; messages of one lane are dealt
/// with in arrival order.
///
/// `()` is the one lane of a handler that keeps a single order.
pub trait Lane: Copy + Send + Sync + 'static {
    /// How many lanes there are (at least one).
    const COUNT: usize;

    /// The first lane: where a handler's defaults put what they do.
    const FIRST: Self;

    /// This lane's index, below [`Lane::COUNT`].
    fn index(self) -> usize;
}

impl Lane for () {
    const COUNT: usize = 1;
    const FIRST: Self = ();

    fn index(self) -> usize {
        0
    }
}

/// One item of a lane, with the share of the lane's budget it holds until it is done.
pub(crate) enum Item {
    /// Runs to the end before the next item.
    InTurn(BoxFuture, Option<Permit>),
    /// Starts in a task of its own; the lane goes on at once.
    Start(BoxFuture, Option<Permit>),
    /// Hands a response to the task awaiting it, and holds the lane until that task has acted
    /// on it.
    Deliver(Arc<Slot>, Result<RawJson, Error>),
}

/// The lanes of a connection.
#[derive(Debug)]
pub(crate) struct Lanes {
    lanes: Box<[LaneState]>,
    /// Requests awaited by work running in a lane: while there are any, the reader reads on
    /// past full lanes (their responses may be behind what it has not read).
    awaited_in_lanes: AtomicUsize,
    awaited: Notify,
    /// Fired when the connection gives up on its lanes and on the tasks tied to them: nobody
    /// waits for them any more.
    abandon: CancellationToken,
    /// Work left for after an answer ([`Lanes::spawn_lingering`]) still running: the end of
    /// the peer's stream gives it the grace that requests get.
    lingering: AtomicUsize,
    lingered: Notify,
}

struct LaneState {
    state: Mutex<State>,
    /// Items admitted; written by the reader only.
    admitted: AtomicU64,
    /// Items done (or started).
    done: AtomicU64,
    /// Tasks waiting for `done` to reach a count.
    waiters: AtomicUsize,
    progress: Notify,
    budget: Budget,
}

impl std::fmt::Debug for LaneState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lane")
            .field("admitted", &self.admitted)
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

#[derive(Default)]
struct State {
    /// A worker task runs the lane, or a delivered response holds it.
    busy: bool,
    queue: VecDeque<Item>,
}

impl Lanes {
    /// `count` lanes (at least one), each with a budget of `bytes`.
    pub(crate) fn new(count: usize, bytes: usize) -> Lanes {
        let lanes = (0..count.max(1))
            .map(|_| LaneState {
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
            abandon: CancellationToken::new(),
            lingering: AtomicUsize::new(0),
            lingered: Notify::new(),
        }
    }

    /// The lane `index`. A handler's [`Lane`] type names only its own lanes; an index past the
    /// last (a lane of another handler type) is a bug in the caller, reported in debug builds
    /// and taken as the last lane otherwise.
    fn lane(&self, index: usize) -> &LaneState {
        debug_assert!(
            index < self.lanes.len(),
            "lane {index} of {}",
            self.lanes.len()
        );
        &self.lanes[index.min(self.lanes.len() - 1)]
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

    /// Completes once lane `index` has done `count` items (or the lanes were abandoned).
    async fn reached(&self, index: usize, count: u64) {
        let lane = self.lane(index);
        let reached = || lane.done.load(Ordering::SeqCst) >= count || self.abandon.is_cancelled();
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

    /// Gives up on everything queued and running: the connection is ending. Waiters are
    /// released, work in lanes and started from them stops.
    pub(crate) fn abandon(&self) {
        self.abandon.cancel();
        for lane in self.lanes.iter() {
            let dropped = std::mem::take(&mut lock(&lane.state).queue);
            drop(dropped);
            lane.progress.notify_waiters();
        }
    }

    /// Fired by [`Lanes::abandon`].
    pub(crate) fn abandoned(&self) -> &CancellationToken {
        &self.abandon
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

    /// Admits `item` to lane `index`. Called by the reader only, in arrival order.
    pub(crate) async fn admit(self: &Arc<Self>, index: usize, item: Item) {
        let lane = self.lane(index);
        lane.admitted.fetch_add(1, Ordering::SeqCst);
        {
            let mut state = lock(&lane.state);
            if state.busy {
                state.queue.push_back(item);
                return;
            }
        }
        // Idle, and only the reader admits: nobody else touches the lane until it is marked
        // busy.
        match item {
            Item::Start(work, permit) => {
                self.spawn(work);
                drop(permit);
                lane.finish_one();
            }
            Item::InTurn(mut work, permit) => {
                let first =
                    std::future::poll_fn(|cx| std::task::Poll::Ready(work.as_mut().poll(cx))).await;
                if first.is_ready() {
                    drop(permit);
                    lane.finish_one();
                    return;
                }
                lock(&lane.state).busy = true;
                tokio::spawn(self.clone().run(index, Item::InTurn(work, permit)));
            }
            Item::Deliver(slot, result) => {
                // Busy before the hand-over: a hold may be released at once, on another thread.
                lock(&lane.state).busy = true;
                if !self.deliver(index, &slot, result) {
                    lane.finish_one();
                    // Nothing was queued meanwhile: only the reader admits.
                    lock(&lane.state).busy = false;
                }
            }
        }
    }

    /// Hands a response over; `true` when it holds the lane (see the `hold` module).
    fn deliver(
        self: &Arc<Self>,
        index: usize,
        slot: &Slot,
        result: Result<RawJson, Error>,
    ) -> bool {
        slot.fill(result, || {
            Box::new(LaneHold {
                lanes: self.clone(),
                index,
            })
        })
    }

    /// A lane's worker: runs `first`, then whatever queued behind it, until the lane is empty
    /// or a delivered response holds it.
    async fn run(self: Arc<Self>, index: usize, first: Item) {
        let lane = self.lane(index);
        let mut item = first;
        loop {
            let permit = match item {
                Item::Start(work, permit) => {
                    self.spawn(work);
                    permit
                }
                Item::InTurn(work, permit) => {
                    tokio::select! {
                        biased;
                        () = self.abandon.cancelled() => return,
                        () = work => {}
                    }
                    permit
                }
                Item::Deliver(slot, result) => {
                    if self.deliver(index, &slot, result) {
                        // The hold goes on from here when it is released.
                        return;
                    }
                    None
                }
            };
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

    /// [`Lanes::spawn`], for work a request leaves for after its answer (a v2 turn, say): the
    /// end of the peer's stream waits for it as for a request still being handled (within
    /// the grace; see [`Lanes::lingered`]).
    pub(crate) fn spawn_lingering(
        self: &Arc<Self>,
        work: impl Future<Output = ()> + Send + 'static,
    ) {
        self.lingering.fetch_add(1, Ordering::SeqCst);
        let lanes = self.clone();
        self.spawn(async move {
            /// Counts the work done however it ends (finished, or dropped when abandoned).
            struct Done(Arc<Lanes>);
            impl Drop for Done {
                fn drop(&mut self) {
                    if self.0.lingering.fetch_sub(1, Ordering::SeqCst) == 1 {
                        self.0.lingered.notify_waiters();
                    }
                }
            }
            let _done = Done(lanes);
            work.await;
        });
    }

    /// Completes once no work spawned with [`Lanes::spawn_lingering`] is running.
    pub(crate) async fn lingered(&self) {
        loop {
            let notified = self.lingered.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.lingering.load(Ordering::SeqCst) == 0 {
                return;
            }
            notified.await;
        }
    }

    /// Runs `work` (a request handler, background work) in a task of its own, whose polls are
    /// marked (see the `hold` module), until it ends or the lanes are abandoned.
    pub(crate) fn spawn(&self, work: impl Future<Output = ()> + Send + 'static) {
        let abandon = self.abandon.clone();
        tokio::spawn(Marked::new(async move {
            tokio::select! {
                biased;
                () = abandon.cancelled() => {}
                () = work => {}
            }
        }));
    }
}

impl LaneState {
    fn finish_one(&self) {
        self.done.fetch_add(1, Ordering::SeqCst);
        if self.waiters.load(Ordering::SeqCst) > 0 {
            self.progress.notify_waiters();
        }
    }
}

/// A lane held by a delivered response: dropping it lets the lane go on.
struct LaneHold {
    lanes: Arc<Lanes>,
    index: usize,
}

impl Drop for LaneHold {
    fn drop(&mut self) {
        let lane = self.lanes.lane(self.index);
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
            runtime.spawn(self.lanes.clone().run(self.index, next));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use tokio::sync::oneshot;

    use super::*;
    use crate::jsonrpc::hold::Marked;

    /// A log the items write to, in the order they ran.
    #[derive(Clone, Default)]
    struct Log(Arc<Mutex<Vec<String>>>);

    impl Log {
        fn push(&self, entry: impl Into<String>) {
            lock(&self.0).push(entry.into());
        }

        fn entries(&self) -> Vec<String> {
            lock(&self.0).clone()
        }
    }

    /// An in-turn item that logs `name` once `gate` (if any) opens.
    fn item(log: &Log, name: &str, gate: Option<oneshot::Receiver<()>>) -> Item {
        let (log, name) = (log.clone(), name.to_owned());
        Item::InTurn(
            Box::pin(async move {
                if let Some(gate) = gate {
                    let _ = gate.await;
                }
                log.push(name);
            }),
            None,
        )
    }

    async fn settled(lanes: &Lanes) {
        tokio::time::timeout(std::time::Duration::from_secs(10), lanes.idle())
            .await
            .expect("the lanes settle");
    }

    #[tokio::test]
    async fn items_of_a_lane_run_in_order_and_one_that_waits_holds_the_next() {
        let lanes = Arc::new(Lanes::new(1, 1 << 20));
        let log = Log::default();
        let (open, gate) = oneshot::channel();
        lanes.admit(0, item(&log, "first", Some(gate))).await;
        lanes.admit(0, item(&log, "second", None)).await;
        assert!(!lanes.is_idle(0), "the first waits, the second behind it");
        assert_eq!(lanes.backlog(), 2);
        assert!(log.entries().is_empty());
        open.send(()).unwrap();
        settled(&lanes).await;
        assert_eq!(log.entries(), ["first", "second"]);
        assert_eq!(lanes.backlog(), 0);
    }

    #[tokio::test]
    async fn an_item_that_needs_no_wait_runs_at_once_in_the_admitting_call() {
        let lanes = Arc::new(Lanes::new(1, 1 << 20));
        let log = Log::default();
        lanes.admit(0, item(&log, "now", None)).await;
        assert_eq!(log.entries(), ["now"]);
        assert!(lanes.is_idle(0));
        lanes.count_done(0);
        assert!(lanes.is_idle(0), "counted as admitted and done");
    }

    #[tokio::test]
    async fn a_started_item_does_not_hold_its_lane_and_lanes_do_not_wait_for_each_other() {
        let lanes = Arc::new(Lanes::new(2, 1 << 20));
        let log = Log::default();
        let (open, gate) = oneshot::channel();
        let (ran, run) = oneshot::channel();
        let started = {
            let log = log.clone();
            Box::pin(async move {
                let _ = gate.await;
                log.push("started");
                let _ = ran.send(());
            })
        };
        lanes.admit(0, Item::Start(started, None)).await;
        lanes.admit(0, item(&log, "after the start", None)).await;
        let (_hold, blocked) = oneshot::channel::<()>();
        lanes.admit(1, item(&log, "never", Some(blocked))).await;
        lanes.admit(0, item(&log, "lane 0 goes on", None)).await;
        assert_eq!(log.entries(), ["after the start", "lane 0 goes on"]);
        assert!(lanes.is_idle(0));
        assert!(!lanes.is_idle(1));
        open.send(()).unwrap();
        tokio::time::timeout(std::time::Duration::from_secs(10), run)
            .await
            .expect("the started item runs")
            .unwrap();
        assert_eq!(log.entries()[2], "started");
    }

    #[tokio::test]
    async fn a_delivered_response_holds_its_lane_until_its_task_has_acted_on_it() {
        let lanes = Arc::new(Lanes::new(1, 1 << 20));
        let log = Log::default();
        let slot = Slot::for_request();
        // A marked task awaits the response, logs it, then waits for something else.
        let (then, later) = oneshot::channel::<()>();
        let task = tokio::spawn(Marked::new({
            let (slot, log) = (slot.clone(), log.clone());
            async move {
                let answer = std::future::poll_fn(|cx| slot.poll_take(cx)).await;
                log.push(format!("answer {}", answer.unwrap()));
                let _ = later.await;
            }
        }));
        // Let the task run until it waits for the response (this runtime has one thread).
        while !slot.has_awaiter() {
            tokio::task::yield_now().await;
        }
        lanes
            .admit(
                0,
                Item::Deliver(slot, Ok(RawJson::from_string("1").unwrap())),
            )
            .await;
        lanes.admit(0, item(&log, "what came after it", None)).await;
        settled(&lanes).await;
        assert_eq!(log.entries(), ["answer 1", "what came after it"]);
        drop(then);
        task.await.unwrap();
    }

    #[tokio::test]
    async fn a_response_nobody_awaits_any_more_holds_nothing() {
        let lanes = Arc::new(Lanes::new(1, 1 << 20));
        let log = Log::default();
        let slot = Slot::for_request();
        slot.drop_receiver();
        lanes
            .admit(0, Item::Deliver(slot, Ok(RawJson::null())))
            .await;
        assert!(lanes.is_idle(0));
        lanes.admit(0, item(&log, "next", None)).await;
        assert_eq!(log.entries(), ["next"]);
    }

    #[tokio::test]
    async fn abandoning_drops_what_waits_and_releases_the_waiters() {
        let lanes = Arc::new(Lanes::new(1, 1 << 20));
        let log = Log::default();
        let (_open, gate) = oneshot::channel::<()>();
        lanes.admit(0, item(&log, "stuck", Some(gate))).await;
        lanes.admit(0, item(&log, "queued", None)).await;
        let idle = tokio::spawn({
            let lanes = lanes.clone();
            async move { lanes.idle().await }
        });
        lanes.abandon();
        tokio::time::timeout(std::time::Duration::from_secs(10), idle)
            .await
            .expect("waiters are released")
            .unwrap();
        assert!(lanes.abandoned().is_cancelled());
        assert!(log.entries().is_empty(), "{:?}", log.entries());
    }
}
