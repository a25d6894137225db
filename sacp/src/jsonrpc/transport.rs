//! Transports: how messages get to and from a peer.
//!
//! A connection runs over any [`Transport`], which splits into a [`MessageReader`] and a
//! [`MessageWriter`]. These come with the crate:
//! - [`ByteStream`]: newline-delimited JSON over any `AsyncRead` + `AsyncWrite` pair (stdio,
//!   child-process pipes, TCP, Unix sockets, in-memory duplex streams);
//! - [`Channel`] (made in pairs by [`channel`]): moves [`Message`] values between two
//!   connections in one process, with no framing, serializing or parsing of the envelope;
//!
//! ACP's network transport (its Streamable HTTP and WebSocket profiles) is ACP's, not
//! JSON-RPC's: it lives in the protocol layer, [`crate::remote`] (feature `remote`), behind
//! the same [`Transport`] seam.

mod byte_stream;
mod channel;
mod either;
#[cfg(all(feature = "stdio", not(target_os = "wasi")))]
mod stdio;
#[cfg(all(target_os = "wasi", target_env = "p2"))]
#[path = "transport/stdio_wasi.rs"]
mod stdio;

use std::future::Future;

pub use self::byte_stream::{ByteStream, LineMessageReader, LineMessageWriter};
pub use self::channel::{Channel, ChannelReader, ChannelWriter, channel};
pub use self::either::Either;
#[cfg(all(target_os = "wasi", target_env = "p2"))]
pub(crate) use self::stdio::block_on;
#[cfg(any(feature = "stdio", all(target_os = "wasi", target_env = "p2")))]
pub use self::stdio::{StdinReader, StdoutWriter};
use super::{Error, Id, Message};

/// What a [`MessageReader`] read.
#[derive(Debug)]
pub enum Inbound {
    /// A well-formed message.
    Message(Message),
    /// Input that is not a valid message. The connection answers it with `error` (`id` is
    /// `Null` when the id could not be read) and keeps going.
    Invalid {
        /// The id of the offending request, or `Null`.
        id: Id,
        /// What to answer.
        error: Error,
    },
    /// A malformed response. Nothing is answered; a request waiting on `id` fails with `error`.
    BadResponse {
        /// The id the response named.
        id: Id,
        /// What went wrong.
        error: Error,
    },
}

/// The receiving half of a transport.
pub trait MessageReader: Send + 'static {
    /// The next inbound item; `Ok(None)` at a clean end of the stream.
    fn read(&mut self) -> impl Future<Output = std::io::Result<Option<Inbound>>> + Send;
}

/// The sending half of a transport.
pub trait MessageWriter: Send + 'static {
    /// Sends every message of `batch`, in order, and empties it. Called with whatever queued up
    /// while the previous batch was being written, so byte streams make one write per batch.
    fn write(
        &mut self,
        batch: &mut Vec<Message>,
    ) -> impl Future<Output = std::io::Result<()>> + Send;

    /// Flushes and closes the sending side (the peer reads end of stream).
    fn close(&mut self) -> impl Future<Output = std::io::Result<()>> + Send;
}

/// A bidirectional message transport.
pub trait Transport: Send + 'static {
    /// The receiving half.
    type Reader: MessageReader;
    /// The sending half.
    type Writer: MessageWriter;
    /// Splits into the two halves, which a connection drives from separate tasks.
    fn split(self) -> (Self::Reader, Self::Writer);
}
