//! The server side of ACP's Streamable HTTP profile (see *Streamable HTTP* in [`crate::remote`]):
//! its connections, their SSE streams, and which message goes on which.
//!
//! Each ACP connection is an in-process [`Channel`](crate::jsonrpc::Channel) pair: one end is
//! handed to whatever serves the connection (an agent, a chain), the other is driven here —
//! POSTed messages are written into it in the order their POSTs are taken, and a pump reads
//! what the agent writes and queues each message on its stream:
//!
//! - the answer to a request goes where the request's POST said (its `Acp-Session-Id`, else the
//!   connection's stream; `session/load`'s always on the connection's);
//! - a request or notification with a string `params.sessionId` goes on that session's stream,
//!   anything else on the connection's.
//!
//! Memory is bounded per connection: when its queues hold `max_buffered` bytes, the pump stops
//! reading the agent (which then waits on its own writes), and requests POSTed meanwhile wait
//! too (notifications and responses never do). If the client takes nothing for `stall`, the
//! connection is closed. A stream is read by one receiver at a time (`409` for a second); its
//! queue outlives a receiver that leaves. A connection nobody reads or posts to for `idle` is
//! closed; so is one the agent ends (after its streams drained), and one the client DELETEs.
//!
//! **Resuming a stream.** Every event has an id (`id:`, one counter a connection, so ids grow
//! along every stream), and each stream keeps the last `resume` bytes of the events it sent.
//! A GET with `Last-Event-ID: N` for a stream sends first the kept events after `N` — those a
//! broken stream had sent that its receiver may never have got — then the rest, so that a
//! receiver that resumes gets every event once. One that asks to resume after an event the
//! stream no longer keeps gets `410 Gone` (it would miss events), never a silent gap. A GET
//! without the header sends only what was never sent, as before.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::{sse, wire};
use crate::jsonrpc::transport::{
    ChannelReader, ChannelWriter, Inbound, MessageReader, MessageWriter,
};
use crate::jsonrpc::{Id, Message};
use crate::lock::lock;

/// The most bytes of queued events one write of a stream takes.
const COALESCE: usize = 64 * 1024;

/// Where an agent's message goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Route {
    /// The connection's stream.
    Connection,
    /// A session's stream.
    Session(String),
}

/// The limits of one connection.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub(crate) max_buffered: usize,
    pub(crate) max_session_streams: usize,
    pub(crate) stall: Duration,
    pub(crate) idle: Duration,
    pub(crate) keep_alive: Duration,
    /// The bytes of sent events each stream keeps for a receiver that resumes.
    pub(crate) resume: usize,
}

/// One ACP connection of the HTTP profile.
#[derive(Debug)]
pub(crate) struct Conn {
    pub(crate) id: String,
    limits: Limits,
    /// Into the agent: one POST's message at a time, in the order the POSTs are taken.
    inbound: tokio::sync::Mutex<Option<ChannelWriter>>,
    out: Mutex<Outbound>,
    /// Wakes what waits for room in the queues.
    room: Notify,
    /// Cancelled when the connection ends.
    pub(crate) closed: CancellationToken,
    /// Our clients' requests, still unanswered: where their answers go.
    answer_routes: Mutex<HashMap<Id, Route>>,
    /// The agent's requests, still unanswered: the stream each went on (its answer must come
    /// back naming the same session).
    asked_routes: Mutex<HashMap<Id, Route>>,
    /// When the client last did something (a POST, a byte taken from a stream).
    touched: Mutex<Instant>,
}

#[derive(Debug, Default)]
struct Outbound {
    connection: Queue,
    sessions: HashMap<String, Queue>,
    /// Bytes queued, all streams together.
    bytes: usize,
    /// The agent ended: streams end once drained.
    finished: bool,
    /// The last event id given.
    last_id: u64,
}

#[derive(Debug, Default)]
struct Queue {
    /// Events not sent yet, with their ids.
    events: VecDeque<(u64, Bytes)>,
    /// The last events sent, for a receiver that resumes (at most `resume` bytes of them).
    sent: VecDeque<(u64, Bytes)>,
    sent_bytes: usize,
    /// The id of the newest event sent and no longer kept.
    forgotten: u64,
    /// Whether a receiver holds it.
    held: bool,
    /// Wakes its receiver.
    wake: Arc<Notify>,
}

