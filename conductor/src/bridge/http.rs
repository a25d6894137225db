//! The HTTP bridge (spec §4): the proxies' MCP servers as streamable-HTTP MCP endpoints
//! (MCP 2025-11-25) on 127.0.0.1, one port for the conductor and one path per entry,
//! `/mcp/<entry>`, served with axum.
//!
//! - Every request needs the entry's `Authorization: Bearer <secret>` (else 401), and a
//!   request with an `Origin` that is not this machine's loopback gets 403: neither ever
//!   reaches a proxy.
//! - An `initialize` POST opens an MCP session (`Mcp-Session-Id`): one `_mcp/connect` …
//!   `_mcp/disconnect` connection. `DELETE` ends it, and so does the end of the entry's ACP
//!   session.
//! - A POSTed request is answered with an SSE stream when the client accepts one: the owner's
//!   messages about that request (`related_mcp_request_id`: progress, sampling, elicitation)
//!   come on it before the answer; otherwise with the JSON answer. Notifications and answers
//!   get 202.
//! - The owner's other messages go on the session's GET stream; when none is open, on the
//!   newest open request stream; when none is either, they wait (a bounded number) for one.

use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response as HttpResponse};
use axum::routing::post;
use sacp::jsonrpc::{Error, Id, Message, Response};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::Entry;
use super::hub::{Hub, Link, ToClient};
use crate::lock::lock;

/// The MCP session header.
const SESSION_HEADER: &str = "mcp-session-id";
/// The largest request body taken.
const MAX_BODY: usize = 64 << 20;
/// Owner messages kept for a session with no stream open, past which they are dropped.
const BACKLOG: usize = 1024;
/// Messages queued on one SSE stream before the owner waits for the client to read.
const STREAM_QUEUE: usize = 64;

/// The conductor's HTTP bridge: its address, and the entries it serves.
#[derive(Debug)]
pub(super) struct Server {
    port: u16,
    state: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    hub: Hub,
    entries: Mutex<HashMap<String, Arc<Entry>>>,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
}

impl Shared {
    fn entry(&self, id: &str) -> Option<Arc<Entry>> {
        let mut entries = lock(&self.entries);
        entries.retain(|_, entry| !entry.ended.is_cancelled());
        entries.get(id).cloned()
    }

    fn session(&self, id: &str) -> Option<Arc<Session>> {
        let sessions = lock(&self.sessions);
        sessions
            .get(id)
            .filter(|s| !s.closed.is_cancelled())
            .cloned()
    }
}

impl Server {
    /// Binds 127.0.0.1 on a free port and starts serving.
    pub(super) fn start(hub: Hub) -> std::io::Result<Server> {
        let listener = std::net::TcpListener::bind(("127.0.0.1", 0))?;
        listener.set_nonblocking(true)?;
        let port = listener.local_addr()?.port();
        let listener = tokio::net::TcpListener::from_std(listener)?;
        let state = Arc::new(Shared {
            hub,
            entries: Mutex::default(),
            sessions: Mutex::default(),
        });
        let app = axum::Router::new()
            .route("/mcp/{entry}", post(on_post).get(on_get).delete(on_delete))
            .layer(DefaultBodyLimit::max(MAX_BODY))
            .with_state(state.clone());
        tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, app).await {
                tracing::error!("the MCP HTTP bridge stopped: {e}");
            }
        });
        Ok(Server { port, state })
    }

    /// Serves `entry`; its URL.
    pub(super) fn serve(&self, entry: Arc<Entry>) -> String {
        let url = format!("http://127.0.0.1:{}/mcp/{}", self.port, entry.id);
        lock(&self.state.entries).insert(entry.id.clone(), entry);
        url
    }
}

/// One MCP session: one MCP connection over ACP.
#[derive(Debug)]
struct Session {
    id: String,
    /// The link, until the session closes.
    link: tokio::sync::Mutex<Option<Link>>,
    /// Where the owner's messages go; the answers to the client's requests go the same way,
    /// so that what the owner sent before an answer comes before it.
    to_client: mpsc::Sender<ToClient>,
    streams: Mutex<Streams>,
    closed: CancellationToken,
}

