//! The connection's writer task: writes what was queued for the peer, in queue order, one batch
//! per write, and gives the batch's budget back once it is written — in one go: the budget's
//! shares are merged as they come, so that giving them back takes its lock once a batch, not
//! once a message.

use tokio::sync::mpsc;

use super::budget::Permit;
use super::connection::{Connection, Outgoing};
use super::transport::MessageWriter;

/// The most messages one write takes.
const MAX_WRITE_BATCH: usize = 512;

pub(crate) async fn run<W: MessageWriter>(
    mut writer: W,
    conn: Connection,
    mut rx: mpsc::UnboundedReceiver<Outgoing>,
) {
    let mut batch = Vec::with_capacity(MAX_WRITE_BATCH);
    // What the batch holds of the connection's one budget (see `Connection::send`).
    let mut permits: Option<Permit> = None;
    let mut closing = false;
    let mut flushed = Vec::new();
    while let Some(first) = rx.recv().await {
        let mut next = Some(first);
        while let Some(item) = next.take() {
            match item {
                Outgoing::Message(m, permit) => {
                    batch.push(m);
                    match (&mut permits, permit) {
                        (Some(held), Some(more)) => held.merge(more),
                        (held @ None, more) => *held = more,
                        (Some(_), None) => {}
                    }
                }
                Outgoing::Flushed(tell) => {
                    flushed.push(tell);
                    break;
                }
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
            tracing::debug!(peer = %conn.name(), error = %e, "write failed; ending the connection");
            // Nothing can reach the peer any more: stop the work still going on for it.
            conn.write_failed(format!("write error: {e}"));
            batch.clear();
            drop(permits.take());
            // Keep draining so the reader's final Close is seen and senders do not pile up.
            if !closing {
                drain_until_close(&mut rx).await;
            }
            break;
        }
        drop(permits.take());
        for tell in flushed.drain(..) {
            let _ = tell.send(());
        }
        if closing {
            break;
        }
    }
    if let Err(e) = writer.close().await {
        tracing::debug!(peer = %conn.name(), error = %e, "closing the transport failed");
    }
}

async fn drain_until_close(rx: &mut mpsc::UnboundedReceiver<Outgoing>) {
    while let Some(item) = rx.recv().await {
        if let Outgoing::Close = item {
            return;
        }
    }
}