/// A receiver asked to resume after an event its stream no longer keeps.
#[derive(Debug)]
pub(crate) enum Acquire {
    /// Another receiver holds the stream (or the connection ended).
    Held,
    /// The stream no longer has every event after the one named.
    Gone,
}

impl Queue {
    /// Keeps the events just sent, forgetting the oldest beyond `limit` bytes.
    fn sent(&mut self, events: impl Iterator<Item = (u64, Bytes)>, limit: usize) {
        for (id, event) in events {
            self.sent_bytes += event.len();
            self.sent.push_back((id, event));
        }
        while self.sent_bytes > limit
            && let Some((id, event)) = self.sent.pop_front()
        {
            self.sent_bytes -= event.len();
            self.forgotten = id;
        }
    }
}

impl Conn {
    pub(crate) fn new(id: String, limits: Limits, inbound: ChannelWriter) -> Arc<Conn> {
        Arc::new(Conn {
            id,
            limits,
            inbound: tokio::sync::Mutex::new(Some(inbound)),
            out: Mutex::default(),
            room: Notify::new(),
            closed: CancellationToken::new(),
            answer_routes: Mutex::default(),
            asked_routes: Mutex::default(),
            touched: Mutex::new(Instant::now()),
        })
    }

    pub(crate) fn touch(&self) {
        *lock(&self.touched) = Instant::now();
    }

    /// Whether nobody reads any of its streams and the client did nothing for `idle`.
    pub(crate) fn is_idle(&self) -> bool {
        let out = lock(&self.out);
        let held = out.connection.held || out.sessions.values().any(|q| q.held);
        !held && lock(&self.touched).elapsed() >= self.limits.idle
    }

    /// Writes a client's message into the agent. `false` when the agent's side is gone.
    pub(crate) async fn to_agent(&self, message: Message) -> bool {
        self.touch();
        let mut inbound = self.inbound.lock().await;
        let Some(writer) = inbound.as_mut() else {
            return false;
        };
        let mut batch = vec![message];
        tokio::select! {
            written = writer.write(&mut batch) => written.is_ok(),
            () = self.closed.cancelled() => false,
        }
    }

    /// Notes where the answer to the client's request `id` goes.
    pub(crate) fn expect_answer(&self, id: Id, route: Route) {
        lock(&self.answer_routes).insert(id, route);
    }

    /// The stream the agent's request `id` went on (taken: its answer has come).
    pub(crate) fn asked_route(&self, id: &Id) -> Option<Route> {
        lock(&self.asked_routes).remove(id)
    }

    /// Waits until the queues have room (what a request POST does before it reaches the
    /// agent). `false` when the connection ended meanwhile.
    pub(crate) async fn room(&self) -> bool {
        loop {
            let wait = self.room.notified();
            tokio::pin!(wait);
            wait.as_mut().enable();
            if self.closed.is_cancelled() {
                return false;
            }
            if lock(&self.out).bytes < self.limits.max_buffered {
                return true;
            }
            tokio::select! {
                () = wait => {}
                () = self.closed.cancelled() => return false,
            }
        }
    }

    /// Takes a stream for one receiver — resuming after event `after` (its `Last-Event-ID`)
    /// if given: the events sent since then go out again first.
    pub(crate) fn acquire(
        self: &Arc<Self>,
        session: Option<String>,
        after: Option<u64>,
    ) -> Result<Receiver, Acquire> {
        if self.closed.is_cancelled() {
            return Err(Acquire::Held);
        }
        let mut guard = lock(&self.out);
        let out = &mut *guard;
        let queue = match &session {
            None => &mut out.connection,
            Some(s) => out.sessions.entry(s.clone()).or_default(),
        };
        if queue.held {
            return Err(Acquire::Held);
        }
        if let Some(after) = after {
            if after < queue.forgotten {
                return Err(Acquire::Gone);
            }
            // What the broken stream sent after `after` goes out again, in order, first.
            while let Some((id, event)) = queue.sent.pop_back() {
                queue.sent_bytes -= event.len();
                if id <= after {
                    queue.sent.clear();
                    queue.sent_bytes = 0;
                    queue.forgotten = id;
                    break;
                }
                out.bytes += event.len();
                queue.events.push_front((id, event));
            }
        }
        queue.held = true;
        let wake = queue.wake.clone();
        drop(guard);
        self.touch();
        Ok(Receiver {
            conn: self.clone(),
            session,
            wake,
        })
    }

