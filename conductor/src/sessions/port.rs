//! The layer's side of a chain as a transport: what the chain's editor endpoint reads (what
//! the layer sends the chain) and writes (what the chain sends its editor).
//!
//! The chain's writer task calls [`PortWriter::write`] with each batch the chain routed to its
//! editor, and the layer deals with it there and then — each session's record, each client's
//! connection — with no task of its own in between: a message of the chain costs the layer no
//! hand-off. While a record has no room, the write waits, so the chain holds back what it reads
//! from the agent as it does for a slow editor. What the layer sends the chain goes through a
//! bounded queue, read by the chain's editor reader.

use std::sync::Weak;

use sacp::jsonrpc::{Inbound, Message, MessageReader, MessageWriter, Transport};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::Layer;
use super::chain::ChainLink;

/// How many messages the layer may queue for a chain before it waits.
pub(super) const QUEUE: usize = 64;

/// The transport on which the layer is a chain's editor.
#[derive(Debug)]
pub(crate) struct Port {
    reader: PortReader,
    writer: PortWriter,
}

impl Port {
    pub(super) fn new(
        to_chain: mpsc::Receiver<Message>,
        closed: CancellationToken,
        layer: Weak<Layer>,
        link: Weak<ChainLink>,
    ) -> Port {
        Port {
            reader: PortReader { to_chain, closed },
            writer: PortWriter { layer, link },
        }
    }
}

impl Transport for Port {
    type Reader = PortReader;
    type Writer = PortWriter;

    fn split(self) -> (PortReader, PortWriter) {
        (self.reader, self.writer)
    }
}

/// What the layer sends the chain, until the layer closes its side.
#[derive(Debug)]
pub(crate) struct PortReader {
    to_chain: mpsc::Receiver<Message>,
    closed: CancellationToken,
}

impl MessageReader for PortReader {
    async fn read(&mut self) -> std::io::Result<Option<Inbound>> {
        // What was queued before the layer closed its side still goes.
        if let Ok(message) = self.to_chain.try_recv() {
            return Ok(Some(Inbound::Message(message)));
        }
        tokio::select! {
            biased;
            message = self.to_chain.recv() => Ok(message.map(Inbound::Message)),
            () = self.closed.cancelled() => Ok(None),
        }
    }
}

/// What the chain sends its editor, taken by the layer as it comes.
#[derive(Debug)]
pub(crate) struct PortWriter {
    layer: Weak<Layer>,
    link: Weak<ChainLink>,
}

impl MessageWriter for PortWriter {
    async fn write(&mut self, batch: &mut Vec<Message>) -> std::io::Result<()> {
        let (Some(layer), Some(link)) = (self.layer.upgrade(), self.link.upgrade()) else {
            batch.clear();
            return Err(std::io::Error::new(
                std::io::ErrorKind::BrokenPipe,
                "the session layer has stopped",
            ));
        };
        for message in batch.drain(..) {
            layer.take_from_chain(&link, message).await;
        }
        Ok(())
    }

    async fn close(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