/// Where a session's messages to the client can go.
#[derive(Debug, Default)]
struct Streams {
    /// The GET stream.
    get: Option<mpsc::Sender<String>>,
    /// The client's requests waiting for their answers, oldest first.
    waiting: Vec<(Id, Waiter)>,
    /// Messages with nowhere to go yet.
    backlog: VecDeque<String>,
}

/// A client request waiting for its answer.
#[derive(Debug)]
enum Waiter {
    /// On an SSE stream, which also carries the owner's messages about the request.
    Stream(mpsc::Sender<String>),
    /// As the POST's JSON body.
    Json(oneshot::Sender<String>),
}

impl Session {
    fn streams(&self) -> std::sync::MutexGuard<'_, Streams> {
        lock(&self.streams)
    }

    /// Sends the owner's messages (and the bridge's answers) to where they belong, until the
    /// session closes.
    async fn deliver_to_streams(self: Arc<Self>, mut from_owner: mpsc::Receiver<ToClient>) {
        loop {
            let item = tokio::select! {
                () = self.closed.cancelled() => return,
                item = from_owner.recv() => match item {
                    Some(item) => item,
                    None => return,
                },
            };
            let related = item
                .related
                .and_then(|v| serde_json::from_value::<Id>(v).ok());
            let answer_to = match &item.message {
                Message::Response(response) => Some(response.id.clone()),
                _ => None,
            };
            let line = item.message.to_line();
            if let Some(id) = answer_to {
                self.answer(&id, line).await;
            } else {
                self.deliver(related.as_ref(), line).await;
            }
        }
    }

    /// The answer to the client's request `id`: on its stream, which ends, or as its body.
    async fn answer(&self, id: &Id, line: String) {
        let waiter = {
            let mut streams = self.streams();
            let at = streams
                .waiting
                .iter()
                .position(|(waiting, _)| waiting == id);
            at.map(|at| streams.waiting.remove(at).1)
        };
        match waiter {
            Some(Waiter::Stream(stream)) => {
                let _ = stream.send(line).await;
            }
            Some(Waiter::Json(body)) => {
                let _ = body.send(line);
            }
            None => tracing::debug!(%id, "an MCP answer for a request nobody waits for"),
        }
    }

    /// An owner message: on the stream of the request it is about, the GET stream, the
    /// newest request stream, or the backlog.
    async fn deliver(&self, related: Option<&Id>, mut line: String) {
        loop {
            let target = {
                let mut streams = self.streams();
                let about = related.and_then(|id| {
                    streams.waiting.iter().find_map(|(waiting, w)| match w {
                        Waiter::Stream(s) if waiting == id => Some(s.clone()),
                        _ => None,
                    })
                });
                let newest = || {
                    streams.waiting.iter().rev().find_map(|(_, w)| match w {
                        Waiter::Stream(s) => Some(s.clone()),
                        Waiter::Json(_) => None,
                    })
                };
                match about.or_else(|| streams.get.clone()).or_else(newest) {
                    Some(target) => target,
                    None => {
                        if streams.backlog.len() < BACKLOG {
                            streams.backlog.push_back(line);
                        } else {
                            tracing::warn!(
                                session = %self.id,
                                "dropped an MCP message: the client opened no stream to take it"
                            );
                        }
                        return;
                    }
                }
            };
            match target.send(line).await {
                Ok(()) => return,
                Err(mpsc::error::SendError(unsent)) => {
                    // That stream is gone: forget it and try the next.
                    let mut streams = self.streams();
                    if streams
                        .get
                        .as_ref()
                        .is_some_and(|g| g.same_channel(&target))
                    {
                        streams.get = None;
                    }
                    streams.waiting.retain(
                        |(_, w)| !matches!(w, Waiter::Stream(s) if s.same_channel(&target)),
                    );
                    drop(streams);
                    line = unsent;
                }
            }
        }
    }

    /// Ends the session: `_mcp/disconnect`, and every stream closes.
    async fn close(&self) {
        self.closed.cancel();
        *self.streams() = Streams::default();
        if let Some(link) = self.link.lock().await.take() {
            link.close().await;
        }
    }
}

