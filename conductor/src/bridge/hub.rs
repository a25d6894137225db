//! The bridges' side of MCP over ACP: one JSON-RPC connection to the routing table (as the agent),
//! and on it one [`Link`] per MCP connection a bridge opened.
//!
//! A link turns what the agent's MCP client sends into `_mcp/request` / `_mcp/notification`
//! (answers to the owner's requests resolve those), and hands what the owner sends for the
//! connection to the bridge that serves it, as [`ToClient`] items in order: an owner's
//! notifications sent before its answer to a client request come before that answer (the
//! connection delivers a response only after the notifications that preceded it were handled,
//! and they are handled by queueing them here).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::lock::lock;
use sacp::jsonrpc::{
    self, Answer as _, Connection, Error, Id, Message, Notification, RawJson, Request, Response,
};
use sacp::protocol::mcp::{
    CONNECT, ConnectParams, ConnectResult, DISCONNECT, DisconnectParams, MessageParams,
    NOTIFICATION, REQUEST, RFD_MESSAGE, RfdMessage,
};
use serde_json::Value;
use tokio::sync::{Notify, mpsc, oneshot};

/// How many owner messages wait for a slow MCP client before the owner is slowed down.
const QUEUE: usize = 256;
/// How long a message for a connection whose `_mcp/connect` answer is still being taken in
/// may wait for it.
const CONNECTING: Duration = Duration::from_secs(5);

/// What the owner sends toward the agent's MCP client on one connection.
#[derive(Debug)]
pub(crate) struct ToClient {
    /// The MCP message (requests carry the bridge's own ids).
    pub(crate) message: Message,
    /// The client request it belongs to (`related_mcp_request_id`), if any.
    pub(crate) related: Option<Value>,
}

/// The bridges' connection to the routing table.
#[derive(Debug, Clone)]
pub(crate) struct Hub {
    conn: Connection,
    links: Arc<Links>,
    notes: Arc<RfdNotes>,
}

/// An RFD provider's notification about a request: its MCP method and params.
pub(crate) type RfdNote = (String, Option<RawJson>);

/// Who waits for an RFD provider's `mcp/message` notifications about a request the hub sent
/// (for the translator), by server and request id.
#[derive(Debug, Default)]
struct RfdNotes {
    waiting: Mutex<HashMap<(String, String), mpsc::Sender<RfdNote>>>,
}

/// Notes for one RFD request, while it is open: dropped, it stops listening.
pub(crate) struct RfdCall {
    notes: Arc<RfdNotes>,
    key: (String, String),
    /// The request's answer (to be taken).
    pub(crate) answer: Option<jsonrpc::PendingResponse<RawJson>>,
    /// The provider's notifications about it, in order.
    pub(crate) notes_rx: mpsc::Receiver<RfdNote>,
}

impl Drop for RfdCall {
    fn drop(&mut self) {
        lock(&self.notes.waiting).remove(&self.key);
    }
}

#[derive(Debug, Default)]
struct Links {
    open: Mutex<HashMap<String, Arc<Shared>>>,
    /// `_mcp/connect`s sent and not yet taken in.
    connecting: AtomicUsize,
    registered: Notify,
}

impl Links {
    /// The open connection `id`, waiting a little for one being connected right now: the
    /// owner may speak on a connection as soon as it has answered `_mcp/connect`.
    async fn find(&self, id: &str) -> Option<Arc<Shared>> {
        let deadline = tokio::time::Instant::now() + CONNECTING;
        loop {
            let registered = self.registered.notified();
            if let Some(shared) = lock(&self.open).get(id) {
                return Some(shared.clone());
            }
            if self.connecting.load(Ordering::SeqCst) == 0 {
                return None;
            }
            if tokio::time::timeout_at(deadline, registered).await.is_err() {
                return None;
            }
        }
    }
}

/// One MCP connection, as the link's end sees it.
#[derive(Debug)]
struct Shared {
    to_client: mpsc::Sender<ToClient>,
    /// The owner's requests to the client, by the id the bridge gave them.
    asked: Mutex<HashMap<Id, oneshot::Sender<Response>>>,
    next: AtomicU64,
}

impl Hub {
    /// Starts the bridges' connection on `transport` (the other end is the routing table's).
    pub(crate) fn start(transport: impl jsonrpc::Transport) -> Hub {
        let links = Arc::new(Links::default());
        let notes = Arc::new(RfdNotes::default());
        let handler = jsonrpc::Methods::new()
            .on_raw_notification(RFD_MESSAGE, {
                let notes = notes.clone();
                move |params, _cx| {
                    let notes = notes.clone();
                    async move { note_for_translator(&notes, params).await }
                }
            })
            .on_raw_request(REQUEST, {
                let links = links.clone();
                move |params, _cx| {
                    let links = links.clone();
                    async move { ask_client(&links, params).await }
                }
            })
            .on_raw_notification(NOTIFICATION, {
                let links = links.clone();
                move |params, _cx| {
                    let links = links.clone();
                    async move { tell_client(&links, params).await }
                }
            });
        let conn = Connection::builder()
            .name("mcp-bridge")
            .spawn(transport, handler);
        Hub { conn, links, notes }
    }

