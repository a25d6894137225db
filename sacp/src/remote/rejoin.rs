//! A WebSocket to an ACP server that connects again when it breaks and takes its sessions
//! back ([`Remote::rejoin`]): a WebSocket has no resume of its own, so after a drop the
//! transport opens a new one, sends the `initialize` the caller sent, then a `session/load` of
//! every session the caller opened, and goes on — the caller's connection sees one transport.
//!
//! The `initialize` it sends asks for positions (`_meta.sacp.positions` in the client's
//! capabilities; nothing else of it changes), which `sacp`'s conductor gives each session
//! notification in `_meta.sacp.position`; the transport keeps each session's last one, and its
//! `session/load` after a drop asks to replay from there (`_meta.sacp.replayFrom`
//! `{"type": "_sacp/after", "position": …}`).
//!
//! What the caller sees of a drop:
//! - from `sacp`'s conductor, what the session said after the last notification the caller
//!   got, once, then the live stream; from a server that gives no positions, each session's
//!   history again, as `session/load` replays it (a client that shows a session starts its
//!   view over at the first replayed update), then the live stream;
//! - its requests that were waiting for an answer when the socket broke fail with `-32603`
//!   saying so (a prompt's turn goes on at the server; its end comes as the server tells a
//!   client that did not send it: with `sacp`'s conductor, `_sacp/turn_ended`);
//! - its notifications in a write that broke are sent again on the new socket; its answers to
//!   the server's requests are not (a request nobody answered is asked again after the load).
//!
//! The answers to the transport's own requests (ids `sacp-rejoin-N`) are not passed on; a
//! session the server cannot load is logged and dropped from the list. After
//! [`REJOIN_TRIES`] failed tries in a row (waiting 100 ms, then twice as long each time) the
//! transport ends as a plain one would, with the last error.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio_tungstenite::MaybeTlsStream;

use super::client::Remote;
use super::ws::{WsReader, WsWriter};
use crate::jsonrpc::message::{Request, Response, ResponseBody};
use crate::jsonrpc::transport::{Inbound, MessageReader, MessageWriter, Transport};
use crate::jsonrpc::{Error, Id, Message, RawJson};
use crate::lock::lock;

/// How many times in a row the transport tries to connect again before it gives up.
pub const REJOIN_TRIES: u32 = 5;

/// The first wait before connecting again (doubled after each failed try).
const FIRST_WAIT: Duration = Duration::from_millis(100);

/// How long a write that broke waits for the new socket.
const WRITE_WAIT: Duration = Duration::from_secs(30);

/// The `-32603` a request waiting when the socket broke gets.
const LOST: &str = "the WebSocket to the ACP server broke before this request was answered; \
                    the transport connected again and took its sessions back";

type Stream = MaybeTlsStream<TcpStream>;

/// What the caller opened and is waiting for, as the transport saw it go by.
#[derive(Debug, Default)]
struct State {
    /// The params of the caller's `initialize`.
    initialize: Option<Option<RawJson>>,
    /// The caller's `session/new` requests not answered yet, with their params.
    new_sessions: HashMap<Id, Option<RawJson>>,
    /// The caller's sessions (in the order it opened them), with the params to load them.
    sessions: Vec<(String, RawJson)>,
    /// The last position the server gave in each session's notifications.
    positions: HashMap<String, RawJson>,
    /// The transport's loads that gave a position: refused (`-32602`, a position of the
    /// session's life before the server restarted), the session is loaded again without.
    cursored: HashSet<Id>,
    /// Sessions to load again without a position.
    retry: Vec<String>,
    /// The caller's requests not answered yet.
    in_flight: HashSet<Id>,
    /// The caller's `session/load`s and `session/resume`s not answered yet: the session each
    /// names (dropped from the list if it fails).
    loads: HashMap<Id, String>,
    /// The transport's own requests not answered yet, with the session each loads.
    ours: HashMap<Id, Option<String>>,
    /// How many requests of its own the transport has sent.
    sent: u64,
    /// Set when the caller closed its side: a socket that ends then is not replaced.
    closing: bool,
}

#[derive(Debug)]
struct Shared {
    remote: Remote,
    state: Mutex<State>,
    /// The socket's writing half, replaced when the transport connects again.
    writer: tokio::sync::Mutex<WsWriter<Stream>>,
    /// How many times the transport connected again; `u64::MAX` once it gave up.
    rejoined: watch::Sender<u64>,
}

