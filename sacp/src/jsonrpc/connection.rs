//! The connection: a reader task and a writer task around one transport, and the handle that
//! sends requests and notifications through it.
//!
//! - The **reader** reads the transport. Responses resolve the pending table directly;
//!   `$/cancel_request` cancels an in-flight request directly; requests and notifications are
//!   handed to the [`Handler`] in arrival order and their work is admitted to its lane (see the
//!   `lanes` module); invalid input is answered with an error.
//! - The **writer** sends whatever was queued for the peer, in queue order, one batch per write.
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
//! with `printf '...' | agent`) — for [`Limits::eof_grace`] at most, if set; then, or at once
//! after [`Connection::close`] or a failure, the work still running is cancelled (open requests
//! are answered `-32800`), the writer flushes and closes, and [`Connection::closed`] completes.

use std::future::Future;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::budget::{Budget, Permit};
use super::lanes::Lanes;
use super::pending::{PendingResponse, PendingTable, decode_typed, keep_raw};
use super::responder::{CANCEL_REQUEST_METHOD, InFlight};
use super::transport::Transport;
use super::{
    Error, Handler, Id, JsonRpcNotification, JsonRpcRequest, Message, Notification, RawJson,
    Request, Response, reader, writer,
};

/// The limits that keep a connection's memory bounded, and how long it lets work finish once
/// the peer's stream has ended.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Bytes of requests and notifications queued for the peer before
    /// [`Connection::notify`] (and forwarding) waits. Default 1 MiB.
    pub outgoing_bytes: usize,
    /// Bytes of received messages waiting in one lane before the reader stops reading.
    /// Default 1 MiB.
    pub lane_bytes: usize,
    /// Requests of the peer handled at once; one more is refused with
    /// [`code::SERVER_BUSY`](super::code::SERVER_BUSY). Default 4,096.
    pub max_in_flight: usize,
    /// Received messages waiting in lanes past which the connection gives up on the peer
    /// (reached only while a notification handler awaits a response and the peer floods on).
    /// Default 65,536.
    pub max_backlog: usize,
    /// After the peer's stream ended, how long the requests it sent may still be handled before
    /// they are cancelled. `None` (the default) waits for them; the proxy and agent runtimes
    /// use 250 ms.
    pub eof_grace: Option<Duration>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            outgoing_bytes: 1 << 20,
            lane_bytes: 1 << 20,
            max_in_flight: 4096,
            max_backlog: 65_536,
            eof_grace: None,
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

pub(crate) struct Shared {
    pub(crate) name: String,
    outgoing: mpsc::UnboundedSender<Outgoing>,
    /// What the requests and notifications waiting to be written may add up to.
    flow: Budget,
    next_id: AtomicI64,
    pub(crate) pending: PendingTable,
    pub(crate) in_flight: InFlight,
    pub(crate) lanes: Lanes,
    pub(crate) default_timeout: Option<Duration>,
    pub(crate) limits: Limits,
    /// Asks the reader to stop.
    pub(crate) shutdown: CancellationToken,
    /// Fired when the connection gives up on the work still running: handlers, lanes,
    /// background work.
    pub(crate) abandon: CancellationToken,
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

/// Configures and starts a [`Connection`].
#[derive(Debug, Clone)]
pub struct Builder {
    name: String,
    default_timeout: Option<Duration>,
    limits: Limits,
}

impl Default for Builder {
    fn default() -> Self {
        Builder {
            name: "peer".into(),
            default_timeout: None,
            limits: Limits::default(),
        }
    }
}

impl Builder {
    /// Names the peer in logs and errors (default `"peer"`).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// A timeout for every request sent on this connection (each request can set its own
    /// with [`PendingResponse::timeout`]). Default: none.
    pub fn request_timeout(mut self, after: Duration) -> Self {
        self.default_timeout = Some(after);
        self
    }

    /// Sets every limit at once.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// See [`Limits::max_backlog`].
    pub fn max_backlog(mut self, messages: usize) -> Self {
        self.limits.max_backlog = messages.max(1);
        self
    }

