//! Newline-delimited JSON over byte streams.

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};

use super::{Inbound, MessageReader, MessageWriter, Transport};
#[cfg(any(feature = "stdio", all(target_os = "wasi", target_env = "p2")))]
use super::{StdinReader, StdoutWriter};
use crate::jsonrpc::framing::{DEFAULT_MAX_LINE_LENGTH, Frame, LineReader};
use crate::jsonrpc::message::{Parsed, parse_line};
use crate::jsonrpc::{Error, Id, Message};

/// A transport over a byte-stream reader and writer: one JSON-RPC message per line.
///
/// ```no_run
/// use sacp::jsonrpc::ByteStream;
/// // This process's stdin and stdout:
/// let stdio = ByteStream::stdio();
/// // A child's pipes:
/// let mut child = tokio::process::Command::new("my-agent")
///     .stdin(std::process::Stdio::piped())
///     .stdout(std::process::Stdio::piped())
///     .spawn()
///     .unwrap();
/// let pipes = ByteStream::new(child.stdout.take().unwrap(), child.stdin.take().unwrap());
/// ```
#[derive(Debug)]
pub struct ByteStream<R, W> {
    reader: R,
    writer: W,
    max_line_length: usize,
}

impl<R, W> ByteStream<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    /// A transport reading from `reader` and writing to `writer`.
    pub fn new(reader: R, writer: W) -> Self {
        ByteStream {
            reader,
            writer,
            max_line_length: DEFAULT_MAX_LINE_LENGTH,
        }
    }

    /// Sets the longest line accepted, in bytes (default 64 MiB). A longer line is dropped and
    /// answered with `-32600` (its id cannot be known), and the connection keeps working.
    pub fn max_line_length(mut self, bytes: usize) -> Self {
        self.max_line_length = bytes;
        self
    }
}

#[cfg(any(feature = "stdio", all(target_os = "wasi", target_env = "p2")))]
impl ByteStream<StdinReader, StdoutWriter> {
    /// This process's standard input and output. Pipes and sockets (what a conductor or an
    /// editor hands a component) are read and written without a blocking thread in between;
    /// see [`StdinReader`].
    pub fn stdio() -> Self {
        ByteStream::new(StdinReader::new(), StdoutWriter::new())
    }
}

impl<S> ByteStream<tokio::io::ReadHalf<S>, tokio::io::WriteHalf<S>>
where
    S: AsyncRead + AsyncWrite + Send + 'static,
{
    /// A transport over one bidirectional stream (a `TcpStream`, a `UnixStream`, a tokio
    /// `DuplexStream`).
    pub fn duplex(stream: S) -> Self {
        let (r, w) = tokio::io::split(stream);
        ByteStream::new(r, w)
    }
}

impl<R, W> Transport for ByteStream<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Reader = LineMessageReader<R>;
    type Writer = LineMessageWriter<W>;

    fn split(self) -> (Self::Reader, Self::Writer) {
        (
            LineMessageReader {
                lines: LineReader::new(self.reader, self.max_line_length),
                max: self.max_line_length,
            },
            LineMessageWriter {
                writer: self.writer,
                buf: Vec::with_capacity(64 * 1024),
            },
        )
    }
}

/// The reading half of a [`ByteStream`].
#[derive(Debug)]
pub struct LineMessageReader<R> {
    lines: LineReader<R>,
    max: usize,
}

impl<R: AsyncRead + Unpin + Send + 'static> MessageReader for LineMessageReader<R> {
    async fn read(&mut self) -> std::io::Result<Option<Inbound>> {
        Ok(match self.lines.next_frame().await? {
            None => None,
            Some(Frame::Line(line)) => Some(match parse_line(&line) {
                Parsed::Message(m) => Inbound::Message(m),
                Parsed::Invalid { id, error } => Inbound::Invalid { id, error },
                Parsed::BadResponse { id, error } => Inbound::BadResponse { id, error },
            }),
            Some(Frame::TooLong { len }) => Some(Inbound::Invalid {
                id: Id::Null,
                error: Error::invalid_request(format!(
                    "message of {len} bytes exceeds the maximum line length of {} bytes and was dropped",
                    self.max
                )),
            }),
        })
    }
}