    /// Queues one of the agent's messages on its stream, waiting for room first; `false` when
    /// the connection must end (it ended, the client stalled, too many unread sessions).
    async fn queue(&self, message: Message) -> bool {
        if !self.wait_for_room().await {
            return false;
        }
        let route = match &message {
            Message::Response(r) => lock(&self.answer_routes)
                .remove(&r.id)
                .unwrap_or(Route::Connection),
            _ => match wire::session_of_params(&message) {
                Some(session) => Route::Session(session.into_owned()),
                None => Route::Connection,
            },
        };
        if let Message::Request(r) = &message {
            lock(&self.asked_routes).insert(r.id.clone(), route.clone());
        }
        let event = sse::data(&message);
        let mut out = lock(&self.out);
        out.last_id += 1;
        let id = out.last_id;
        let event = sse::with_id(event, id);
        out.bytes += event.len();
        let unread = out
            .sessions
            .values()
            .filter(|q| !q.held && !q.events.is_empty())
            .count();
        let queue = match route {
            Route::Connection => &mut out.connection,
            Route::Session(session) => {
                let fresh = !out.sessions.contains_key(&session);
                if fresh && unread >= self.limits.max_session_streams {
                    tracing::warn!(connection = %self.id, "more sessions with unread output than the limit: closing the connection");
                    return false;
                }
                out.sessions.entry(session).or_default()
            }
        };
        queue.events.push_back((id, event));
        queue.wake.notify_one();
        true
    }

    /// Queues on the connection's stream a message the agent would have sent (the answer to a
    /// POSTed object that is no message, which never reaches the agent).
    pub(crate) fn answer_for_agent(&self, message: Message) {
        let event = sse::data(&message);
        let mut out = lock(&self.out);
        out.last_id += 1;
        let id = out.last_id;
        let event = sse::with_id(event, id);
        out.bytes += event.len();
        out.connection.events.push_back((id, event));
        out.connection.wake.notify_one();
    }

    /// Waits while the queues are full; `false` if the client takes nothing for `stall`.
    async fn wait_for_room(&self) -> bool {
        loop {
            let wait = self.room.notified();
            tokio::pin!(wait);
            wait.as_mut().enable();
            if lock(&self.out).bytes < self.limits.max_buffered {
                return true;
            }
            tokio::select! {
                () = wait => {}
                () = self.closed.cancelled() => return false,
                () = tokio::time::sleep(self.limits.stall) => {
                    if lock(&self.touched).elapsed() >= self.limits.stall {
                        tracing::warn!(connection = %self.id, "the client read none of its output for {:?}: closing the connection", self.limits.stall);
                        return false;
                    }
                }
            }
        }
    }

    /// Ends the connection: streams cut, queued messages dropped, the agent's input closed.
    pub(crate) async fn close(&self) {
        self.closed.cancel();
        {
            let mut out = lock(&self.out);
            out.connection.events.clear();
            out.sessions.clear();
            out.bytes = 0;
            out.connection.wake.notify_one();
        }
        self.room.notify_waiters();
        if let Some(mut writer) = self.inbound.lock().await.take() {
            let _ = writer.close().await;
        }
    }

    /// The agent ended: what it wrote still goes out, then each stream ends.
    fn finish(&self) {
        let mut out = lock(&self.out);
        out.finished = true;
        out.connection.wake.notify_one();
        for queue in out.sessions.values() {
            queue.wake.notify_one();
        }
    }

    /// Whether the agent ended and every stream is drained.
    fn drained(&self) -> bool {
        let out = lock(&self.out);
        out.finished && out.bytes == 0
    }
}

/// Reads what the agent writes into the connection's streams, until the agent ends or the
/// connection does.
pub(crate) async fn pump(conn: Arc<Conn>, mut agent: ChannelReader) {
    loop {
        let read = tokio::select! {
            read = agent.read() => read,
            () = conn.closed.cancelled() => return,
        };
        match read {
            Ok(Some(Inbound::Message(message))) => {
                if !conn.queue(message).await {
                    conn.close().await;
                    return;
                }
            }
            Ok(Some(_)) => {}
            Ok(None) | Err(_) => {
                conn.finish();
                return;
            }
        }
    }
}