/// A WebSocket that connects again (see the module docs): from [`Remote::connect`] with
/// [`Remote::rejoin`].
#[derive(Debug)]
pub struct Rejoining {
    reader: WsReader<Stream>,
    shared: Arc<Shared>,
}

impl Rejoining {
    pub(super) fn new(remote: Remote, reader: WsReader<Stream>, writer: WsWriter<Stream>) -> Self {
        Rejoining {
            reader,
            shared: Arc::new(Shared {
                remote,
                state: Mutex::default(),
                writer: tokio::sync::Mutex::new(writer),
                rejoined: watch::Sender::new(0),
            }),
        }
    }
}

impl Transport for Rejoining {
    type Reader = RejoiningReader;
    type Writer = RejoiningWriter;

    fn split(self) -> (RejoiningReader, RejoiningWriter) {
        (
            RejoiningReader {
                reader: self.reader,
                shared: self.shared.clone(),
                queued: VecDeque::new(),
            },
            RejoiningWriter {
                shared: self.shared,
            },
        )
    }
}

/// The reading half of a [`Rejoining`] WebSocket: it is the one that connects again.
#[derive(Debug)]
pub struct RejoiningReader {
    reader: WsReader<Stream>,
    shared: Arc<Shared>,
    /// The failures of requests lost with a socket, to hand the caller.
    queued: VecDeque<Inbound>,
}

impl MessageReader for RejoiningReader {
    async fn read(&mut self) -> std::io::Result<Option<Inbound>> {
        loop {
            if let Some(inbound) = self.queued.pop_front() {
                return Ok(Some(inbound));
            }
            let ended = match self.reader.read().await {
                Ok(Some(Inbound::Message(Message::Response(response)))) => {
                    if self.seen(&response) {
                        return Ok(Some(Inbound::Message(Message::Response(response))));
                    }
                    self.load_again().await;
                    continue;
                }
                Ok(Some(Inbound::Message(Message::Notification(notification)))) => {
                    self.note_position(notification.params.as_ref());
                    return Ok(Some(Inbound::Message(Message::Notification(notification))));
                }
                Ok(Some(inbound)) => return Ok(Some(inbound)),
                ended => ended,
            };
            if lock(&self.shared.state).closing {
                return ended;
            }
            match &ended {
                Ok(_) => {
                    tracing::info!(server = %self.shared.remote.display_url(), "the WebSocket ended: connecting again")
                }
                Err(e) => {
                    tracing::info!(server = %self.shared.remote.display_url(), error = %e, "the WebSocket broke: connecting again")
                }
            }
            if let Err(e) = self.rejoin().await {
                tracing::warn!(server = %self.shared.remote.display_url(), error = %e, "cannot connect again: the transport ends");
                self.shared.rejoined.send_replace(u64::MAX);
                return ended;
            }
        }
    }
}

impl RejoiningReader {
    /// Keeps the position a session notification carries, if it carries one.
    fn note_position(&self, params: Option<&RawJson>) {
        let Some(params) = params else {
            return;
        };
        if let Some(position) = params.member_at(&["_meta", "sacp", "position"])
            && let Some(session) = params.str_member("sessionId")
        {
            let positions = &mut lock(&self.shared.state).positions;
            // The session's id is copied once, not with each of its notifications.
            match positions.get_mut(session.as_ref()) {
                Some(last) => *last = position,
                None => {
                    positions.insert(session.into_owned(), position);
                }
            }
        }
    }

    /// Notes what a response answers; whether it is the caller's.
    fn seen(&self, response: &Response) -> bool {
        let mut state = lock(&self.shared.state);
        let failed = matches!(response.body, ResponseBody::Error(_));
        if let Some(session) = state.ours.remove(&response.id) {
            let cursored = state.cursored.remove(&response.id);
            if let ResponseBody::Error(error) = &response.body
                && cursored
                && error.member("code").is_some_and(|c| c.as_str() == "-32602")
                && let Some(session) = session
            {
                tracing::info!(session = %session, error = %error, "the server took no position: loading the session whole");
                state.positions.remove(&session);
                state.retry.push(session);
                return false;
            }
            if let ResponseBody::Error(error) = &response.body {
                tracing::warn!(session = ?session, error = %error, "taking a session back failed");
                if let Some(session) = session {
                    state.sessions.retain(|(known, _)| *known != session);
                }
            }
            return false;
        }
        state.in_flight.remove(&response.id);
        if let Some(session) = state.loads.remove(&response.id)
            && failed
        {
            state.sessions.retain(|(known, _)| *known != session);
        }
        if let Some(params) = state.new_sessions.remove(&response.id)
            && let ResponseBody::Result(result) = &response.body
            && let Some(id) = session_id(result)
        {
            let load = load_params(params.as_ref(), &id);
            state.sessions.push((id, load));
        }
        true
    }

