//! The connection: a reader task, a dispatcher task and a writer task around one transport.
//!
//! - The **reader** reads the transport. Responses resolve the pending table directly;
//!   `$/cancel_request` cancels an in-flight request directly; requests and notifications go to
//!   the dispatch queue in arrival order; invalid input is answered with an error.
//! - The **dispatcher** hands the queued messages to the [`Handler`] in order, and runs each
//!   handler until it first waits; one that waits goes on in a task of its own.
//! - The **writer** sends whatever was queued for the peer, in queue order, one batch per write.
//!
//! Backpressure: when the handler falls `BACKPRESSURE_AT` messages behind, the reader stops
//! reading (so the peer's writes block) — except while a request of ours is pending, because
//! its response may be behind the backlog and a handler may be waiting for it. A backlog of
//! `max_backlog` messages ends the connection with an error instead of growing without limit.
//!
//! Shutdown: at the end of the peer's stream (or a read error, or [`Connection::close`]) the
//! pending requests fail with a "peer closed" error, the dispatcher finishes what is queued,
//! the writer flushes and closes, and [`Connection::closed`] completes.

use std::future::Future;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::sync::{Notify, mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::incoming::{CANCEL_REQUEST_METHOD, InFlight, cancelled_id};
use super::outgoing::{DispatchOrder, PendingResponse, PendingTable, decode_typed, keep_raw};
use super::transport::{Inbound, MessageReader, MessageWriter, Transport};
use super::{
    Error, Handler, Id, JsonRpcNotification, JsonRpcRequest, Message, Notification, RawJson,
    Request, Responder, Response,
};

const BACKPRESSURE_AT: usize = 1024;
const DEFAULT_MAX_BACKLOG: usize = 1 << 20;
const MAX_WRITE_BATCH: usize = 512;
/// How many messages the reader takes from what one read brought in before it lets the
/// dispatcher and writer run: a burst is passed on in slices of this size, so the next
/// process of a chain starts on the first slice while this one reads the rest.
const READ_SLICE: u32 = 32;

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
    next_id: AtomicI64,
    pub(crate) pending: PendingTable,
    pub(crate) in_flight: InFlight,
    pub(crate) order: DispatchOrder,
    pub(crate) default_timeout: Option<Duration>,
    backlog: Backlog,
    /// Asks the reader to stop.
    shutdown: CancellationToken,
    /// Fired once every task of the connection has ended.
    done: CancellationToken,
    ended_because: OnceLock<String>,
}

enum Outgoing {
    Message(Message),
    /// Flush, close the transport's sending side, stop.
    Close,
}

/// How many messages wait for the dispatcher.
#[derive(Debug, Default)]
struct Backlog {
    len: AtomicUsize,
    room: Notify,
}

impl Backlog {
    fn push(&self) -> usize {
        self.len.fetch_add(1, Ordering::AcqRel) + 1
    }

    fn pop(&self) {
        if self.len.fetch_sub(1, Ordering::AcqRel) == BACKPRESSURE_AT {
            self.room.notify_one();
        }
    }
}

/// Configures and starts a [`Connection`].
#[derive(Debug, Clone)]
pub struct Builder {
    name: String,
    default_timeout: Option<Duration>,
    max_backlog: usize,
}