    /// See [`Limits::eof_grace`].
    pub fn eof_grace(mut self, grace: Option<Duration>) -> Self {
        self.limits.eof_grace = grace;
        self
    }

    /// The limits this builder will use.
    pub fn current_limits(&self) -> &Limits {
        &self.limits
    }

    /// Starts the connection's tasks on the current Tokio runtime (call it from within one).
    pub fn spawn<T: Transport, H: Handler>(self, transport: T, handler: H) -> Connection {
        let (reader, writer) = transport.split();
        let (out_tx, out_rx) = mpsc::unbounded_channel();
        let conn = Connection {
            shared: Arc::new(Shared {
                name: self.name,
                outgoing: out_tx,
                flow: Budget::new(self.limits.outgoing_bytes),
                next_id: AtomicI64::new(1),
                pending: PendingTable::default(),
                in_flight: InFlight::default(),
                lanes: Lanes::new(H::LANES, self.limits.lane_bytes),
                default_timeout: self.default_timeout,
                limits: self.limits,
                shutdown: CancellationToken::new(),
                abandon: CancellationToken::new(),
                done: CancellationToken::new(),
                ended: OnceLock::new(),
            }),
        };
        let reader = tokio::spawn(reader::run(reader, handler, conn.clone()));
        let writer = tokio::spawn(writer::run(writer, conn.clone(), out_rx));
        let done = conn.shared.done.clone();
        let name = conn.shared.name.clone();
        tokio::spawn(async move {
            for (task, result) in [("reader", reader.await), ("writer", writer.await)] {
                if let Err(e) = result {
                    tracing::error!(peer = %name, task, error = %e, "connection task failed");
                }
            }
            done.cancel();
        });
        conn
    }
}

impl Connection {
    /// Configures a new connection.
    pub fn builder() -> Builder {
        Builder::default()
    }

    /// The peer's name, as given to [`Builder::name`].
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    pub(crate) fn shared(&self) -> &Shared {
        &self.shared
    }

    /// Sends a typed request. Await the result for the response.
    ///
    /// The request goes out now, ahead of anything sent after it; it does not wait for room
    /// in the outgoing queue (requests are bounded by the answers they wait for).
    pub fn request<R: JsonRpcRequest>(&self, request: R) -> PendingResponse<R::Response> {
        match RawJson::to_raw(&request) {
            Ok(params) => self.start_request(
                0,
                R::METHOD.to_owned(),
                Some(params),
                decode_typed::<R::Response>,
                None,
            ),
            Err(e) => PendingResponse::failed(e, decode_typed::<R::Response>),
        }
    }

    /// Sends a request by method name with raw params; the result stays raw.
    pub fn request_raw(
        &self,
        method: impl Into<String>,
        params: Option<RawJson>,
    ) -> PendingResponse<RawJson> {
        self.start_request(0, method.into(), params, keep_raw, None)
    }

    /// Sends a request whose response must not overtake lane `lane`'s messages.
    pub(crate) fn start_request<T: Send + 'static>(
        &self,
        lane: usize,
        method: String,
        params: Option<RawJson>,
        decode: fn(RawJson) -> Result<T, Error>,
        permit: Option<Permit>,
    ) -> PendingResponse<T> {
        let id = Id::Number(self.shared.next_id.fetch_add(1, Ordering::Relaxed));
        let slot = PendingResponse::<T>::slot();
        if let Err(e) = self.shared.pending.insert(id.clone(), lane, slot.clone()) {
            return PendingResponse::failed(e, decode);
        }
        let message = Message::Request(Request {
            id: id.clone(),
            method: method.clone(),
            params,
        });
        if let Err(e) = self.send_with(message, permit) {
            self.shared.pending.remove(&id);
            return PendingResponse::failed(e, decode);
        }
        PendingResponse::sent(self, id, method, slot, decode)
    }