    /// Connects again, sends what takes the sessions back, and fails what was waiting.
    async fn rejoin(&mut self) -> std::io::Result<()> {
        let mut wait = FIRST_WAIT;
        let mut last = None;
        for _ in 0..REJOIN_TRIES {
            tokio::time::sleep(wait).await;
            wait *= 2;
            let (reader, writer) = match self.shared.remote.clone().connect_ws().await {
                Ok(ws) => Transport::split(ws),
                Err(e) => {
                    last = Some(e);
                    continue;
                }
            };
            let mut current = self.shared.writer.lock().await;
            *current = writer;
            let mut batch = self.takes_back();
            if let Err(e) = current.write(&mut batch).await {
                last = Some(e);
                continue;
            }
            self.reader = reader;
            let lost: Vec<Id> = {
                let mut state = lock(&self.shared.state);
                state.new_sessions.clear();
                state.loads.clear();
                state.in_flight.drain().collect()
            };
            for id in lost {
                let error = Error::internal_error(LOST);
                self.queued
                    .push_back(Inbound::Message(Message::Response(Response::error(
                        id, &error,
                    ))));
            }
            self.shared.rejoined.send_modify(|n| *n += 1);
            return Ok(());
        }
        Err(last.unwrap_or_else(|| std::io::Error::other("cannot connect again")))
    }

    /// The caller's `initialize` and a `session/load` of each of its sessions, with ids of
    /// the transport's own.
    fn takes_back(&self) -> Vec<Message> {
        let mut state = lock(&self.shared.state);
        let mut batch = Vec::new();
        if let Some(params) = state.initialize.clone() {
            batch.push(ours(&mut state, "initialize", params, None));
        }
        for (session, load) in state.sessions.clone() {
            let request = match state.positions.get(&session) {
                Some(position) => {
                    let load = from_position(&load, position);
                    let request = ours(&mut state, "session/load", Some(load), Some(session));
                    if let Message::Request(r) = &request {
                        state.cursored.insert(r.id.clone());
                    }
                    request
                }
                None => ours(&mut state, "session/load", Some(load), Some(session)),
            };
            batch.push(request);
        }
        batch
    }

    /// Loads again, whole, the sessions whose position the server refused.
    async fn load_again(&mut self) {
        let mut batch = {
            let mut state = lock(&self.shared.state);
            let retry = std::mem::take(&mut state.retry);
            let loads: Vec<(String, RawJson)> = state
                .sessions
                .iter()
                .filter(|(session, _)| retry.contains(session))
                .cloned()
                .collect();
            loads
                .into_iter()
                .map(|(session, load)| ours(&mut state, "session/load", Some(load), Some(session)))
                .collect::<Vec<_>>()
        };
        if !batch.is_empty() {
            // A write that fails shows as the socket's end on the next read.
            let _ = self.shared.writer.lock().await.write(&mut batch).await;
        }
    }
}

/// The writing half of a [`Rejoining`] WebSocket.
#[derive(Debug)]
pub struct RejoiningWriter {
    shared: Arc<Shared>,
}

impl MessageWriter for RejoiningWriter {
    async fn write(&mut self, batch: &mut Vec<Message>) -> std::io::Result<()> {
        let mut rejoined = self.shared.rejoined.subscribe();
        let before = *rejoined.borrow_and_update();
        // Only notifications go again on a new socket (see the module docs).
        let again: Vec<Message> = batch
            .iter()
            .filter(|m| matches!(m, Message::Notification(_)))
            .cloned()
            .collect();
        let mut writer = self.shared.writer.lock().await;
        // Noted holding the socket: a request waiting for it while the transport connects
        // again goes on the new socket, and is not among those the drop lost.
        {
            let mut state = lock(&self.shared.state);
            for message in batch.iter_mut() {
                if let Message::Request(request) = message {
                    if request.method == "initialize" {
                        request.params = Some(asking_positions(request.params.as_ref()));
                    }
                    note(&mut state, request);
                }
            }
        }
        let failed = match writer.write(batch).await {
            Ok(()) => return Ok(()),
            Err(e) => e,
        };
        drop(writer);
        batch.clear();
        let waited = tokio::time::timeout(WRITE_WAIT, rejoined.wait_for(|n| *n != before))
            .await
            .ok()
            .and_then(Result::ok)
            .map(|n| *n);
        if waited.is_none_or(|n| n == u64::MAX) {
            return Err(failed);
        }
        let mut again = again;
        self.shared.writer.lock().await.write(&mut again).await
    }

