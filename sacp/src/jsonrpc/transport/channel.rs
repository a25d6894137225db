//! The in-process transport: two connections exchanging `Message` values.

use tokio::sync::mpsc;

use super::{Inbound, MessageReader, MessageWriter, Transport};
use crate::jsonrpc::Message;

/// How many messages may be in flight one way before the sender waits.
const CAPACITY: usize = 1024;

/// One end of an in-process transport pair (see [`channel`]).
#[derive(Debug)]
pub struct Channel {
    tx: mpsc::Sender<Message>,
    rx: mpsc::Receiver<Message>,
}

/// Two connected in-process transports: what one end writes, the other reads, as `Message`
/// values (payloads stay raw; nothing is framed or parsed). Bounded, so a slow reader slows
/// its writer instead of growing memory.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use sacp::jsonrpc::{Connection, Router, channel};
/// let (a, b) = channel();
/// let server = Connection::builder().spawn(a, Router::new());
/// let client = Connection::builder().spawn(b, Router::new());
/// let err = client.request_raw("nobody/handles/this", None).await.unwrap_err();
/// assert_eq!(err.code, -32601);
/// # drop(server); }
/// ```
pub fn channel() -> (Channel, Channel) {
    let (tx_a, rx_a) = mpsc::channel(CAPACITY);
    let (tx_b, rx_b) = mpsc::channel(CAPACITY);
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
            ChannelReader { rx: self.rx },
            ChannelWriter { tx: Some(self.tx) },
        )
    }
}

/// The reading half of a [`Channel`].
#[derive(Debug)]
pub struct ChannelReader {
    rx: mpsc::Receiver<Message>,
}

impl MessageReader for ChannelReader {
    async fn read(&mut self) -> std::io::Result<Option<Inbound>> {
        Ok(self.rx.recv().await.map(Inbound::Message))
    }
}

/// The writing half of a [`Channel`].
#[derive(Debug)]
pub struct ChannelWriter {
    tx: Option<mpsc::Sender<Message>>,
}

impl MessageWriter for ChannelWriter {
    async fn write(&mut self, batch: &mut Vec<Message>) -> std::io::Result<()> {
        let tx = self.tx.as_ref().ok_or(std::io::ErrorKind::BrokenPipe)?;
        for m in batch.drain(..) {
            tx.send(m)
                .await
                .map_err(|_| std::io::Error::from(std::io::ErrorKind::BrokenPipe))?;
        }
        Ok(())
    }

    async fn close(&mut self) -> std::io::Result<()> {
        self.tx = None;
        Ok(())
    }
}