    /// Sends a typed notification, once the outgoing queue has room for it.
    pub fn notify<N: JsonRpcNotification>(
        &self,
        notification: N,
    ) -> impl Future<Output = Result<(), Error>> + Send + '_ {
        let params = RawJson::to_raw(&notification);
        async move { self.notify_raw(N::METHOD, Some(params?)).await }
    }

    /// Sends a notification by method name with raw params, once the outgoing queue has room
    /// for it.
    pub fn notify_raw(
        &self,
        method: impl Into<String>,
        params: Option<RawJson>,
    ) -> impl Future<Output = Result<(), Error>> + Send + '_ {
        let message = Message::Notification(Notification {
            method: method.into(),
            params,
        });
        async move {
            let permit = self.room_for(message.payload_len()).await;
            self.send_with(message, permit)
        }
    }

    /// Whether everything received in lane `lane` has been dealt with, so that a message of
    /// that lane may be dealt with at once, in the handler's call ([`Dispatch::done`]).
    /// Meaningful inside [`Handler`] calls, which the reader makes in arrival order.
    ///
    /// [`Dispatch::done`]: super::Dispatch::done
    pub fn lane_is_idle(&self, lane: usize) -> bool {
        self.shared.lanes.is_idle(lane)
    }

    /// A share of the outgoing budget for a payload of `bytes`, if there is room now.
    pub(crate) fn try_room_for(&self, bytes: usize) -> Option<Permit> {
        self.shared.flow.try_take(bytes)
    }

    /// A share of the outgoing budget for a payload of `bytes`, once there is room. While it
    /// waits, the task keeps the lanes it holds (see the `hold` module): the writer makes room
    /// whatever the lanes do.
    pub(crate) async fn room_for(&self, bytes: usize) -> Option<Permit> {
        if let Some(permit) = self.shared.flow.try_take(bytes) {
            return Some(permit);
        }
        let mut taking = std::pin::pin!(self.shared.flow.take(bytes));
        std::future::poll_fn(|cx| {
            let polled = taking.as_mut().poll(cx);
            if polled.is_pending() {
                super::hold::waiting_to_send();
            }
            polled
        })
        .await
    }

    /// Queues `message` for the writer with the budget it holds.
    pub(crate) fn send_with(&self, message: Message, permit: Option<Permit>) -> Result<(), Error> {
        self.shared
            .outgoing
            .send(Outgoing::Message(message, permit))
            .map_err(|_| self.closed_error())
    }

    /// Queues a response or a cancellation: these never wait for room.
    pub(crate) fn send_now(&self, message: Message) -> Result<(), Error> {
        self.send_with(message, None)
    }

    pub(crate) fn send_cancel(&self, id: &Id) {
        #[derive(serde::Serialize)]
        #[serde(rename_all = "camelCase")]
        struct CancelParams<'a> {
            request_id: &'a Id,
        }
        if let Ok(params) = RawJson::to_raw(&CancelParams { request_id: id }) {
            let _ = self.send_now(Message::Notification(Notification {
                method: CANCEL_REQUEST_METHOD.to_owned(),
                params: Some(params),
            }));
        }
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
        let abandon = self.shared.abandon.clone();
        tokio::spawn(super::hold::Marked::new(async move {
            tokio::select! {
                _ = work => {}
                _ = abandon.cancelled() => {}
            }
        }));
    }

    /// Closes the connection: stops reading from the peer, fails the requests awaiting a
    /// response, cancels the peer's requests still being handled (answering them `-32800`),
    /// sends what is queued, then closes the transport.
    pub fn close(&self) {
        let _ = self.shared.ended.set(End::Closed);
        self.shared.shutdown.cancel();
        self.cancel_requests();
    }

    /// Cancels every request of the peer still being handled, answering it `-32800`.
    pub(crate) fn cancel_requests(&self) {
        for id in self.shared.in_flight.cancel_all() {
            let _ = self.send_now(Message::Response(Response::error(
                id,
                &Error::request_cancelled(),
            )));
        }
    }

    /// Whether the connection has fully ended.
    pub fn is_closed(&self) -> bool {
        self.shared.done.is_cancelled()
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