    /// Sends an RFD `mcp/message` request up the chain, as the agent (for the translator):
    /// its answer and the provider's notifications about it.
    pub(crate) fn call_stateless(&self, message: &RfdMessage) -> Result<RfdCall, Error> {
        let key = (message.server_id.clone(), message.request_id.to_string());
        let (tx, notes_rx) = mpsc::channel(QUEUE);
        let params = RawJson::to_raw(message)?;
        lock(&self.notes.waiting).insert(key.clone(), tx);
        Ok(RfdCall {
            notes: self.notes.clone(),
            key,
            answer: Some(self.conn.request_raw(RFD_MESSAGE, Some(params))),
            notes_rx,
        })
    }

    /// Opens an MCP connection to the server of `acp_url` (`_mcp/connect`): the link, and
    /// what the owner sends on it.
    pub(crate) async fn connect(
        &self,
        acp_url: &str,
        session_id: Option<String>,
    ) -> Result<(Link, mpsc::Receiver<ToClient>), Error> {
        let params = RawJson::to_raw(&ConnectParams {
            acp_url: acp_url.to_owned(),
            session_id,
        })?;
        self.links.connecting.fetch_add(1, Ordering::SeqCst);
        let answer = self.conn.request_raw(CONNECT, Some(params)).await;
        let (to_client, from_owner) = mpsc::channel(QUEUE);
        let link = answer
            .and_then(|raw| raw.parse::<ConnectResult>())
            .map(|connected| {
                let shared = Arc::new(Shared {
                    to_client,
                    asked: Mutex::default(),
                    next: AtomicU64::new(1),
                });
                lock(&self.links.open).insert(connected.connection_id.clone(), shared.clone());
                Link {
                    hub: self.clone(),
                    id: connected.connection_id,
                    shared,
                }
            });
        self.links.connecting.fetch_sub(1, Ordering::SeqCst);
        self.links.registered.notify_waiters();
        Ok((link?, from_owner))
    }
}

/// The owner's `_mcp/request`: sent to the client with an id of the bridge's, answered with
/// the client's answer.
async fn ask_client(links: &Links, params: Option<RawJson>) -> Result<RawJson, Error> {
    let params = MessageParams::parse(params.as_ref())?;
    let shared = links.find(&params.connection_id).await.ok_or_else(|| {
        Error::invalid_params(format!(
            "no open MCP connection {:?} on the conductor's bridge",
            params.connection_id
        ))
    })?;
    let id = Id::String(
        format!(
            "sacp-bridge-{}",
            shared.next.fetch_add(1, Ordering::Relaxed)
        )
        .into(),
    );
    let (answer, answered) = oneshot::channel();
    lock(&shared.asked).insert(id.clone(), answer);
    let item = ToClient {
        message: Message::Request(Request {
            id,
            method: params.method.clone(),
            params: params.params,
        }),
        related: params.related_mcp_request_id,
    };
    if shared.to_client.send(item).await.is_err() {
        return Err(closed(&params.connection_id));
    }
    match answered.await {
        Ok(response) => response.into_result(),
        Err(_) => Err(closed(&params.connection_id)),
    }
}

/// The owner's `_mcp/notification`: passed on to the client.
async fn tell_client(links: &Links, params: Option<RawJson>) -> Result<(), Error> {
    let params = MessageParams::parse(params.as_ref())?;
    let Some(shared) = links.find(&params.connection_id).await else {
        tracing::debug!(
            connection = %params.connection_id,
            method = %params.method,
            "dropped an MCP notification for a closed connection"
        );
        return Ok(());
    };
    let item = ToClient {
        message: Message::Notification(Notification {
            method: params.method,
            params: params.params,
        }),
        related: params.related_mcp_request_id,
    };
    // A client that stopped reading is left behind with its connection.
    let _ = shared.to_client.send(item).await;
    Ok(())
}

/// An RFD provider's `mcp/message` notification: to the translator's request it is about.
async fn note_for_translator(notes: &RfdNotes, params: Option<RawJson>) -> Result<(), Error> {
    let message: RfdMessage = params
        .ok_or_else(|| Error::invalid_params("mcp/message needs params"))?
        .parse()?;
    let key = (message.server_id, message.request_id.to_string());
    let waiting = lock(&notes.waiting).get(&key).cloned();
    match waiting {
        // A request that ended meanwhile has nobody to tell.
        Some(waiting) => {
            let _ = waiting.send((message.method, message.params)).await;
        }
        None => tracing::debug!(
            server = %key.0,
            request = %key.1,
            "dropped an MCP notification about no open request"
        ),
    }
    Ok(())
}

