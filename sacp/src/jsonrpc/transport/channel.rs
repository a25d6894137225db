//! The in-process transport: two connections exchanging `Message` values.
//!
//! Messages travel in batches (what the writer was given at once, cut into [`BATCH`]es): one
//! channel operation and at most one wake-up of the reader per batch, not per message.

use tokio::sync::mpsc;

use super::{Inbound, MessageReader, MessageWriter, Transport};
use crate::jsonrpc::Message;

/// The most messages one batch carries.
const BATCH: usize = 64;

/// How many batches may be in flight one way before the sender waits: at most
/// `BATCH * BATCHES` (1,024) messages, plus the one batch the reader is taking apart.
const BATCHES: usize = 16;

/// One end of an in-process transport pair (see [`channel`]).
#[derive(Debug)]
pub struct Channel {
    tx: mpsc::Sender<Vec<Message>>,
    rx: mpsc::Receiver<Vec<Message>>,
}

/// Two connected in-process transports: what one end writes, the other reads, as `Message`
/// values (payloads stay raw; nothing is framed or parsed). Bounded, so a slow reader slows
/// its writer instead of growing memory.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use sacp::jsonrpc::{Connection, Methods, channel};
/// let (a, b) = channel();
/// let server = Connection::builder().spawn(a, Methods::new());
/// let client = Connection::builder().spawn(b, Methods::new());
/// let err = client.request_raw("nobody/handles/this", None).await.unwrap_err();
/// assert_eq!(err.code, -32601);
/// # drop(server); }
/// ```
pub fn channel() -> (Channel, Channel) {
    let (tx_a, rx_a) = mpsc::channel(BATCHES);
    let (tx_b, rx_b) = mpsc::channel(BATCHES);
    (
        Channel { tx: tx_a, rx: rx_b },
        Channel { tx: tx_b, rx: rx_a },
    )
}

impl Transport for Channel {
    type Reader = ChannelReader;
    type Writer = ChannelWriter;

    fn split(self) -> (ChannelReader, ChannelWriter) {
        (
            ChannelReader {
                rx: self.rx,
                batch: Vec::new().into_iter(),
            },
            ChannelWriter { tx: Some(self.tx) },
        )
    }
}

/// The reading half of a [`Channel`].
#[derive(Debug)]
pub struct ChannelReader {
    rx: mpsc::Receiver<Vec<Message>>,
    /// The rest of the batch received last.
    batch: std::vec::IntoIter<Message>,
}

impl MessageReader for ChannelReader {
    async fn read(&mut self) -> std::io::Result<Option<Inbound>> {
        loop {
            if let Some(message) = self.batch.next() {
                return Ok(Some(Inbound::Message(message)));
            }
            // Cancel-safe: a batch is either still in the channel or already in `self.batch`.
            match self.rx.recv().await {
                Some(batch) => self.batch = batch.into_iter(),
                None => return Ok(None),
            }
        }
    }
}

/// The writing half of a [`Channel`].
#[derive(Debug)]
pub struct ChannelWriter {
    tx: Option<mpsc::Sender<Vec<Message>>>,
}

impl MessageWriter for ChannelWriter {
    async fn write(&mut self, batch: &mut Vec<Message>) -> std::io::Result<()> {
        let tx = self.tx.as_ref().ok_or(std::io::ErrorKind::BrokenPipe)?;
        let closed = |_| std::io::Error::from(std::io::ErrorKind::BrokenPipe);
        while batch.len() > BATCH {
            let rest = batch.split_off(BATCH);
            tx.send(std::mem::replace(batch, rest))
                .await
                .map_err(closed)?;
        }
        if !batch.is_empty() {
            // The next batch gets a buffer of this one's size: one allocation, no regrowth.
            let next = Vec::with_capacity(batch.len());
            tx.send(std::mem::replace(batch, next))
                .await
                .map_err(closed)?;
        }
        Ok(())
    }

    async fn close(&mut self) -> std::io::Result<()> {
        self.tx = None;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonrpc::Notification;

    fn numbered(n: usize) -> Message {
        Message::Notification(Notification {
            method: format!("m{n}"),
            params: None,
        })
    }

    async fn next_method(reader: &mut ChannelReader) -> Option<String> {
        match reader.read().await.unwrap()? {
            Inbound::Message(Message::Notification(n)) => Some(n.method),
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn batches_keep_order_and_bound_what_waits_unread() {
        let (a, b) = channel();
        let (_, mut writer) = a.split();
        let (mut reader, _) = b.split();
        // One write of more than a batch arrives whole and in order.
        let mut batch: Vec<Message> = (0..200).map(numbered).collect();
        writer.write(&mut batch).await.unwrap();
        assert!(batch.is_empty());
        for n in 0..200 {
            assert_eq!(next_method(&mut reader).await, Some(format!("m{n}")));
        }
        // With nobody reading, the writer waits once 1,024 messages are in flight.
        let mut full: Vec<Message> = (0..BATCH * BATCHES).map(numbered).collect();
        writer.write(&mut full).await.unwrap();
        let mut more = vec![numbered(9999)];
        let waited = tokio::time::timeout(
            std::time::Duration::from_millis(100),
            writer.write(&mut more),
        )
        .await;
        assert!(waited.is_err(), "the writer did not wait for the reader");
        // Reading makes room; closing the writer ends the stream after what it sent.
        assert_eq!(next_method(&mut reader).await, Some("m0".to_owned()));
        let mut more = vec![numbered(9999)];
        writer.write(&mut more).await.unwrap();
        writer.close().await.unwrap();
        for n in 1..BATCH * BATCHES {
            assert_eq!(next_method(&mut reader).await, Some(format!("m{n}")));
        }
        assert_eq!(next_method(&mut reader).await, Some("m9999".to_owned()));
        assert_eq!(next_method(&mut reader).await, None);
    }
}
