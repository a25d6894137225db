//! What the proxy and agent runtimes share: handlers with `&mut self`, called in arrival
//! order, without letting any message overtake another on its way out.
//!
//! The connection calls its handler for each message in arrival order and polls the returned
//! future once at once (see [`crate::jsonrpc::Handler`]). Here each message meets one of three
//! fates:
//! - **handled** (the role [`takes`](Role::takes) it): if the handlers are idle, the handler
//!   runs right away; if one is running, the message waits in the queue, and the running
//!   handler's driver takes it next. Handlers therefore run one at a time, in arrival order.
//! - **forwarded / answered by default**: at once — unless something from the same side is
//!   still waiting in the queue, in which case it queues behind it, so it cannot overtake it.
//! - **answers** (to requests, handled or relayed): each message stream has an order, and an
//!   answer belongs in the stream going the other way. An answer to the client is sent only
//!   after the messages from the successor that were waiting in the queue when it was produced
//!   have been dealt with (and the other way round).
//!
//! This is what makes a proxy whose prompt handler awaits its successor, and which also
//! transforms the successor's `session/update`s, deliver every update before the prompt's
//! answer: the updates queue while the prompt handler waits; its answer queues behind them.
//!
//! The queue's driver is detached from the message that started it: cancelling that request
//! stops its own handler only (via its cancellation token), never the queue.

use std::collections::VecDeque;
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};

use crate::acp::Side;
use crate::incoming::{Incoming, Reply};
use crate::jsonrpc::{Error, PendingResponse, RawJson, Responder};

/// A set of handlers: a proxy's or an agent's.
pub(crate) trait Role: Send + 'static {
    type Cx: Clone + Send + Sync + 'static;

    fn takes(method: &str, from: Side) -> bool;

    fn dispatch(&mut self, message: Incoming, cx: &Self::Cx) -> impl Future<Output = ()> + Send;

    /// What happens to a message no handler takes: forwarded (possibly with an answer to
    /// relay) or answered by default.
    fn unhandled(message: Incoming, cx: &Self::Cx) -> Option<Relay>;
}

/// Where answers go: queued behind the messages they must not overtake, or out at once.
pub(crate) trait AnswerSink: Send + Sync {
    fn answer(&self, responder: Responder, result: Result<RawJson, Error>, to: Side);
}

enum Item<C> {
    Dispatch(Incoming, C),
    Forward(Incoming, C),
    Answer(Responder, Result<RawJson, Error>),
}

struct Queued<C> {
    /// The side whose message stream this item keeps its place in.
    stream: Side,
    item: Item<C>,
}

/// The waiting items, with how many belong to each stream, so that the check every arriving
/// message makes ("is anything from my side waiting?") does not walk the queue.
struct Queue<C> {
    items: VecDeque<Queued<C>>,
    /// Waiting items per stream: `[client, agent]`.
    per_stream: [usize; 2],
}

fn slot(stream: Side) -> usize {
    match stream {
        Side::Client => 0,
        Side::Agent => 1,
    }
}

impl<C> Queue<C> {
    fn new() -> Self {
        Queue {
            items: VecDeque::new(),
            per_stream: [0, 0],
        }
    }

    fn has(&self, stream: Side) -> bool {
        self.per_stream[slot(stream)] > 0
    }

    fn push_back(&mut self, stream: Side, item: Item<C>) {
        self.per_stream[slot(stream)] += 1;
        self.items.push_back(Queued { stream, item });
    }

    /// Where the last waiting item of `stream` is, if any.
    fn last_of(&self, stream: Side) -> Option<usize> {
        if !self.has(stream) {
            return None;
        }
        self.items.iter().rposition(|q| q.stream == stream)
    }

    fn insert(&mut self, at: usize, stream: Side, item: Item<C>) {
        self.per_stream[slot(stream)] += 1;
        self.items.insert(at, Queued { stream, item });
    }

    fn pop_front(&mut self) -> Option<Item<C>> {
        let queued = self.items.pop_front()?;
        self.per_stream[slot(queued.stream)] -= 1;
        Some(queued.item)
    }
}

struct State<R: Role> {
    /// `None` while a driver runs the handlers.
    role: Option<R>,
    /// Never empty while idle.
    queue: Queue<R::Cx>,
}

struct Shared<R: Role> {
    state: Mutex<State<R>>,
}

impl<R: Role> Shared<R> {
    fn lock(&self) -> MutexGuard<'_, State<R>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl<R: Role> AnswerSink for Shared<R> {
    fn answer(&self, responder: Responder, result: Result<RawJson, Error>, to: Side) {
        let stream = to.opposite();
        let mut state = self.lock();
        match state.queue.last_of(stream) {
            Some(last) => state
                .queue
                .insert(last + 1, stream, Item::Answer(responder, result)),
            None => {
                drop(state);
                responder.respond(result);
            }
        }
    }
}