impl Default for Builder {
    fn default() -> Self {
        Builder {
            name: "peer".into(),
            default_timeout: None,
            max_backlog: DEFAULT_MAX_BACKLOG,
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

    /// How many received messages may wait for the handler before the connection gives up on
    /// the peer (default 1,048,576).
    pub fn max_backlog(mut self, messages: usize) -> Self {
        self.max_backlog = messages.max(1);
        self
    }

    /// Starts the connection's tasks on the current Tokio runtime (call it from within one).
    pub fn spawn<T: Transport, H: Handler>(self, transport: T, handler: H) -> Connection {
        let (reader, writer) = transport.split();
        let (out_tx, out_rx) = mpsc::unbounded_channel();
        let (queue_tx, queue_rx) = mpsc::unbounded_channel();
        let conn = Connection {
            shared: Arc::new(Shared {
                name: self.name,
                outgoing: out_tx,
                next_id: AtomicI64::new(1),
                pending: PendingTable::default(),
                in_flight: InFlight::default(),
                order: DispatchOrder::default(),
                default_timeout: self.default_timeout,
                backlog: Backlog::default(),
                shutdown: CancellationToken::new(),
                done: CancellationToken::new(),
                ended_because: OnceLock::new(),
            }),
        };
        let reader = tokio::spawn(run_reader(reader, conn.clone(), queue_tx, self.max_backlog));
        let dispatcher = tokio::spawn(run_dispatcher(handler, conn.clone(), queue_rx));
        let writer = tokio::spawn(run_writer(writer, conn.clone(), out_rx));
        let done = conn.shared.done.clone();
        let name = conn.shared.name.clone();
        tokio::spawn(async move {
            for (task, result) in [
                ("reader", reader.await),
                ("dispatcher", dispatcher.await),
                ("writer", writer.await),
            ] {
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
    pub fn request<R: JsonRpcRequest>(&self, request: R) -> PendingResponse<R::Response> {
        match RawJson::to_raw(&request) {
            Ok(params) => self.start_request(
                R::METHOD.to_owned(),
                Some(params),
                decode_typed::<R::Response>,
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
        self.start_request(method.into(), params, keep_raw)
    }

    pub(crate) fn start_request<T: Send + 'static>(
        &self,
        method: String,
        params: Option<RawJson>,
        decode: fn(RawJson) -> Result<T, Error>,
    ) -> PendingResponse<T> {
        let id = Id::Number(self.shared.next_id.fetch_add(1, Ordering::Relaxed));
        let (tx, rx) = oneshot::channel();
        if let Err(e) = self.shared.pending.insert(id.clone(), tx) {
            return PendingResponse::failed(e, decode);
        }
        // A paused reader must read on: this request's response is coming.
        self.shared.backlog.room.notify_one();
        let message = Message::Request(Request {
            id: id.clone(),
            method: method.clone(),
            params,
        });
        if let Err(e) = self.send_message(message) {
            self.shared.pending.remove(&id);
            return PendingResponse::failed(e, decode);
        }
        PendingResponse::sent(self, id, method, rx, decode)
    }

    /// Sends a typed notification.
    pub fn notify<N: JsonRpcNotification>(&self, notification: N) -> Result<(), Error> {
        self.notify_raw(N::METHOD, Some(RawJson::to_raw(&notification)?))
    }

    /// Sends a notification by method name with raw params.
    pub fn notify_raw(
        &self,
        method: impl Into<String>,
        params: Option<RawJson>,
    ) -> Result<(), Error> {
        self.send_message(Message::Notification(Notification {
            method: method.into(),
            params,
        }))
    }

    pub(crate) fn send_message(&self, message: Message) -> Result<(), Error> {
        self.shared
            .outgoing
            .send(Outgoing::Message(message))
            .map_err(|_| self.closed_error())
    }

    pub(crate) fn send_cancel(&self, id: &Id) {
        #[derive(serde::Serialize)]
        #[serde(rename_all = "camelCase")]
        struct CancelParams<'a> {
            request_id: &'a Id,
        }
        if let Ok(params) = RawJson::to_raw(&CancelParams { request_id: id }) {
            let _ = self.notify_raw(CANCEL_REQUEST_METHOD, Some(params));
        }
    }

    fn closed_error(&self) -> Error {
        let why = self
            .shared
            .ended_because
            .get()
            .map_or("closed", String::as_str);
        Error::peer_closed(&self.shared.name, why)
    }

    /// Runs `work` in the background until it finishes or the connection has ended.
    pub fn spawn<F>(&self, work: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let done = self.shared.done.clone();
        tokio::spawn(async move {
            tokio::select! {
                _ = work => {}
                _ = done.cancelled() => {}
            }
        });
    }

    /// Closes the connection: stops reading from the peer, fails the requests awaiting a
    /// response, cancels the peer's requests still being handled (answering them `-32800`),
    /// sends what is queued, then closes the transport.
    pub fn close(&self) {
        self.shared.shutdown.cancel();
        for id in self.shared.in_flight.cancel_all() {
            let _ = self.send_message(Message::Response(Response::error(
                id,
                &Error::request_cancelled(),
            )));
        }
    }

    /// Whether the connection has fully ended.
    pub fn is_closed(&self) -> bool {
        self.shared.done.is_cancelled()
    }

    /// Completes once the connection has fully ended; says why it ended.
    ///
    /// When the peer's stream ends, the requests it sent before that are still handled and
    /// answered (its reading side may well be open, as with `printf '...' | agent`), so this
    /// completes once their handlers finish. [`Connection::close`] cancels them instead.
    pub async fn closed(&self) -> String {
        self.shared.done.cancelled().await;
        self.shared
            .ended_because
            .get()
            .cloned()
            .unwrap_or_else(|| "closed".into())
    }

    fn end(&self, why: String) {
        let _ = self.shared.ended_because.set(why);
        self.shared.pending.close(self.closed_error());
    }
}

enum Dispatch {
    Request(Request, Responder),
    Notification(Notification),
}

async fn run_reader<R: MessageReader>(
    mut reader: R,
    conn: Connection,
    queue: mpsc::UnboundedSender<Dispatch>,
    max_backlog: usize,
) {
    let shared = &conn.shared;
    // Requests and notifications handed to the dispatcher so far: a response's barrier.
    let mut enqueued: u64 = 0;
    let mut slice = 0;
    let why = loop {
        slice += 1;
        if slice == READ_SLICE {
            slice = 0;
            tokio::task::yield_now().await;
        }
        let read = tokio::select! {
            biased;
            _ = shared.shutdown.cancelled() => break "closed locally".to_owned(),
            read = reader.read() => read,
        };
        let inbound = match read {
            Ok(Some(inbound)) => inbound,
            Ok(None) => break "end of stream".to_owned(),
            Err(e) => break format!("read error: {e}"),
        };
        let dispatch = match inbound {
            Inbound::Message(Message::Response(response)) => {
                let Response { id, body } = response;
                let result = Response { id: Id::Null, body }.into_result();
                let arrived = super::outgoing::Arrived {
                    result,
                    barrier: enqueued,
                };
                if id == Id::Null {
                    // The peer could not read something we sent and says so.
                    tracing::error!(peer = %shared.name, response = ?arrived.result, "the peer reported an error about a message it could not read");
                } else if !shared.pending.resolve(&id, arrived) {
                    tracing::warn!(peer = %shared.name, %id, "dropping a response to an unknown or cancelled request id");
                }
                continue;
            }
            Inbound::Message(Message::Notification(n)) if n.method == CANCEL_REQUEST_METHOD => {
                match cancelled_id(n.params.as_ref()) {
                    Some(id) if shared.in_flight.cancel(&id) => {
                        let _ = conn.send_message(Message::Response(Response::error(
                            id,
                            &Error::request_cancelled(),
                        )));
                    }
                    Some(id) => {
                        tracing::debug!(peer = %shared.name, %id, "cancel for a request that is already answered")
                    }
                    None => {
                        tracing::warn!(peer = %shared.name, params = ?n.params, "malformed $/cancel_request")
                    }
                }
                continue;
            }
            Inbound::Message(Message::Notification(n)) => Dispatch::Notification(n),
            Inbound::Message(Message::Request(request)) => {
                match shared.in_flight.register(&request.id) {
                    Some(token) => {
                        let responder = Responder::new(
                            request.id.clone(),
                            request.method.clone(),
                            conn.clone(),
                            token,
                        );
                        Dispatch::Request(request, responder)
                    }
                    None => {
                        let error = Error::invalid_request(format!(
                            "request id {} is already in use by an unanswered request",
                            request.id
                        ));
                        tracing::warn!(peer = %shared.name, %error, "refusing a request");
                        let _ = conn
                            .send_message(Message::Response(Response::error(request.id, &error)));
                        continue;
                    }
                }
            }
            Inbound::Invalid { id, error } => {
                tracing::error!(peer = %shared.name, %id, %error, "invalid message from the peer");
                let _ = conn.send_message(Message::Response(Response::error(id, &error)));
                continue;
            }
            Inbound::BadResponse { id, error } => {
                tracing::error!(peer = %shared.name, %id, %error, "malformed response from the peer");
                shared.pending.resolve(
                    &id,
                    super::outgoing::Arrived {
                        result: Err(error),
                        barrier: enqueued,
                    },
                );
                continue;
            }
        };

        let backlog = shared.backlog.push();
        enqueued += 1;
        if queue.send(dispatch).is_err() {
            break "the dispatcher stopped".to_owned();
        }
        if backlog >= max_backlog {
            break format!(
                "the peer sent {backlog} messages that the handler has not processed yet"
            );
        }
        if backlog >= BACKPRESSURE_AT && !wait_for_room(shared).await {
            break "closed locally".to_owned();
        }
    };
    tracing::debug!(peer = %shared.name, reason = %why, "connection reader ended");
    conn.end(why);
}

/// Pauses the reader while the backlog is full and no response is awaited; `false` when the
/// connection is shutting down meanwhile.
async fn wait_for_room(shared: &Shared) -> bool {
    loop {
        let room = shared.backlog.room.notified();
        tokio::pin!(room);
        room.as_mut().enable();
        if shared.backlog.len.load(Ordering::Acquire) < BACKPRESSURE_AT
            || !shared.pending.is_empty()
        {
            return true;
        }
        tokio::select! {
            _ = room => {}
            _ = shared.shutdown.cancelled() => return false,
        }
    }
}

async fn run_dispatcher<H: Handler>(
    mut handler: H,
    conn: Connection,
    mut queue: mpsc::UnboundedReceiver<Dispatch>,
) {
    while let Some(dispatch) = queue.recv().await {
        conn.shared.backlog.pop();
        match dispatch {
            Dispatch::Request(request, responder) => {
                // A request cancelled while it waited in the queue never runs.
                if !responder.is_cancelled() {
                    let cancelled = responder.token().clone();
                    let work = handler.handle_request(request, responder, &conn);
                    start(&conn, async move {
                        tokio::select! {
                            biased;
                            _ = cancelled.cancelled() => {}
                            _ = work => {}
                        }
                    })
                    .await;
                }
            }
            Dispatch::Notification(n) => {
                let work = handler.handle_notification(n, &conn);
                start(&conn, work).await;
            }
        }
        conn.shared.order.advance();
    }
    conn.shared.order.finish();
    // Requests whose handlers are still running are answered before the transport closes.
    conn.shared.in_flight.all_answered().await;
    let _ = conn.shared.outgoing.send(Outgoing::Close);
}

/// Runs `work` until it first waits; if it does, it goes on in a task of its own.
async fn start(conn: &Connection, work: impl Future<Output = ()> + Send + 'static) {
    let mut work = Box::pin(work);
    let first = std::future::poll_fn(|cx| std::task::Poll::Ready(work.as_mut().poll(cx))).await;
    if first.is_pending() {
        let done = conn.shared.done.clone();
        tokio::spawn(async move {
            tokio::select! {
                _ = work => {}
                _ = done.cancelled() => {}
            }
        });
    }
}

async fn run_writer<W: MessageWriter>(
    mut writer: W,
    conn: Connection,
    mut rx: mpsc::UnboundedReceiver<Outgoing>,
) {
    let mut batch = Vec::with_capacity(MAX_WRITE_BATCH);
    let mut closing = false;
    while let Some(first) = rx.recv().await {
        let mut next = Some(first);
        while let Some(item) = next.take() {
            match item {
                Outgoing::Message(m) => batch.push(m),
                Outgoing::Close => {
                    closing = true;
                    break;
                }
            }
            if batch.len() < MAX_WRITE_BATCH {
                next = rx.try_recv().ok();
            }
        }
        if !batch.is_empty()
            && let Err(e) = writer.write(&mut batch).await
        {
            tracing::debug!(peer = %conn.shared.name, error = %e, "write failed; ending the connection");
            conn.end(format!("write error: {e}"));
            conn.shared.shutdown.cancel();
            // Nothing can reach the peer any more: stop the handlers still working for it.
            conn.shared.in_flight.cancel_all();
            batch.clear();
            // Keep draining so the dispatcher's final Close is seen and senders do not pile up.
            if !closing {
                drain_until_close(&mut rx).await;
            }
            break;
        }
        if closing {
            break;
        }
    }
    if let Err(e) = writer.close().await {
        tracing::debug!(peer = %conn.shared.name, error = %e, "closing the transport failed");
    }
}

async fn drain_until_close(rx: &mut mpsc::UnboundedReceiver<Outgoing>) {
    while let Some(item) = rx.recv().await {
        if let Outgoing::Close = item {
            return;
        }
    }
}
