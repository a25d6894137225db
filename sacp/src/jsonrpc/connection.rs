//! [`Connection`]: the handle to a running connection, and the state its tasks share.
//!
//! A connection is a reader task and a writer task around one transport (see the `builder`,
//! `reader` and `writer` modules); this handle is how everything else reaches it: it sends
//! requests and notifications (through one send primitive, [`Connection::send`]), answers the
//! peer's requests ([`Responder`](super::Responder)), spawns work tied to the connection, and
//! closes it. The tables it owns — the requests awaiting a response, the peer's requests in
//! flight, the lanes, the outgoing budget — are reached through its methods only.
//!
//! **Bounded memory.** Every queue is bounded by a byte budget ([`Limits`]):
//! - requests and notifications queued for the peer: [`Connection::notify`] waits while the
//!   peer reads too slowly, and forwarding waits with it. Responses and `$/cancel_request`
//!   never wait: they are bounded by the requests in flight, and holding them back could
//!   deadlock two peers that both wait for room;
//! - received messages waiting in a lane: when a lane is full the reader stops reading, so the
//!   peer's writes block in turn. The one exception: while work running in a lane (a
//!   notification handler) awaits a response, the reader reads on, since that response may be
//!   behind what it has not read; [`Limits::max_backlog`] still ends a peer that floods it;
//! - requests handled at once: past [`Limits::max_in_flight`] the peer's next request is refused.
//!
//! **Ending.** At the end of the peer's stream (or a read error, or [`Connection::close`]) the
//! pending requests fail with a "peer closed" error. At a clean end of stream the requests the
//! peer sent before it are still handled and answered (its reading side may well be open, as
//! with `printf '...' | agent`) — for the EOF grace at most, if one is set
//! ([`Builder::eof_grace`](super::Builder::eof_grace)); then, or at once after
//! [`Connection::close`] or a failure, the work still running is cancelled (open requests are
//! answered `-32800`), the writer flushes and closes, and [`Connection::closed`] completes.

use std::future::Future;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::budget::{Budget, Permit};
use super::in_flight::{CANCEL_REQUEST_METHOD, InFlight};
use super::lanes::{Lane, Lanes};
use super::pending::{PendingTable, Slot};
use super::response::{PendingResponse, keep_raw};
use super::{
    Error, Id, JsonRpcNotification, JsonRpcRequest, Message, Notification, RawJson, Request,
    Response,
};

/// The limits that keep a connection's memory bounded, set with builder methods on
/// `Limits::default()` (`Limits::default().max_in_flight(64)`) and given to
/// [`Builder::limits`](super::Builder::limits).
#[derive(Debug, Clone)]
pub struct Limits {
    pub(crate) outgoing_bytes: usize,
    pub(crate) lane_bytes: usize,
    pub(crate) max_in_flight: usize,
    pub(crate) max_backlog: usize,
}

impl Limits {
    /// Bytes of requests and notifications queued for the peer before
    /// [`Connection::notify`] (and forwarding) waits. Default 1 MiB.
    pub fn outgoing_bytes(mut self, value: usize) -> Limits {
        self.outgoing_bytes = value;
        self
    }

    /// Bytes of received messages waiting in one lane before the reader stops reading.
    /// Default 1 MiB.
    pub fn lane_bytes(mut self, value: usize) -> Limits {
        self.lane_bytes = value;
        self
    }

    /// Requests of the peer handled at once; one more is refused with
    /// [`code::SERVER_BUSY`](super::code::SERVER_BUSY). Default 4,096.
    pub fn max_in_flight(mut self, value: usize) -> Limits {
        self.max_in_flight = value;
        self
    }

    /// Received messages waiting in lanes past which the connection gives up on the peer
    /// (reached only while a notification handler awaits a response and the peer floods on).
    /// Default 65,536.
    pub fn max_backlog(mut self, value: usize) -> Limits {
        self.max_backlog = value;
        self
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            outgoing_bytes: 1 << 20,
            lane_bytes: 1 << 20,
            max_in_flight: 4096,
            max_backlog: 65_536,
        }
    }
}