/// The writing half of a [`ByteStream`].
#[derive(Debug)]
pub struct LineMessageWriter<W> {
    writer: W,
    buf: Vec<u8>,
}

/// Payloads at least this large are written from where they are rather than copied into the
/// write buffer.
const WRITE_IN_PLACE: usize = 64 * 1024;

impl<W: AsyncWrite + Unpin + Send + 'static> MessageWriter for LineMessageWriter<W> {
    async fn write(&mut self, batch: &mut Vec<Message>) -> std::io::Result<()> {
        self.buf.clear();
        for m in batch.drain(..) {
            let Some(payload) = m.encode_head(&mut self.buf) else {
                self.buf.extend_from_slice(Message::TAIL);
                continue;
            };
            if payload.len() < WRITE_IN_PLACE {
                payload.write_into(&mut self.buf);
            } else {
                // A large payload goes out as it is: what is before it, it, then the rest; an
                // envelope's params likewise, between its head and its closing brace.
                let (payload, close) = match payload.write_envelope_head(&mut self.buf) {
                    Some(params) => (params, true),
                    None => (Some(payload), false),
                };
                self.writer.write_all(&self.buf).await?;
                self.buf.clear();
                if let Some(payload) = payload {
                    self.writer.write_all(payload.as_bytes()).await?;
                }
                if close {
                    self.buf.push(b'}');
                }
            }
            self.buf.extend_from_slice(Message::TAIL);
        }
        self.writer.write_all(&self.buf).await?;
        self.writer.flush().await?;
        if self.buf.capacity() > 4 * 1024 * 1024 {
            // A huge batch should not pin its buffer for the life of the connection.
            self.buf = Vec::with_capacity(64 * 1024);
        }
        Ok(())
    }

    async fn close(&mut self) -> std::io::Result<()> {
        self.writer.flush().await?;
        self.writer.shutdown().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonrpc::{Notification, RawJson};
    use crate::protocol::envelope;

    /// What the writer puts on the wire for `batch`.
    async fn written(batch: Vec<Message>) -> Vec<u8> {
        let mut writer = LineMessageWriter {
            writer: std::io::Cursor::new(Vec::new()),
            buf: Vec::new(),
        };
        let mut batch = batch;
        writer.write(&mut batch).await.unwrap();
        assert!(batch.is_empty());
        writer.writer.into_inner()
    }

    #[tokio::test]
    async fn envelopes_are_written_as_their_text_small_or_large() {
        let small = RawJson::from_string(r#"{"sessionId":"s","n":1}"#).unwrap();
        let large = RawJson::to_raw(&serde_json::json!({"text": "x".repeat(100_000)})).unwrap();
        let batch = || -> Vec<Message> {
            [&small, &large]
                .into_iter()
                .flat_map(|params| {
                    let wrapped = envelope::wrap("session/update", Some(params));
                    let twice = envelope::wrap("_proxy/successor/notification", Some(&wrapped));
                    [wrapped, twice]
                })
                .map(|params| {
                    Message::Notification(Notification {
                        method: envelope::SUCCESSOR_NOTIFICATION.to_owned(),
                        params: Some(params),
                    })
                })
                .collect()
        };
        // Written from the parts (nothing has asked for the envelopes' text yet).
        let out = written(batch()).await;
        let mut expected = Vec::new();
        for message in batch() {
            // The reference: the text built whole, then framed.
            let Message::Notification(n) = message else {
                unreachable!()
            };
            let text = n.params.as_ref().unwrap().as_str();
            expected.extend_from_slice(
                format!(
                    r#"{{"jsonrpc":"2.0","method":"_proxy/successor/notification","params":{text}}}"#
                )
                .as_bytes(),
            );
            expected.push(b'\n');
        }
        assert_eq!(out, expected);
    }
}