    async fn close(&mut self) -> std::io::Result<()> {
        lock(&self.shared.state).closing = true;
        self.shared.writer.lock().await.close().await
    }
}

/// Notes a request of the caller's as it goes out.
fn note(state: &mut State, request: &Request) {
    state.in_flight.insert(request.id.clone());
    match request.method.as_str() {
        "initialize" => state.initialize = Some(request.params.clone()),
        "session/new" => {
            state
                .new_sessions
                .insert(request.id.clone(), request.params.clone());
        }
        "session/load" | "session/resume" => {
            if let Some(params) = &request.params
                && let Some(id) = session_id(params)
            {
                state.loads.insert(request.id.clone(), id.clone());
                if !state.sessions.iter().any(|(known, _)| *known == id) {
                    let load = load_params(Some(params), &id);
                    state.sessions.push((id, load));
                }
            }
        }
        "session/close" => {
            if let Some(id) = request.params.as_ref().and_then(session_id) {
                state.sessions.retain(|(known, _)| *known != id);
            }
        }
        _ => {}
    }
}

/// A request of the transport's own (id `sacp-rejoin-N`), noted with the session it loads.
fn ours(
    state: &mut State,
    method: &str,
    params: Option<RawJson>,
    session: Option<String>,
) -> Message {
    state.sent += 1;
    let id = Id::String(Arc::from(format!("sacp-rejoin-{}", state.sent)));
    state.ours.insert(id.clone(), session);
    Message::Request(Request {
        id,
        method: method.to_owned(),
        params,
    })
}

/// `initialize` params that ask for positions: `_meta.sacp.positions` in the client's
/// capabilities (`clientCapabilities`, v2's `capabilities`), every other byte as it was.
fn asking_positions(params: Option<&RawJson>) -> RawJson {
    let params = params.cloned().unwrap_or_else(RawJson::empty_object);
    let v2 = params
        .member("protocolVersion")
        .and_then(|v| v.as_str().parse::<u64>().ok())
        .is_some_and(|v| v >= 2);
    let capabilities = if v2 {
        "capabilities"
    } else {
        "clientCapabilities"
    };
    let yes = RawJson::from_string("true").unwrap_or_else(|_| RawJson::null());
    params
        .with_member_at(&[capabilities, "_meta", "sacp", "positions"], &yes)
        .unwrap_or(params)
}

/// `session/load` params that replay from after `position` (the server's).
fn from_position(load: &RawJson, position: &RawJson) -> RawJson {
    let cursor = RawJson::empty_object()
        .with_member(
            "type",
            &RawJson::to_raw("_sacp/after").unwrap_or_else(|_| RawJson::null()),
        )
        .and_then(|c| c.with_member("position", position));
    cursor
        .and_then(|cursor| load.with_member_at(&["_meta", "sacp", "replayFrom"], &cursor))
        .unwrap_or_else(|| load.clone())
}

/// The top-level `sessionId` of params or a result.
fn session_id(raw: &RawJson) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Named {
        #[serde(rename = "sessionId")]
        session_id: String,
    }
    raw.parse::<Named>().ok().map(|named| named.session_id)
}

/// `session/load` params for session `id`, with the `cwd` and `mcpServers` it was opened with.
fn load_params(opened: Option<&RawJson>, id: &str) -> RawJson {
    let opened: serde_json::Map<String, serde_json::Value> = opened
        .and_then(|params| params.parse().ok())
        .unwrap_or_default();
    let mut load = serde_json::Map::new();
    load.insert("sessionId".into(), id.into());
    load.insert(
        "cwd".into(),
        opened.get("cwd").cloned().unwrap_or_else(|| "/".into()),
    );
    load.insert(
        "mcpServers".into(),
        opened
            .get("mcpServers")
            .cloned()
            .unwrap_or_else(|| serde_json::Value::Array(Vec::new())),
    );
    RawJson::to_raw(&load).unwrap_or_else(|_| RawJson::null())
}
