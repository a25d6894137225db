//! An existing `rmcp` server (`rmcp::ServerHandler`, e.g. written with rmcp's `#[tool_router]`)
//! served over ACP (feature `rmcp`).
//!
//! Each MCP connection runs its own copy of the server (rmcp serves one client per service)
//! over an in-memory byte stream; this side passes the MCP messages between that stream and
//! `_mcp/*`, as they are — but for request ids, which it assigns itself (it translates the ids
//! `notifications/cancelled` names). The server's own requests and notifications (`ping`,
//! `sampling/createMessage`, progress, logging) go to the agent's MCP client.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::server::{ClientLink, McpConnection, McpMessage, McpServer};
use crate::jsonrpc::{
    BoxFuture, ByteStream, Error, Id, Inbound, Message, MessageReader, MessageWriter, Notification,
    RawJson, Request, Response, Transport,
};
use crate::lock::lock;

/// Bytes the in-memory stream between this side and the rmcp server holds each way.
const PIPE: usize = 256 * 1024;

/// An rmcp server, served over ACP under `name`.
///
/// ```no_run
/// # #[derive(Clone)] struct Calculator;
/// # impl rmcp::ServerHandler for Calculator {}
/// use sacp::mcp::Rmcp;
///
/// struct WithCalculator;
///
/// #[sacp::proxy]
/// impl WithCalculator {
///     /// Every session gets the calculator.
///     #[mcp_server]
///     fn calculator(&self) -> Rmcp<Calculator> {
///         Rmcp::new("calculator", Calculator)
///     }
/// }
/// ```
#[derive(Debug, Clone)]
pub struct Rmcp<S> {
    name: String,
    server: S,
}

impl<S> Rmcp<S>
where
    S: rmcp::ServerHandler + Clone,
{
    /// Serves `server` under `name`.
    pub fn new(name: impl Into<String>, server: S) -> Rmcp<S> {
        Rmcp {
            name: name.into(),
            server,
        }
    }
}

impl<S> McpServer for Rmcp<S>
where
    S: rmcp::ServerHandler + Clone,
{
    fn name(&self) -> String {
        self.name.clone()
    }

    fn connect(&self, link: ClientLink) -> Box<dyn McpConnection> {
        let (ours, theirs) = tokio::io::duplex(PIPE);
        let stop = CancellationToken::new();
        let server = self.server.clone();
        let name = self.name.clone();
        tokio::spawn({
            let stop = stop.clone();
            async move {
                let served = async {
                    match rmcp::ServiceExt::serve(server, tokio::io::split(theirs)).await {
                        Ok(running) => {
                            let _ = running.waiting().await;
                        }
                        Err(e) => {
                            tracing::warn!(server = %name, "the rmcp server did not start: {e}")
                        }
                    }
                };
                tokio::select! {
                    () = stop.cancelled() => {}
                    () = served => {}
                }
            }
        });
        let (reader, writer) = ByteStream::duplex(ours).split();
        let (out, queue) = mpsc::unbounded_channel();
        let shared = Arc::new(Shared {
            out,
            waiting: Mutex::default(),
            ids: Mutex::default(),
            next: AtomicI64::new(1),
        });
        tokio::spawn(write(writer, queue, stop.clone()));
        tokio::spawn(read(reader, shared.clone(), link, stop.clone()));
        Box::new(RmcpConnection { shared, stop })
    }
}

struct Shared {
    /// What goes to the server.
    out: mpsc::UnboundedSender<Message>,
    /// Requests to the server waiting for their response, by the id this side gave them.
    waiting: Mutex<HashMap<i64, oneshot::Sender<Result<RawJson, Error>>>>,
    /// The client's request ids (as JSON text) → this side's, while in flight.
    ids: Mutex<HashMap<String, i64>>,
    next: AtomicI64,
}

struct RmcpConnection {
    shared: Arc<Shared>,
    stop: CancellationToken,
}

impl McpConnection for RmcpConnection {
    fn request(&self, message: McpMessage) -> BoxFuture<Result<RawJson, Error>> {
        let shared = self.shared.clone();
        Box::pin(async move {
            let id = shared.next.fetch_add(1, Ordering::Relaxed);
            let (tx, rx) = oneshot::channel();
            lock(&shared.waiting).insert(id, tx);
            let client_key = message.id.as_ref().map(Value::to_string);
            if let Some(key) = &client_key {
                lock(&shared.ids).insert(key.clone(), id);
            }
            let guard = Outstanding {
                shared: &shared,
                id,
                client_key,
                answered: false,
            };
            let sent = shared.out.send(Message::Request(Request {
                id: Id::Number(id),
                method: message.method,
                params: message.params,
            }));
            if sent.is_err() {
                return Err(Error::internal_error("the rmcp server has stopped"));
            }
            let answer = rx
                .await
                .unwrap_or_else(|_| Err(Error::internal_error("the rmcp server has stopped")));
            let mut guard = guard;
            guard.answered = true;
            answer
        })
    }

