//! A connection's two tasks: a reader that hands inbound messages to the event loop, and a
//! writer that writes what the loop routed to it, in batches.
//!
//! **Backpressure** (see [`crate::account`]): a reader checks the accounts it answers to before
//! each read — its own (what it read that travels up and is not written yet) and, for the
//! editor's reader, the chain's down account — and stops while one is over its limit, so the
//! peer's pipe fills up and the peer slows down instead of the conductor's memory growing.
//! The event loop itself never waits on a writer, so one slow peer never stalls the routing of
//! the others.
//!
//! **Batches.** A reader hands over everything that one read brought in (up to [`BATCH`]
//! messages) as one event, and the loop hands each writer everything routed to it from that
//! event as one item: the hand-offs between tasks cost per batch, not per message.

use std::sync::Arc;

use sacp::jsonrpc::{Inbound, Message, MessageReader, MessageWriter, Transport};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::account::{Account, Charge, DOWN_LIMIT, UP_LIMIT};
use sacp::protocol::routing::{Conn, EDITOR};

/// The most messages one inbound event carries.
const BATCH: usize = 32;

/// What the connection tasks and the process watchers tell the event loop.
#[derive(Debug)]
pub(crate) enum Event {
    /// A component's process ended.
    Exited(Conn, std::io::Result<std::process::ExitStatus>),
    /// A component in the conductor's process (a WebAssembly component) ended: how.
    #[cfg_attr(not(feature = "wasm"), allow(dead_code))]
    Ended(Conn, sacp::protocol::routing::life::Exited),
    /// Inbound items, in arrival order.
    Inbound(Conn, Vec<Inbound>),
    /// The peer's output ended: `None` at a clean end of stream.
    Closed(Conn, Option<std::io::Error>),
    /// Writing to the peer failed (it closed its input).
    WriteFailed(Conn, std::io::Error),
    /// The session layer's note of a client attaching to or leaving a session.
    Note(crate::sessions::Note),
}

/// Messages routed to a connection's writer, in order.
#[derive(Debug)]
pub(crate) struct Out {
    pub(crate) messages: Vec<Message>,
    /// What they were charged, given back once they are written.
    pub(crate) charges: Vec<Charge>,
}

/// The sending side of a connection, held by the event loop. Dropping it closes the
/// connection's output once everything queued is written.
#[derive(Debug)]
pub(crate) struct Outbox {
    queue: mpsc::UnboundedSender<Out>,
    writer: JoinHandle<()>,
    /// What this connection's reader read that travels up and is not written yet.
    pub(crate) up: Arc<Account>,
}

impl Outbox {
    /// Queues a message; `false` when the writer has stopped (the peer is gone).
    pub(crate) fn send(&self, out: Out) -> bool {
        self.queue.send(out).is_ok()
    }

    /// Closes the output after what is queued, and waits until it is written.
    pub(crate) async fn close(self) {
        drop(self.queue);
        let _ = self.writer.await;
    }
}

/// Starts the reader and writer tasks of `transport`, which is connection `conn`; `down` is the
/// chain's down account.
pub(crate) fn start<T: Transport>(
    conn: Conn,
    transport: T,
    events: mpsc::UnboundedSender<Event>,
    down: Arc<Account>,
) -> Outbox {
    let (reader, writer) = transport.split();
    let (queue, outgoing) = mpsc::unbounded_channel();
    let up = Arc::new(Account::default());
    tokio::spawn(read(conn, reader, events.clone(), up.clone(), down));
    let writer = tokio::spawn(write(conn, writer, outgoing, events));
    Outbox { queue, writer, up }
}

async fn read<R: MessageReader>(
    conn: Conn,
    mut reader: R,
    events: mpsc::UnboundedSender<Event>,
    up: Arc<Account>,
    down: Arc<Account>,
) {
    loop {
        up.below(UP_LIMIT).await;
        if conn == EDITOR {
            down.below(DOWN_LIMIT).await;
        }
        let mut end = None;
        let mut batch = Vec::new();
        match reader.read().await {
            Ok(Some(inbound)) => batch.push(inbound),
            Ok(None) => end = Some(None),
            Err(e) => end = Some(Some(e)),
        }
        // Whatever else is already here (buffered, or readable without waiting) goes along.
        while end.is_none() && batch.len() < BATCH {
            match poll_once(reader.read()) {
                None => break,
                Some(Ok(Some(inbound))) => batch.push(inbound),
                Some(Ok(None)) => end = Some(None),
                Some(Err(e)) => end = Some(Some(e)),
            }
        }
        if !batch.is_empty() {
            let full = batch.len() == BATCH;
            if events.send(Event::Inbound(conn, batch)).is_err() {
                return;
            }
            if full {
                // More may be waiting: let the loop route this batch and the writers send it
                // before reading on, so the next process in the chain starts on it while this
                // one reads the rest. After a partial batch the next read waits anyway, and a
                // yield would only cost a poll of the I/O driver (an `epoll_wait`) per hop.
                tokio::task::yield_now().await;
            }
        }
        if let Some(error) = end {
            let _ = events.send(Event::Closed(conn, error));
            return;
        }
    }
}

/// Polls `future` once: its output if it is ready without waiting. Used on a reader's `read`,
/// which loses nothing when dropped unfinished (what it buffered stays in the reader).
fn poll_once<F: std::future::Future>(future: F) -> Option<F::Output> {
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match std::pin::pin!(future).poll(&mut cx) {
        std::task::Poll::Ready(output) => Some(output),
        std::task::Poll::Pending => None,
    }
}

/// What a message costs against an account: the size of its payload.
pub(crate) fn cost(message: &Message) -> usize {
    match message {
        Message::Request(r) => r.params.as_ref().map_or(0, |p| p.len()),
        Message::Notification(n) => n.params.as_ref().map_or(0, |p| p.len()),
        Message::Response(r) => match &r.body {
            sacp::jsonrpc::ResponseBody::Result(raw) | sacp::jsonrpc::ResponseBody::Error(raw) => {
                raw.len()
            }
        },
    }
}

async fn write<W: MessageWriter>(
    conn: Conn,
    mut writer: W,
    mut outgoing: mpsc::UnboundedReceiver<Out>,
    events: mpsc::UnboundedSender<Event>,
) {
    let mut outs = Vec::with_capacity(64);
    let mut batch = Vec::with_capacity(64);
    let mut charges = Vec::with_capacity(64);
    while outgoing.recv_many(&mut outs, 64).await > 0 {
        for out in outs.drain(..) {
            batch.extend(out.messages);
            charges.extend(out.charges);
        }
        if let Err(e) = writer.write(&mut batch).await {
            let _ = events.send(Event::WriteFailed(conn, e));
            return;
        }
        charges.clear();
    }
    let _ = writer.close().await;
}
