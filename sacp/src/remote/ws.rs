//! ACP over WebSocket (see *WebSocket* in [`crate::remote`]), both roles: one JSON-RPC message per
//! text frame.
//!
//! The transport reads and writes the socket directly — no task and no queue between it and
//! the connection — so a slow reader holds back its writer through the socket's own buffers.
//!
//! - Binary frames are ignored (with a warning); pings are answered by the socket.
//! - A text frame that is not a message is handed to the connection as [`Inbound::Invalid`],
//!   which answers it (`-32700`, `-32600`) with `id: null` and goes on, as the TypeScript SDK
//!   does.
//! - **Server side**: the first frame acted on must be an `initialize`
//!   request with an id. Before it, responses are dropped, invalid frames answered, and any
//!   other request or notification closes the socket with `1002`; so does an `initialize` with
//!   `id: null`. A later `initialize` is refused with `-32600` and the socket stays open. A
//!   session id or string request id over 1,024 characters closes it with `1008`, and so does
//!   a frame over the message size limit. A send the client does not take within the stall
//!   limit ends the connection (`1008`).
//! - A close frame, or the end of the TCP stream, is the end of the stream; a connection that
//!   breaks without one is a read error naming the peer.

use std::sync::Arc;
use std::time::Duration;

use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt, StreamExt};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::Mutex;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::error::{CapacityError, Error as WsError, ProtocolError};
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::{Message as Frame, Utf8Bytes};
use tokio_util::sync::CancellationToken;

use super::wire;
use crate::jsonrpc::message::Parsed;
use crate::jsonrpc::transport::{Inbound, MessageReader, MessageWriter, Transport};
use crate::jsonrpc::{Error, Id, Message};

/// Which end of the socket this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    /// The client: reads what the server's agent writes.
    Client,
    /// The server: reads the client's messages, `initialize` first.
    Server,
}

/// An ACP connection over one WebSocket.
#[derive(Debug)]
pub struct WebSocket<S> {
    stream: WebSocketStream<S>,
    side: Side,
    /// Who is at the other end, for errors: the URL (credentials left out) or the address.
    peer: String,
    /// How long a send may wait for the peer to read.
    stall: Duration,
    /// When cancelled, the server closes the socket (`1001`) and the stream ends.
    shutdown: Option<CancellationToken>,
}

impl<S> WebSocket<S>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    pub(crate) fn new(
        stream: WebSocketStream<S>,
        side: Side,
        peer: String,
        stall: Duration,
    ) -> Self {
        WebSocket {
            stream,
            side,
            peer,
            stall,
            shutdown: None,
        }
    }

    /// Closes the socket (`1001 Server shutting down`) when `shutdown` is cancelled.
    pub(crate) fn ending_on(mut self, shutdown: CancellationToken) -> Self {
        self.shutdown = Some(shutdown);
        self
    }
}

type Sink<S> = Arc<Mutex<SplitSink<WebSocketStream<S>, Frame>>>;

impl<S> Transport for WebSocket<S>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Reader = WsReader<S>;
    type Writer = WsWriter<S>;

    fn split(self) -> (WsReader<S>, WsWriter<S>) {
        let (sink, stream) = self.stream.split();
        let sink = Arc::new(Mutex::new(sink));
        (
            WsReader {
                stream,
                sink: sink.clone(),
                side: self.side,
                initialized: self.side == Side::Client,
                peer: self.peer.clone(),
                shutdown: self.shutdown,
            },
            WsWriter {
                sink,
                peer: self.peer,
                stall: self.stall,
                texts: wire::Texts::default(),
            },
        )
    }
}

/// The reading half of a [`WebSocket`].
#[derive(Debug)]
pub struct WsReader<S> {
    stream: SplitStream<WebSocketStream<S>>,
    /// The writing half's sink, for the close frames the reader decides on.
    sink: Sink<S>,
    side: Side,
    /// Whether the first `initialize` came (always, on the client side).
    initialized: bool,
    peer: String,
    shutdown: Option<CancellationToken>,
}

impl<S> WsReader<S>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    /// Closes the socket with `code` and `reason`: the end of this stream.
    async fn close(&mut self, code: CloseCode, reason: &str) -> std::io::Result<Option<Inbound>> {
        tracing::warn!(peer = %self.peer, code = u16::from(code), reason, "closing the WebSocket");
        let frame = CloseFrame {
            code,
            reason: reason.into(),
        };
        let _ = self.sink.lock().await.send(Frame::Close(Some(frame))).await;
        Ok(None)
    }

    /// What the server side makes of a message: it, or the reason to close.
    fn check(&mut self, message: &Message) -> Result<(), (CloseCode, &'static str)> {
        let (id, is_initialize) = match message {
            Message::Request(r) => (Some(&r.id), r.method == "initialize"),
            _ => (None, false),
        };
        if id.is_some_and(wire::id_too_long) {
            return Err((CloseCode::Policy, "Request ID exceeds maxIdLength (1024)"));
        }
        if wire::session_of_params(message).is_some_and(|s| wire::too_long(&s)) {
            return Err((CloseCode::Policy, "Session ID exceeds maxIdLength (1024)"));
        }
        if self.initialized {
            return Ok(());
        }
        match (is_initialize, id) {
            (true, Some(Id::Null)) => {
                Err((CloseCode::Protocol, "Initialize request must include an ID"))
            }
            (true, _) => {
                self.initialized = true;
                Ok(())
            }
            (false, _) => Err((CloseCode::Protocol, "First message must be initialize")),
        }
    }
}