/// A handle to a running connection: send requests and notifications to the peer, spawn work
/// tied to the connection, close it. Cheap to clone.
#[derive(Clone)]
pub struct Connection {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("name", &self.shared.name)
            .field("closed", &self.is_closed())
            .finish()
    }
}

/// What the handles and the connection's tasks share.
struct Shared {
    name: String,
    outgoing: mpsc::UnboundedSender<Outgoing>,
    /// What the requests and notifications waiting to be written may add up to.
    flow: Budget,
    next_id: AtomicI64,
    pending: PendingTable,
    in_flight: InFlight,
    lanes: Arc<Lanes>,
    default_timeout: Option<Duration>,
    limits: Limits,
    eof_grace: Option<Duration>,
    /// Asks the reader to stop.
    shutdown: CancellationToken,
    /// Fired once the reader and the writer have ended.
    done: CancellationToken,
    ended: OnceLock<End>,
}

/// What goes to the writer.
pub(crate) enum Outgoing {
    /// A message, with the share of the flow budget it holds until it is written.
    Message(Message, Option<Permit>),
    /// Tell the sender once everything queued before it is written.
    Flushed(oneshot::Sender<()>),
    /// Flush, close the transport's sending side, stop.
    Close,
}

/// How a connection ended.
#[derive(Debug, Clone)]
pub(crate) enum End {
    /// The peer's stream ended.
    Eof,
    /// [`Connection::close`] (or the owner) closed it.
    Closed,
    /// Reading or writing failed, or the peer broke a limit.
    Failed(String),
}

impl End {
    fn why(&self) -> &str {
        match self {
            End::Eof => "end of stream",
            End::Closed => "closed locally",
            End::Failed(why) => why,
        }
    }
}

/// A request or notification on its way out (see [`Connection::send`]).
#[derive(Debug)]
pub(crate) enum Outbound {
    /// A request whose response is delivered in the turn of lane `lane` (see the `lanes`
    /// module).
    Request {
        method: String,
        params: Option<RawJson>,
        lane: usize,
    },
    /// A notification.
    Notification {
        method: String,
        params: Option<RawJson>,
    },
}

impl Outbound {
    /// What it costs in the outgoing budget, besides the fixed overhead.
    pub(crate) fn payload_len(&self) -> usize {
        match self {
            Outbound::Request { method, params, .. }
            | Outbound::Notification { method, params } => {
                method.len() + params.as_ref().map_or(0, RawJson::len)
            }
        }
    }
}

/// How a message gets its place in the outgoing queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Admission {
    /// At once, whatever is queued: requests (bounded by the answers they wait for).
    Now,
    /// At once if the outgoing budget has room; otherwise it is given back.
    Try,
}

/// A message [`Connection::send`] did not queue.
#[derive(Debug)]
pub(crate) enum Unsent {
    /// No room in the outgoing budget ([`Admission::Try`]): here it is back.
    NoRoom(Outbound),
    /// The connection cannot send any more.
    Failed(Error),
}

impl Connection {
    /// A connection whose tasks are still to start: the handle, and the writer's queue.
    pub(crate) fn new(
        name: String,
        limits: Limits,
        eof_grace: Option<Duration>,
        default_timeout: Option<Duration>,
        lanes: usize,
    ) -> (Connection, mpsc::UnboundedReceiver<Outgoing>) {
        let (outgoing, queue) = mpsc::unbounded_channel();
        let conn = Connection {
            shared: Arc::new(Shared {
                name,
                outgoing,
                flow: Budget::new(limits.outgoing_bytes),
                next_id: AtomicI64::new(1),
                pending: PendingTable::default(),
                in_flight: InFlight::default(),
                lanes: Arc::new(Lanes::new(lanes, limits.lane_bytes)),
                default_timeout,
                limits,
                eof_grace,
                shutdown: CancellationToken::new(),
                done: CancellationToken::new(),
                ended: OnceLock::new(),
            }),
        };
        (conn, queue)
    }