/// One receiver of one stream: the body of an SSE response.
#[derive(Debug)]
pub(crate) struct Receiver {
    conn: Arc<Conn>,
    session: Option<String>,
    wake: Arc<Notify>,
}

impl Receiver {
    /// The next event (or keep-alive comment) to send; `None` at the stream's end.
    pub(crate) async fn next(&mut self) -> Option<Bytes> {
        loop {
            let wait = self.wake.notified();
            tokio::pin!(wait);
            wait.as_mut().enable();
            if self.conn.closed.is_cancelled() {
                return None;
            }
            {
                let mut out = lock(&self.conn.out);
                let finished = out.finished;
                let resume = self.conn.limits.resume;
                let queue = match &self.session {
                    None => Some(&mut out.connection),
                    Some(s) => out.sessions.get_mut(s),
                };
                if let Some(queue) = queue
                    && let Some(first) = queue.events.pop_front()
                {
                    // What queued up goes out in one piece (one write, not one per event), up
                    // to a bound; what goes out is kept for a receiver that resumes.
                    let mut taken = first.1.len();
                    let event = if queue.events.is_empty() {
                        let event = first.1.clone();
                        queue.sent(std::iter::once(first), resume);
                        event
                    } else {
                        let mut joined = bytes::BytesMut::from(&first.1[..]);
                        let mut sent = vec![first];
                        while taken < COALESCE
                            && let Some(next) = queue.events.pop_front()
                        {
                            taken += next.1.len();
                            joined.extend_from_slice(&next.1);
                            sent.push(next);
                        }
                        queue.sent(sent.into_iter(), resume);
                        joined.freeze()
                    };
                    out.bytes -= taken;
                    drop(out);
                    self.conn.touch();
                    self.conn.room.notify_waiters();
                    return Some(event);
                }
                if finished {
                    return None;
                }
            }
            tokio::select! {
                () = wait => {}
                () = self.conn.closed.cancelled() => return None,
                () = tokio::time::sleep(self.conn.limits.keep_alive) => {
                    return Some(Bytes::from_static(sse::KEEP_ALIVE));
                }
            }
        }
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let mut out = lock(&self.conn.out);
        let queue = match &self.session {
            None => Some(&mut out.connection),
            Some(s) => out.sessions.get_mut(s),
        };
        if let Some(queue) = queue {
            queue.held = false;
            // A session stream nobody holds, nothing fills and nobody may resume is forgotten.
            if self.session.is_some() && queue.events.is_empty() && queue.sent.is_empty() {
                let session = self.session.clone().unwrap_or_default();
                out.sessions.remove(&session);
            }
        }
        drop(out);
        self.conn.touch();
    }
}

/// Every connection of a server's HTTP profile.
#[derive(Debug, Default)]
pub(crate) struct Registry {
    conns: Mutex<HashMap<String, Arc<Conn>>>,
    /// Live ACP connections of both profiles (the server's limit counts them all).
    pub(crate) live: Arc<AtomicUsize>,
}

impl Registry {
    pub(crate) fn get(&self, id: &str) -> Option<Arc<Conn>> {
        lock(&self.conns)
            .get(id)
            .filter(|c| !c.closed.is_cancelled())
            .cloned()
    }

    pub(crate) fn insert(&self, conn: Arc<Conn>) {
        lock(&self.conns).insert(conn.id.clone(), conn);
    }

    /// Ends and forgets connection `id`; `false` if there was none.
    pub(crate) async fn remove(&self, id: &str) -> bool {
        let conn = lock(&self.conns).remove(id);
        match conn {
            Some(conn) => {
                conn.close().await;
                self.live.fetch_sub(1, Ordering::AcqRel);
                true
            }
            None => false,
        }
    }

    /// Ends every connection (the server is shutting down).
    pub(crate) async fn close_all(&self) {
        let ids: Vec<String> = lock(&self.conns).keys().cloned().collect();
        for id in ids {
            self.remove(&id).await;
        }
    }

    /// Closes the connections that went idle, and forgets those the agent ended and whose
    /// streams drained.
    pub(crate) async fn sweep(&self) {
        let over: Vec<String> = lock(&self.conns)
            .values()
            .filter(|c| c.is_idle() || c.drained() || c.closed.is_cancelled())
            .map(|c| c.id.clone())
            .collect();
        for id in over {
            tracing::debug!(connection = %id, "closing an idle or ended HTTP connection");
            self.remove(&id).await;
        }
    }
}