/// Why a request is refused before it reaches a session.
fn refuse(status: StatusCode, why: &str) -> HttpResponse {
    let mut response = (status, why.to_owned()).into_response();
    if status == StatusCode::UNAUTHORIZED {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    }
    response
}

/// Checks the origin and the secret of a request to entry `id`.
fn admit(
    state: &Shared,
    id: &str,
    headers: &HeaderMap,
) -> Result<Arc<Entry>, (StatusCode, &'static str)> {
    if let Some(origin) = headers.get(header::ORIGIN)
        && !origin.to_str().is_ok_and(is_loopback_origin)
    {
        return Err((
            StatusCode::FORBIDDEN,
            "requests from other origins are refused",
        ));
    }
    let entry = state
        .entry(id)
        .ok_or((StatusCode::NOT_FOUND, "no such MCP server"))?;
    let token = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, token)| token.trim());
    match token {
        Some(token) if entry.secret_is(token.as_bytes()) => Ok(entry),
        _ => Err((StatusCode::UNAUTHORIZED, "a bearer token is required")),
    }
}

/// Whether an `Origin` is this machine's loopback (what a local MCP client may send).
fn is_loopback_origin(origin: &str) -> bool {
    let Some(rest) = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
    else {
        return false;
    };
    let host = match rest.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => rest.split([':', '/']).next().unwrap_or(""),
    };
    matches!(host, "127.0.0.1" | "localhost" | "::1")
}

fn accepts_sse(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.contains("text/event-stream"))
}

