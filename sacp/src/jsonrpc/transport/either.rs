//! [`Either`]: one of two transports (or of two readers, or of two writers), chosen at run
//! time — a program that reaches its peer over a pipe or over the network, say — behind one
//! type, with no boxing and no hand-written delegation per pair.

use super::{Inbound, Message, MessageReader, MessageWriter, Transport};

/// One of two transports, or of their halves: it is a [`Transport`] when both are, and
/// splits into an `Either` of their readers and an `Either` of their writers, which read and
/// write as the one they hold. Nest it for more than two
/// (`Either<A, Either<B, C>>`).
///
/// ```no_run
/// use sacp::jsonrpc::{ByteStream, Either, channel};
///
/// # fn pick(use_pipes: bool) {
/// let transport = if use_pipes {
///     Either::Left(ByteStream::new(tokio::io::stdin(), tokio::io::stdout()))
/// } else {
///     Either::Right(channel().0)
/// };
/// let _conn = sacp::jsonrpc::Connection::builder().spawn(transport, sacp::jsonrpc::Methods::new());
/// # }
/// ```
pub enum Either<A, B> {
    /// The first kind.
    Left(A),
    /// The second kind.
    Right(B),
}

/// Names the side it holds (the halves of a byte stream have no `Debug` of their own).
impl<A, B> std::fmt::Debug for Either<A, B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Either::Left(_) => "Either::Left(..)",
            Either::Right(_) => "Either::Right(..)",
        })
    }
}

impl<A: Transport, B: Transport> Transport for Either<A, B> {
    type Reader = Either<A::Reader, B::Reader>;
    type Writer = Either<A::Writer, B::Writer>;

    fn split(self) -> (Self::Reader, Self::Writer) {
        match self {
            Either::Left(a) => {
                let (r, w) = a.split();
                (Either::Left(r), Either::Left(w))
            }
            Either::Right(b) => {
                let (r, w) = b.split();
                (Either::Right(r), Either::Right(w))
            }
        }
    }
}

impl<A: MessageReader, B: MessageReader> MessageReader for Either<A, B> {
    async fn read(&mut self) -> std::io::Result<Option<Inbound>> {
        match self {
            Either::Left(r) => r.read().await,
            Either::Right(r) => r.read().await,
        }
    }
}

impl<A: MessageWriter, B: MessageWriter> MessageWriter for Either<A, B> {
    async fn write(&mut self, batch: &mut Vec<Message>) -> std::io::Result<()> {
        match self {
            Either::Left(w) => w.write(batch).await,
            Either::Right(w) => w.write(batch).await,
        }
    }

    async fn close(&mut self) -> std::io::Result<()> {
        match self {
            Either::Left(w) => w.close().await,
            Either::Right(w) => w.close().await,
        }
    }
}

/// A boxed transport is the transport it holds (for a large one inside an [`Either`]).
impl<T: Transport> Transport for Box<T> {
    type Reader = T::Reader;
    type Writer = T::Writer;

    fn split(self) -> (T::Reader, T::Writer) {
        (*self).split()
    }
}
