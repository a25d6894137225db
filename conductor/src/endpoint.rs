//! A connection's two tasks: a reader that hands inbound messages to the event loop, and a
//! writer that writes what the loop routed to it, in batches.
//!
//! **Backpressure.** Each reader has a budget of bytes (its messages' payload sizes) that are
//! read but not yet written out by whichever writer they were routed to. When a peer sends
//! faster than its messages' destinations read, its reader stops at the budget and the peer's
//! pipe fills up: the peer slows down instead of the conductor's memory growing. The event loop
//! itself never waits on a writer, so one slow peer never stalls the routing of the others;
//! and budgets are per reader, so a peer blocked on its own output never stops the conductor
//! from reading anybody else.
//!
//! **Batches.** A reader hands over everything that one read brought in (up to [`BATCH`]
//! messages) as one event, and the loop hands each writer everything routed to it from that
//! event as one item: the hand-offs between tasks cost per batch, not per message.

use std::sync::Arc;

use sacp::jsonrpc::{Inbound, Message, MessageReader, MessageWriter, Transport};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio::task::JoinHandle;

use crate::route::Conn;

/// Bytes a reader may have read but not yet written out.
pub(crate) const READ_BUDGET: usize = 256 * 1024;

/// The most messages one inbound event carries.
const BATCH: usize = 32;

/// What the connection tasks and the process watchers tell the event loop.
#[derive(Debug)]
pub(crate) enum Event {
    /// A component's process ended.
    Exited(Conn, std::io::Result<std::process::ExitStatus>),
    /// Inbound items, in arrival order, with the budget they hold until they are written.
    Inbound(Conn, Vec<Inbound>, OwnedSemaphorePermit),
    /// The peer's output ended: `None` at a clean end of stream.
    Closed(Conn, Option<std::io::Error>),
    /// Writing to the peer failed (it closed its input).
    WriteFailed(Conn, std::io::Error),
}

/// Messages routed to a connection's writer, in order.
#[derive(Debug)]
pub(crate) struct Out {
    pub(crate) messages: Vec<Message>,
    /// The budget of the reader they came in on, released once they are written.
    pub(crate) permit: Option<OwnedSemaphorePermit>,
}

/// The sending side of a connection, held by the event loop. Dropping it closes the
/// connection's output once everything queued is written.
#[derive(Debug)]
pub(crate) struct Outbox {
    queue: mpsc::UnboundedSender<Out>,
    writer: JoinHandle<()>,
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

/// Starts the reader and writer tasks of `transport`, which is connection `conn`.
pub(crate) fn start<T: Transport>(
    conn: Conn,
    transport: T,
    events: mpsc::UnboundedSender<Event>,
) -> Outbox {
    let (reader, writer) = transport.split();
    let (queue, outgoing) = mpsc::unbounded_channel();
    tokio::spawn(read(conn, reader, events.clone()));
    let writer = tokio::spawn(write(conn, writer, outgoing, events));
    Outbox { queue, writer }
}

async fn read<R: MessageReader>(conn: Conn, mut reader: R, events: mpsc::UnboundedSender<Event>) {
    let budget = Arc::new(Semaphore::new(READ_BUDGET));
    loop {
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
            let cost = batch.iter().map(cost).sum::<usize>().min(READ_BUDGET);
            // READ_BUDGET fits in u32.
            let Ok(permit) = budget.clone().acquire_many_owned(cost as u32).await else {
                return;
            };
            if events.send(Event::Inbound(conn, batch, permit)).is_err() {
                return;
            }
            // Let the loop route this batch and the writers send it before reading on, so the
            // next process in the chain starts on it while this one reads the rest.
            tokio::task::yield_now().await;
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

/// What a message counts against its reader's budget: its payload's size, at least 64. (A
/// batch counts at most the whole budget, so one huge message still goes through, alone.)
fn cost(inbound: &Inbound) -> usize {
    let payload = match inbound {
        Inbound::Message(Message::Request(r)) => r.params.as_ref().map_or(0, |p| p.len()),
        Inbound::Message(Message::Notification(n)) => n.params.as_ref().map_or(0, |p| p.len()),
        Inbound::Message(Message::Response(r)) => match &r.body {
            sacp::jsonrpc::ResponseBody::Result(raw) | sacp::jsonrpc::ResponseBody::Error(raw) => {
                raw.len()
            }
        },
        _ => 0,
    };
    payload.max(64)
}

async fn write<W: MessageWriter>(
    conn: Conn,
    mut writer: W,
    mut outgoing: mpsc::UnboundedReceiver<Out>,
    events: mpsc::UnboundedSender<Event>,
) {
    let mut outs = Vec::with_capacity(64);
    let mut batch = Vec::with_capacity(64);
    let mut permits = Vec::with_capacity(64);
    while outgoing.recv_many(&mut outs, 64).await > 0 {
        for out in outs.drain(..) {
            batch.extend(out.messages);
            permits.extend(out.permit);
        }
        if let Err(e) = writer.write(&mut batch).await {
            let _ = events.send(Event::WriteFailed(conn, e));
            return;
        }
        permits.clear();
    }
    let _ = writer.close().await;
}