    /// The peer's name, as given to [`Builder::name`](super::Builder::name).
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// The connection's limits.
    pub fn limits(&self) -> &Limits {
        &self.shared.limits
    }

    pub(crate) fn eof_grace(&self) -> Option<Duration> {
        self.shared.eof_grace
    }

    pub(crate) fn default_timeout(&self) -> Option<Duration> {
        self.shared.default_timeout
    }

    pub(crate) fn lanes(&self) -> &Arc<Lanes> {
        &self.shared.lanes
    }

    /// Sends a typed request. Await the result for the response.
    ///
    /// The request goes out now, ahead of anything sent after it; it does not wait for room
    /// in the outgoing queue (requests are bounded by the answers they wait for).
    pub fn request<R: JsonRpcRequest>(&self, request: R) -> PendingResponse<R::Response> {
        PendingResponse::typed(&request, |params| self.request_raw(R::METHOD, Some(params)))
    }

    /// Sends a request by method name with raw params; the result stays raw.
    pub fn request_raw(
        &self,
        method: impl Into<String>,
        params: Option<RawJson>,
    ) -> PendingResponse<RawJson> {
        let outbound = Outbound::Request {
            method: method.into(),
            params,
            lane: 0,
        };
        self.send_request(outbound, Admission::Now)
            .unwrap_or_else(|e| PendingResponse::failed(e, keep_raw))
    }