/// The handlers, and the queue in front of them.
pub(crate) struct Exclusive<R: Role> {
    shared: Arc<Shared<R>>,
}

impl<R: Role> Exclusive<R> {
    pub(crate) fn new(role: R) -> Self {
        Exclusive {
            shared: Arc::new(Shared {
                state: Mutex::new(State {
                    role: Some(role),
                    queue: Queue::new(),
                }),
            }),
        }
    }

    /// Where a request's answer must go through.
    pub(crate) fn sink(&self) -> Arc<dyn AnswerSink> {
        self.shared.clone()
    }

    /// Deals with one message, in arrival order; returns the rest of the work.
    pub(crate) fn route(&self, message: Incoming, cx: R::Cx) -> Work {
        let stream = message.from;
        let taken = R::takes(&message.method, message.from);
        let mut state = self.shared.lock();
        if taken {
            match state.role.take() {
                Some(role) => {
                    drop(state);
                    let driver = drive(self.shared.clone(), role, Item::Dispatch(message, cx));
                    Work::Detached(Detach(Some(Box::pin(driver))))
                }
                None => {
                    state.queue.push_back(stream, Item::Dispatch(message, cx));
                    Work::Done
                }
            }
        } else if state.queue.has(stream) {
            state.queue.push_back(stream, Item::Forward(message, cx));
            Work::Done
        } else {
            drop(state);
            match R::unhandled(message, &cx) {
                Some(relay) => Work::Relay(relay),
                None => Work::Done,
            }
        }
    }
}

/// Runs the handlers on `first`, then on whatever queued meanwhile, then gives them back.
async fn drive<R: Role>(shared: Arc<Shared<R>>, mut role: R, first: Item<R::Cx>) {
    let mut item = first;
    loop {
        match item {
            Item::Dispatch(message, cx) => dispatch(&mut role, message, &cx).await,
            Item::Forward(message, cx) => {
                if let Some(relay) = R::unhandled(message, &cx) {
                    tokio::spawn(relay);
                }
            }
            Item::Answer(responder, result) => responder.respond(result),
        }
        let mut state = shared.lock();
        match state.queue.pop_front() {
            Some(next) => item = next,
            None => {
                state.role = Some(role);
                return;
            }
        }
    }
}

/// Runs one handler; a request cancelled by its sender (before or while it runs) stops it.
async fn dispatch<R: Role>(role: &mut R, message: Incoming, cx: &R::Cx) {
    let cancelled = message.reply.as_ref().map(|r| r.cancel_token());
    match cancelled {
        None => role.dispatch(message, cx).await,
        Some(token) if token.is_cancelled() => {}
        Some(token) => {
            tokio::select! {
                _ = role.dispatch(message, cx) => {}
                _ = token.cancelled() => {}
            }
        }
    }
}

type BoxFuture<T = ()> = Pin<Box<dyn Future<Output = T> + Send>>;

/// A forwarded request: a future that relays its answer to whoever sent the original.
/// Dropping it before the answer cancels the request downstream.
pub(crate) struct Relay {
    pending: BoxFuture<Result<RawJson, Error>>,
    reply: Option<Reply>,
}

impl Relay {
    pub(crate) fn new(pending: PendingResponse<RawJson>, reply: Reply) -> Relay {
        Relay {
            pending: pending.into_future(),
            reply: Some(reply),
        }
    }
}

impl Future for Relay {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        let Poll::Ready(result) = this.pending.as_mut().poll(cx) else {
            return Poll::Pending;
        };
        if let Some(reply) = this.reply.take() {
            reply.relay(result);
        }
        Poll::Ready(())
    }
}

/// The rest of the work for one message, after the part done in arrival order.
pub(crate) enum Work {
    Done,
    /// Awaiting a forwarded request's answer; dropping it cancels the request downstream.
    Relay(Relay),
    /// A driver of the handlers' queue; it keeps running if dropped.
    Detached(Detach),
}

impl Future for Work {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        match self.get_mut() {
            Work::Done => Poll::Ready(()),
            Work::Relay(relay) => Pin::new(relay).poll(cx),
            Work::Detached(detach) => Pin::new(detach).poll(cx),
        }
    }
}

/// A future that, dropped before it finished, goes on in a task of its own.
pub(crate) struct Detach(Option<BoxFuture>);

impl Future for Detach {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let Some(fut) = self.0.as_mut() else {
            return Poll::Ready(());
        };
        let poll = fut.as_mut().poll(cx);
        if poll.is_ready() {
            self.0 = None;
        }
        poll
    }
}

impl Drop for Detach {
    fn drop(&mut self) {
        if let (Some(fut), Ok(runtime)) = (self.0.take(), tokio::runtime::Handle::try_current()) {
            runtime.spawn(fut);
        }
    }
}