impl<S> MessageReader for WsReader<S>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    async fn read(&mut self) -> std::io::Result<Option<Inbound>> {
        loop {
            let next = match &self.shutdown {
                Some(shutdown) => tokio::select! {
                    next = self.stream.next() => next,
                    () = shutdown.cancelled() => {
                        return self.close(CloseCode::Away, "Server shutting down").await;
                    }
                },
                None => self.stream.next().await,
            };
            let frame = match next {
                None => return Ok(None),
                Some(Ok(frame)) => frame,
                Some(Err(WsError::ConnectionClosed | WsError::AlreadyClosed)) => return Ok(None),
                Some(Err(WsError::Capacity(CapacityError::MessageTooLong { size, max_size }))) => {
                    let reason = format!("Message of {size} bytes exceeds {max_size}");
                    tracing::warn!(peer = %self.peer, "{reason}");
                    return self.close(CloseCode::Policy, "Message too large").await;
                }
                Some(Err(WsError::Protocol(ProtocolError::ResetWithoutClosingHandshake))) => {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::ConnectionReset,
                        format!("the WebSocket to {} broke without a close frame", self.peer),
                    ));
                }
                Some(Err(e)) => {
                    return Err(std::io::Error::other(format!(
                        "the WebSocket to {} failed: {e}",
                        self.peer
                    )));
                }
            };
            let text = match frame {
                Frame::Text(text) => text,
                Frame::Binary(_) => {
                    tracing::warn!(peer = %self.peer, "ignoring a binary WebSocket frame: ACP messages are text");
                    continue;
                }
                Frame::Close(frame) => {
                    tracing::debug!(peer = %self.peer, ?frame, "the peer closed the WebSocket");
                    return Ok(None);
                }
                Frame::Ping(_) | Frame::Pong(_) | Frame::Frame(_) => continue,
            };
            let parsed = wire::decode(bytes::Bytes::from(text));
            let message = match parsed {
                Parsed::Message(message) => message,
                Parsed::Invalid { id, error } => return Ok(Some(Inbound::Invalid { id, error })),
                Parsed::BadResponse { id, error } if self.initialized => {
                    return Ok(Some(Inbound::BadResponse { id, error }));
                }
                // Before `initialize`, response-shaped frames are dropped.
                Parsed::BadResponse { .. } => continue,
            };
            if self.side == Side::Server {
                if !self.initialized && matches!(message, Message::Response(_)) {
                    continue;
                }
                let was_initialized = self.initialized;
                if let Err((code, reason)) = self.check(&message) {
                    return self.close(code, reason).await;
                }
                if was_initialized
                    && let Message::Request(request) = &message
                    && request.method == "initialize"
                {
                    return Ok(Some(Inbound::Invalid {
                        id: request.id.clone(),
                        error: Error::invalid_request(
                            "Initialize not allowed on existing connection",
                        ),
                    }));
                }
            }
            return Ok(Some(Inbound::Message(message)));
        }
    }
}

/// The writing half of a [`WebSocket`].
#[derive(Debug)]
pub struct WsWriter<S> {
    sink: Sink<S>,
    peer: String,
    stall: Duration,
    /// Where each frame's text is written.
    texts: wire::Texts,
}

impl<S> MessageWriter for WsWriter<S>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    async fn write(&mut self, batch: &mut Vec<Message>) -> std::io::Result<()> {
        let mut sink = self.sink.lock().await;
        let texts = &mut self.texts;
        let sent = async {
            for message in batch.drain(..) {
                let text = Utf8Bytes::try_from(texts.encode(&message))
                    .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
                sink.feed(Frame::Text(text))
                    .await
                    .map_err(|e| closed(&self.peer, e))?;
            }
            sink.flush().await.map_err(|e| closed(&self.peer, e))
        };
        match tokio::time::timeout(self.stall, sent).await {
            Ok(sent) => sent,
            Err(_) => {
                let frame = CloseFrame {
                    code: CloseCode::Policy,
                    reason: "Connection output stalled".into(),
                };
                let _ = tokio::time::timeout(
                    Duration::from_secs(1),
                    sink.send(Frame::Close(Some(frame))),
                )
                .await;
                Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!(
                        "{} read nothing of what was sent for {}: connection closed",
                        self.peer,
                        humantime_secs(self.stall)
                    ),
                ))
            }
        }
    }

    async fn close(&mut self) -> std::io::Result<()> {
        let mut sink = self.sink.lock().await;
        let _ = sink.send(Frame::Close(None)).await;
        let _ = sink.close().await;
        Ok(())
    }
}

fn closed(peer: &str, e: WsError) -> std::io::Error {
    match e {
        WsError::ConnectionClosed | WsError::AlreadyClosed => std::io::Error::new(
            std::io::ErrorKind::BrokenPipe,
            format!("the WebSocket to {peer} is closed"),
        ),
        e => std::io::Error::other(format!("the WebSocket to {peer} failed: {e}")),
    }
}

fn humantime_secs(d: Duration) -> String {
    format!("{} s", d.as_secs_f64())
}