    /// Sends a typed notification, once the outgoing queue has room for it.
    pub fn notify<N: JsonRpcNotification>(
        &self,
        notification: N,
    ) -> impl Future<Output = Result<(), Error>> + Send + '_ {
        let params = notification.write();
        async move { self.notify_raw(N::METHOD, Some(params?)).await }
    }

    /// Sends a notification by method name with raw params, once the outgoing queue has room
    /// for it.
    pub fn notify_raw(
        &self,
        method: impl Into<String>,
        params: Option<RawJson>,
    ) -> impl Future<Output = Result<(), Error>> + Send + '_ {
        let outbound = Outbound::Notification {
            method: method.into(),
            params,
        };
        async move { self.send_when_room(outbound).await.map(drop) }
    }

    /// The one way a request or notification goes out: admitted to the outgoing queue as
    /// `admission` says, then queued for the writer, in order. A request is registered first,
    /// so its response finds its [`PendingResponse`] (given back here).
    pub(crate) fn send(
        &self,
        outbound: Outbound,
        admission: Admission,
    ) -> Result<Option<PendingResponse<RawJson>>, Unsent> {
        let permit = match admission {
            Admission::Now => None,
            Admission::Try => match self.shared.flow.try_take(outbound.payload_len()) {
                Some(permit) => Some(permit),
                None => return Err(Unsent::NoRoom(outbound)),
            },
        };
        self.queue(outbound, permit).map_err(Unsent::Failed)
    }

    /// [`Connection::send`], waiting for room in the outgoing queue when there is none. While
    /// it waits, the task keeps the lanes it holds (see the `hold` module): the writer makes
    /// room whatever the lanes do.
    pub(crate) async fn send_when_room(
        &self,
        outbound: Outbound,
    ) -> Result<Option<PendingResponse<RawJson>>, Error> {
        let outbound = match self.send(outbound, Admission::Try) {
            Ok(sent) => return Ok(sent),
            Err(Unsent::Failed(e)) => return Err(e),
            Err(Unsent::NoRoom(outbound)) => outbound,
        };
        let mut taking = std::pin::pin!(self.shared.flow.take(outbound.payload_len()));
        let permit = std::future::poll_fn(|cx| {
            let polled = taking.as_mut().poll(cx);
            if polled.is_pending() {
                super::hold::waiting_to_send();
            }
            polled
        })
        .await;
        self.queue(outbound, permit)
    }

    /// [`Connection::send`] of a request, which always gives back its [`PendingResponse`].
    pub(crate) fn send_request(
        &self,
        outbound: Outbound,
        admission: Admission,
    ) -> Result<PendingResponse<RawJson>, Error> {
        match self.send(outbound, admission) {
            Ok(Some(pending)) => Ok(pending),
            Ok(None) => Err(Error::internal_error(
                "a request was sent as a notification",
            )),
            Err(Unsent::Failed(e)) => Err(e),
            Err(Unsent::NoRoom(_)) => Err(Error::internal_error("no room to send a request")),
        }
    }

    fn queue(
        &self,
        outbound: Outbound,
        permit: Option<Permit>,
    ) -> Result<Option<PendingResponse<RawJson>>, Error> {
        match outbound {
            Outbound::Notification { method, params } => {
                self.write(
                    Message::Notification(Notification { method, params }),
                    permit,
                )?;
                Ok(None)
            }
            Outbound::Request {
                method,
                params,
                lane,
            } => {
                let id = Id::Number(self.shared.next_id.fetch_add(1, Ordering::Relaxed));
                let slot = Slot::for_request();
                self.shared.pending.insert(id.clone(), lane, slot.clone())?;
                let request = Request {
                    id: id.clone(),
                    method: method.clone(),
                    params,
                };
                if let Err(e) = self.write(Message::Request(request), permit) {
                    self.shared.pending.remove(&id);
                    return Err(e);
                }
                Ok(Some(PendingResponse::sent(
                    self, id, method, slot, keep_raw,
                )))
            }
        }
    }

    /// Queues `message` for the writer with the budget it holds.
    fn write(&self, message: Message, permit: Option<Permit>) -> Result<(), Error> {
        self.shared
            .outgoing
            .send(Outgoing::Message(message, permit))
            .map_err(|_| self.closed_error())
    }

    /// Answers a request of the peer, unless it was answered (or cancelled) already: the
    /// answer never waits for room.
    pub(crate) fn answer(&self, response: Response) -> Result<(), Error> {
        if self.shared.in_flight.finish(&response.id) {
            self.write(Message::Response(response), None)
        } else {
            Ok(())
        }
    }

    /// Writes an answer to a message that never became a request in flight (refused, or
    /// invalid).
    pub(crate) fn answer_unregistered(&self, response: Response) {
        let _ = self.write(Message::Response(response), None);
    }

    /// Registers a request of the peer: its cancellation token, or why it is refused.
    pub(crate) fn register_request(&self, id: &Id) -> Result<CancellationToken, Error> {
        self.shared
            .in_flight
            .register(id, self.shared.limits.max_in_flight)
    }

    /// Runs `f` when the peer cancels its request `id` (see `InFlight::on_cancel`).
    pub(crate) fn on_cancel(&self, id: &Id, f: super::in_flight::OnCancel) {
        self.shared.in_flight.on_cancel(id, f)
    }

    /// The peer cancelled its request `id`: answered `-32800` if it was still in flight.
    pub(crate) fn peer_cancelled(&self, id: Id) -> bool {
        if !self.shared.in_flight.cancel(&id) {
            return false;
        }
        let response = Response::error(id, &Error::request_cancelled());
        let _ = self.write(Message::Response(response), None);
        true
    }

    /// Forgets a request of ours nobody awaits any more, and cancels it at the peer if it
    /// was still pending.
    pub(crate) fn withdraw(&self, id: &Id) {
        if !self.shared.pending.remove(id) {
            return;
        }
        #[derive(serde::Serialize)]
        #[serde(rename_all = "camelCase")]
        struct CancelParams<'a> {
            request_id: &'a Id,
        }
        if let Ok(params) = RawJson::to_raw(&CancelParams { request_id: id }) {
            let cancel = Notification {
                method: CANCEL_REQUEST_METHOD.to_owned(),
                params: Some(params),
            };
            let _ = self.write(Message::Notification(cancel), None);
        }
    }

    /// Takes the request `id` awaiting a response out of the table, with its slot and the
    /// lane of its delivery.
    pub(crate) fn take_pending(&self, id: &Id) -> Option<(Arc<Slot>, usize)> {
        self.shared.pending.take(id)
    }

    /// Whether everything received in `lane` has been dealt with, so that a message of that
    /// lane may be dealt with at once, in the handler's call ([`Work::done`]). Meaningful
    /// inside [`Handler`] calls, which the reader makes in arrival order.
    ///
    /// [`Work::done`]: super::Work::done
    /// [`Handler`]: super::Handler
    pub fn lane_is_idle(&self, lane: impl Lane) -> bool {
        self.shared.lanes.is_idle(lane.index())
    }

    /// Completes once everything queued for the peer before this call has been written to the
    /// transport (or the connection can no longer write). For a process about to exit, say,
    /// so that its last words are not lost.
    pub async fn flush(&self) {
        let (tx, rx) = oneshot::channel();
        if self.shared.outgoing.send(Outgoing::Flushed(tx)).is_ok() {
            let _ = rx.await;
        }
    }

    /// Asks the writer to flush and close the transport's sending side.
    pub(crate) fn close_writer(&self) {
        let _ = self.shared.outgoing.send(Outgoing::Close);
    }

    fn closed_error(&self) -> Error {
        let why = self.shared.ended.get().map_or("closed", End::why);
        Error::peer_closed(&self.shared.name, why)
    }

    /// Runs `work` in the background until it finishes or the connection gives up on the work
    /// still running (see the module docs).
    pub fn spawn<F>(&self, work: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.shared.lanes.spawn(work);
    }

    /// [`Connection::spawn`], for work left for after an answer: the end of the peer's stream
    /// gives it the grace a request still being handled gets.
    pub(crate) fn spawn_lingering<F>(&self, work: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.shared.lanes.spawn_lingering(work);
    }

    /// Closes the connection: stops reading from the peer, fails the requests awaiting a
    /// response, cancels the peer's requests still being handled (answering them `-32800`),
    /// sends what is queued, then closes the transport.
    pub fn close(&self) {
        let _ = self.shared.ended.set(End::Closed);
        self.shared.shutdown.cancel();
        self.cancel_requests();
    }

    /// Completes when the reader is asked to stop.
    pub(crate) fn shutdown_requested(&self) -> tokio_util::sync::WaitForCancellationFuture<'_> {
        self.shared.shutdown.cancelled()
    }

    /// Cancels every request of the peer still being handled, answering it `-32800`.
    fn cancel_requests(&self) {
        for id in self.shared.in_flight.cancel_all() {
            let _ = self.write(
                Message::Response(Response::error(id, &Error::request_cancelled())),
                None,
            );
        }
    }

    /// Completes once every request of the peer has been answered.
    pub(crate) async fn all_answered(&self) {
        self.shared.in_flight.all_answered().await
    }

    /// Gives up on the work still running: open requests are answered `-32800`, lanes stop,
    /// tasks tied to the connection end.
    pub(crate) fn abandon(&self) {
        self.cancel_requests();
        self.shared.lanes.abandon();
    }

    /// The writer could not write: nothing reaches the peer any more.
    pub(crate) fn write_failed(&self, why: String) {
        self.end(End::Failed(why));
        self.shared.shutdown.cancel();
        self.abandon();
    }

    /// Whether the connection has fully ended.
    pub fn is_closed(&self) -> bool {
        self.shared.done.is_cancelled()
    }

    /// Says that the reader and the writer have ended.
    pub(crate) fn set_done(&self) {
        self.shared.done.cancel();
    }

    /// Completes once the connection has fully ended: `Ok` when the peer's stream ended or the
    /// connection was closed, an error saying what went wrong when reading or writing failed
    /// or the peer broke a limit.
    pub async fn closed(&self) -> Result<(), Error> {
        self.shared.done.cancelled().await;
        match self.shared.ended.get() {
            Some(End::Failed(why)) => Err(Error::connection_failed(&self.shared.name, why)),
            _ => Ok(()),
        }
    }

    /// Records why the connection ends (the first reason wins) and fails the pending requests.
    pub(crate) fn end(&self, end: End) {
        let _ = self.shared.ended.set(end);
        self.shared.pending.close(self.closed_error());
    }
}
