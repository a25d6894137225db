//! The connection's writer task: writes what was queued for the peer, in queue order, one batch
//! per write, and gives each message's budget back once it is written.

use tokio::sync::mpsc;

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
    let mut permits = Vec::with_capacity(MAX_WRITE_BATCH);
    let mut closing = false;
    let mut flushed = Vec::new();
    while let Some(first) = rx.recv().await {
        let mut next = Some(first);
        while let Some(item) = next.take() {
            match item {
                Outgoing::Message(m, permit) => {
                    batch.push(m);
                    permits.extend(permit);
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
            permits.clear();
            // Keep draining so the reader's final Close is seen and senders do not pile up.
            if !closing {
                drain_until_close(&mut rx).await;
            }
            break;
        }
        permits.clear();
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