    fn notify(&self, message: McpMessage) {
        let params = match message.method.as_str() {
            // The client names its own request id; the server knows this side's.
            "notifications/cancelled" => translate_cancel(&self.shared, message.params),
            _ => message.params,
        };
        let _ = self.shared.out.send(Message::Notification(Notification {
            method: message.method,
            params,
        }));
    }

    fn close(&self) {
        self.stop.cancel();
    }
}

impl Drop for RmcpConnection {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// A request to the server in flight: if its caller goes away first, the server is told to
/// stop (`notifications/cancelled`), and the bookkeeping goes.
struct Outstanding<'a> {
    shared: &'a Shared,
    id: i64,
    client_key: Option<String>,
    answered: bool,
}

impl Drop for Outstanding<'_> {
    fn drop(&mut self) {
        lock(&self.shared.waiting).remove(&self.id);
        if let Some(key) = &self.client_key {
            lock(&self.shared.ids).remove(key);
        }
        if !self.answered {
            let params = serde_json::json!({"requestId": self.id, "reason": "cancelled"});
            let _ = self.shared.out.send(Message::Notification(Notification {
                method: "notifications/cancelled".into(),
                params: RawJson::to_raw(&params).ok(),
            }));
        }
    }
}

fn translate_cancel(shared: &Shared, params: Option<RawJson>) -> Option<RawJson> {
    let mut value: serde_json::Map<String, Value> = params.as_ref()?.parse().ok()?;
    let client = value.get("requestId")?.to_string();
    let ours = *lock(&shared.ids).get(&client)?;
    value.insert("requestId".into(), ours.into());
    RawJson::to_raw(&value).ok()
}

async fn write(
    mut writer: impl MessageWriter,
    mut queue: mpsc::UnboundedReceiver<Message>,
    stop: CancellationToken,
) {
    let mut batch = Vec::new();
    loop {
        let message = tokio::select! {
            () = stop.cancelled() => break,
            message = queue.recv() => message,
        };
        let Some(message) = message else { break };
        batch.push(message);
        while let Ok(more) = queue.try_recv() {
            batch.push(more);
        }
        if writer.write(&mut batch).await.is_err() {
            break;
        }
    }
    let _ = writer.close().await;
}

/// Reads what the server sends: responses to this side's requests, and its own requests and
/// notifications, which go to the client.
async fn read(
    mut reader: impl MessageReader,
    shared: Arc<Shared>,
    link: ClientLink,
    stop: CancellationToken,
) {
    loop {
        let read = tokio::select! {
            () = stop.cancelled() => break,
            read = reader.read() => read,
        };
        let message = match read {
            Ok(Some(Inbound::Message(message))) => message,
            Ok(Some(other)) => {
                tracing::warn!(?other, "the rmcp server sent something unreadable");
                continue;
            }
            Ok(None) | Err(_) => break,
        };
        match message {
            Message::Response(Response { id, body }) => {
                let Id::Number(n) = id else { continue };
                let result = Response { id: Id::Null, body }.into_result();
                if let Some(tx) = lock(&shared.waiting).remove(&n) {
                    let _ = tx.send(result);
                }
            }
            Message::Request(Request { id, method, params }) => {
                let (link, out) = (link.clone(), shared.out.clone());
                tokio::spawn(async move {
                    let answer = link.request(method, params, None).await;
                    let response = match answer {
                        Ok(result) => Response::ok(id, result),
                        Err(e) => Response::error(id, &e),
                    };
                    let _ = out.send(Message::Response(response));
                });
            }
            Message::Notification(Notification { method, params }) => {
                if let Err(e) = link.notify(method, params, None).await {
                    tracing::debug!(error = %e, "could not pass on a notification of the rmcp server");
                }
            }
        }
    }
    // The server is gone: whoever waits on it hears so.
    for (_, tx) in lock(&shared.waiting).drain() {
        let _ = tx.send(Err(Error::internal_error("the rmcp server has stopped")));
    }
}