fn closed(connection: &str) -> Error {
    Error::internal_error(format!(
        "the agent's MCP client closed connection {connection:?}"
    ))
}

/// The way back to the agent's MCP client for the answer to one of its requests, with the
/// client's own id: it goes out in the connection's order, after what the owner sent before.
struct ToMcpClient {
    id: Id,
    answers: mpsc::Sender<ToClient>,
}

impl ToMcpClient {
    fn item(id: Id, result: Result<RawJson, Error>) -> ToClient {
        let message = Message::Response(match result {
            Ok(result) => Response::ok(id, result),
            Err(error) => Response::error(id, &error),
        });
        ToClient {
            message,
            related: None,
        }
    }
}

impl jsonrpc::Answer for ToMcpClient {
    fn answer_now(
        self,
        result: Result<RawJson, Error>,
    ) -> Result<(), (Self, Result<RawJson, Error>)> {
        let id = self.id.clone();
        match self.answers.try_send(ToMcpClient::item(id, result)) {
            Ok(()) => Ok(()),
            // A client that went away has nobody to read it.
            Err(mpsc::error::TrySendError::Closed(_)) => Ok(()),
            Err(mpsc::error::TrySendError::Full(item)) => {
                let result = match item.message {
                    Message::Response(response) => response.into_result(),
                    _ => Err(Error::internal_error("not an answer")),
                };
                Err((self, result))
            }
        }
    }

    async fn answer_later(self, result: Result<RawJson, Error>) {
        let item = ToMcpClient::item(self.id, result);
        // A client that went away has nobody to read it.
        let _ = self.answers.send(item).await;
    }

    fn on_cancel(&self, _f: Box<dyn FnOnce() + Send>) {
        // The MCP client cancels with `notifications/cancelled`, passed on to the owner.
    }
}

/// One MCP connection a bridge opened for the agent's MCP client.
#[derive(Debug)]
pub(crate) struct Link {
    hub: Hub,
    id: String,
    shared: Arc<Shared>,
}

impl Link {
    /// The connection id the owner gave it.
    pub(crate) fn id(&self) -> &str {
        &self.id
    }

    /// A sender of items to the client, as the owner's come: for the bridge's own answers.
    pub(crate) fn to_client(&self) -> mpsc::Sender<ToClient> {
        self.shared.to_client.clone()
    }

    /// Passes on a message of the client, in order. A request's answer (with the client's id)
    /// is relayed to `answers` when it comes; notifications and answers to the owner need
    /// nothing more.
    pub(crate) async fn pass_on(&self, message: Message, answers: &mpsc::Sender<ToClient>) {
        match message {
            Message::Request(request) => {
                let to = ToMcpClient {
                    id: request.id.clone(),
                    answers: answers.clone(),
                };
                match self.params(request.method, request.params, Some(&request.id)) {
                    Ok(params) => {
                        let pending = self.hub.conn.request_raw(REQUEST, Some(params));
                        pending.relay_to(to);
                    }
                    Err(e) => to.answer_later(Err(e)).await,
                }
            }
            Message::Notification(notification) => {
                match self.params(notification.method, notification.params, None) {
                    Ok(params) => {
                        if let Err(e) = self.hub.conn.notify_raw(NOTIFICATION, Some(params)).await {
                            tracing::debug!("cannot pass on an MCP notification: {e}");
                        }
                    }
                    Err(e) => tracing::warn!("cannot pass on an MCP notification: {e}"),
                }
            }
            Message::Response(response) => {
                let waiting = lock(&self.shared.asked).remove(&response.id);
                match waiting {
                    Some(waiting) => {
                        let _ = waiting.send(response);
                    }
                    None => tracing::debug!(
                        id = %response.id,
                        "the MCP client answered a request nobody is waiting for"
                    ),
                }
            }
        }
    }

    fn params(
        &self,
        method: String,
        params: Option<RawJson>,
        id: Option<&Id>,
    ) -> Result<RawJson, Error> {
        let mcp_request_id = id.map(serde_json::to_value).transpose()?;
        RawJson::to_raw(&MessageParams {
            connection_id: self.id.clone(),
            method,
            params,
            mcp_request_id,
            related_mcp_request_id: None,
        })
    }

    /// Closes the connection (`_mcp/disconnect`): the owner's requests still waiting on the
    /// client fail.
    pub(crate) async fn close(&self) {
        lock(&self.hub.links.open).remove(&self.id);
        lock(&self.shared.asked).clear();
        let params = RawJson::to_raw(&DisconnectParams {
            connection_id: self.id.clone(),
        });
        match params {
            Ok(params) => {
                if let Err(e) = self.hub.conn.notify_raw(DISCONNECT, Some(params)).await {
                    tracing::debug!("cannot send _mcp/disconnect: {e}");
                }
            }
            Err(e) => tracing::warn!("cannot send _mcp/disconnect: {e}"),
        }
    }
}