fn json(status: StatusCode, body: String) -> HttpResponse {
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

fn sse(lines: mpsc::Receiver<String>) -> HttpResponse {
    let stream = futures_util::stream::unfold(lines, |mut lines| async move {
        let line = lines.recv().await?;
        Some((Ok::<_, Infallible>(Event::default().data(line)), lines))
    });
    Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response()
}

async fn on_post(
    State(state): State<Arc<Shared>>,
    Path(entry): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> HttpResponse {
    let entry = match admit(&state, &entry, &headers) {
        Ok(entry) => entry,
        Err((status, why)) => return refuse(status, why),
    };
    let message = match Message::parse(&body) {
        Ok(message) => message,
        Err(answer) => {
            return json(StatusCode::BAD_REQUEST, Message::Response(answer).to_line());
        }
    };
    let named = headers
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let (session, opened) = match named {
        Some(id) => match state.session(&id) {
            Some(session) => (session, false),
            None => return refuse(StatusCode::NOT_FOUND, "no such MCP session"),
        },
        None if message.method() == Some("initialize") => match open(&state, &entry).await {
            Ok(session) => (session, true),
            Err(error) => {
                let id = match &message {
                    Message::Request(r) => r.id.clone(),
                    _ => Id::Null,
                };
                return json(
                    StatusCode::BAD_GATEWAY,
                    Message::Response(Response::error(id, &error)).to_line(),
                );
            }
        },
        None => {
            return refuse(
                StatusCode::BAD_REQUEST,
                "an Mcp-Session-Id header is required after initialize",
            );
        }
    };
    let mut response = exchange(&session, message, accepts_sse(&headers)).await;
    if opened && let Ok(value) = HeaderValue::from_str(&session.id) {
        response.headers_mut().insert(SESSION_HEADER, value);
    }
    response
}

/// Opens an MCP session on `entry`: `_mcp/connect`.
async fn open(state: &Arc<Shared>, entry: &Arc<Entry>) -> Result<Arc<Session>, Error> {
    let (link, from_owner) = state
        .hub
        .connect(&entry.acp_url, entry.session_id())
        .await?;
    tracing::debug!(entry = %entry.name, connection = link.id(), "HTTP bridge connected");
    let session = Arc::new(Session {
        id: uuid::Uuid::new_v4().to_string(),
        to_client: link.to_client(),
        link: tokio::sync::Mutex::new(Some(link)),
        streams: Mutex::default(),
        closed: entry.ended.child_token(),
    });
    lock(&state.sessions).insert(session.id.clone(), session.clone());
    tokio::spawn(session.clone().deliver_to_streams(from_owner));
    let (state, closing) = (state.clone(), session.clone());
    tokio::spawn(async move {
        closing.closed.cancelled().await;
        closing.close().await;
        lock(&state.sessions).remove(&closing.id);
    });
    Ok(session)
}

/// One POSTed message of a session.
async fn exchange(session: &Arc<Session>, message: Message, stream: bool) -> HttpResponse {
    let Message::Request(request) = &message else {
        if let Some(link) = session.link.lock().await.as_ref() {
            link.pass_on(message, &session.to_client).await;
        }
        return StatusCode::ACCEPTED.into_response();
    };
    let id = request.id.clone();
    let (reply, waiter) = if stream {
        let (tx, rx) = mpsc::channel(STREAM_QUEUE);
        (Reply::Stream(rx), Waiter::Stream(tx))
    } else {
        let (tx, rx) = oneshot::channel();
        (Reply::Json(rx), Waiter::Json(tx))
    };
    session.streams().waiting.push((id.clone(), waiter));
    match session.link.lock().await.as_ref() {
        Some(link) => link.pass_on(message, &session.to_client).await,
        None => return refuse(StatusCode::NOT_FOUND, "the MCP session has ended"),
    }
    match reply {
        Reply::Stream(lines) => sse(lines),
        Reply::Json(body) => match body.await {
            Ok(line) => json(StatusCode::OK, line),
            Err(_) => refuse(StatusCode::NOT_FOUND, "the MCP session has ended"),
        },
    }
}

enum Reply {
    Stream(mpsc::Receiver<String>),
    Json(oneshot::Receiver<String>),
}

async fn on_get(
    State(state): State<Arc<Shared>>,
    Path(entry): Path<String>,
    headers: HeaderMap,
) -> HttpResponse {
    if let Err((status, why)) = admit(&state, &entry, &headers) {
        return refuse(status, why);
    }
    if !accepts_sse(&headers) {
        return refuse(
            StatusCode::NOT_ACCEPTABLE,
            "the GET stream is text/event-stream",
        );
    }
    let Some(session) = named_session(&state, &headers) else {
        return refuse(StatusCode::NOT_FOUND, "no such MCP session");
    };
    // What waited for a stream goes first, before anything the owner sends from now on.
    let mut streams = session.streams();
    let (tx, rx) = mpsc::channel(STREAM_QUEUE + streams.backlog.len());
    for line in streams.backlog.drain(..) {
        let _ = tx.try_send(line);
    }
    streams.get = Some(tx);
    drop(streams);
    sse(rx)
}

/// The open MCP session a request names in `Mcp-Session-Id`.
fn named_session(state: &Shared, headers: &HeaderMap) -> Option<Arc<Session>> {
    headers
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .and_then(|id| state.session(id))
}

async fn on_delete(
    State(state): State<Arc<Shared>>,
    Path(entry): Path<String>,
    headers: HeaderMap,
) -> HttpResponse {
    if let Err((status, why)) = admit(&state, &entry, &headers) {
        return refuse(status, why);
    }
    match named_session(&state, &headers) {
        Some(session) => {
            session.closed.cancel();
            StatusCode::OK.into_response()
        }
        None => refuse(StatusCode::NOT_FOUND, "no such MCP session"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_origins_are_local() {
        for local in [
            "http://127.0.0.1",
            "http://127.0.0.1:8080",
            "http://localhost:3000",
            "https://localhost",
            "http://[::1]:9",
        ] {
            assert!(is_loopback_origin(local), "{local}");
        }
        for foreign in [
            "http://evil.example",
            "http://127.0.0.1.evil.example",
            "http://localhost.evil.example:80",
            "null",
            "file://",
        ] {
            assert!(!is_loopback_origin(foreign), "{foreign}");
        }
    }
}
