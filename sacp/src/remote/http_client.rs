//! The client of ACP's Streamable HTTP profile (see *Streamable HTTP* in [`crate::remote`]), as the
//! TypeScript SDK's `createHttpStream` behaves, so that servers written for it serve us too.
//!
//! - The first message written must be `initialize`: it is POSTed alone, and its answer comes
//!   back in the POST's body with the connection's id (`Acp-Connection-Id`). Then the
//!   connection's SSE stream is opened, and everything else is POSTed with that id, one POST at
//!   a time (so the server takes them in order).
//! - A session has an SSE stream of its own, opened when a result names a new `sessionId` and
//!   before anything of that session is POSTed (a `session/load` of an earlier session, say).
//!   A message belongs to a session by its `params.sessionId`; an answer to a request the agent
//!   sent on a session stream names that session too.
//! - Cookies of every response go to every later request (the jar of [`CookieJar`]).
//! - A request's POST answered `401`, `403`, `404` or `410`, a failed POST of a notification
//!   or a response, a failed or ended connection stream: the connection is gone, and reading
//!   fails with what happened. Any other refusal of a request's POST fails only that request
//!   (`-32603`, with `{status, body}` as data); `409` fails the session's requests until it is
//!   loaded or resumed again. A session stream that ends fails that session's requests in flight;
//!   the next message of the session opens it again.
//! - A stream that breaks in the middle (its body fails: a cut TCP connection, a proxy that
//!   restarted) is opened again with `Last-Event-ID`, when the server gives its events ids, as
//!   ours does: up to `RESUME_TRIES` (5) times in a row, waiting 100 ms, 200 ms, 400 ms, … before
//!   each; the server sends again what the broken stream may have lost, so every event arrives
//!   once. A stream the server ends, a server without ids (the TypeScript SDK's), a refused
//!   resumption (`410`: the server no longer has the events) or the last try failing: as
//!   above.
//! - Closing the writer DELETEs the connection.
//!
//! What the SSE streams bring is read only as fast as the connection takes it: a slow handler
//! holds back the stream, and through TCP the server.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use http::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderValue};
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use super::cookies::CookieJar;
use super::sse;
use super::wire::{self, CONNECTION_ID, EVENT_STREAM, LAST_EVENT_ID, SESSION_ID};
use crate::jsonrpc::message::Parsed;
use crate::jsonrpc::transport::{Inbound, MessageReader, MessageWriter, Transport};
use crate::jsonrpc::{Error, Id, Message, Response};
use crate::lock::lock;

/// How many times in a row a broken SSE stream is resumed before the connection fails.
pub(crate) const RESUME_TRIES: u32 = 5;
/// The wait before the first try to resume a broken stream (doubled for each next one).
const RESUME_BACKOFF: std::time::Duration = std::time::Duration::from_millis(100);

/// How many messages the streams may read ahead of the connection.
const READ_AHEAD: usize = 64;
/// The most of an error body kept (see *Limits* in [`crate::remote`]).
const MAX_ERROR_BODY: usize = 8 * 1024;

/// An ACP connection over Streamable HTTP (made by [`Remote`](super::Remote)).
#[derive(Debug)]
pub struct HttpClient {
    shared: Arc<Shared>,
    inbound: mpsc::Receiver<std::io::Result<Inbound>>,
}

/// The HTTP client: HTTP/1.1, or HTTP/2 where TLS offers it, over rustls.
pub(crate) type Http = hyper_util::client::legacy::Client<
    hyper_rustls::HttpsConnector<hyper_util::client::legacy::connect::HttpConnector>,
    http_body_util::Full<bytes::Bytes>,
>;

#[derive(Debug)]
struct Shared {
    http: Http,
    url: http::Uri,
    /// The URL as errors show it (no credentials).
    peer: String,
    headers: HeaderMap,
    jar: CookieJar,
    /// Whether the jar is this connection's own (emptied at its end).
    own_jar: bool,
    max_message: usize,
    to_reader: mpsc::Sender<std::io::Result<Inbound>>,
    state: Mutex<State>,
    /// Cancelled when the connection ends: stops its streams.
    ended: CancellationToken,
}

#[derive(Debug, Default)]
struct State {
    connection: Option<String>,
    /// Session streams opened (or opening): whether each has its `200` yet.
    sessions: HashMap<String, watch::Receiver<Option<Result<(), String>>>>,
    /// Sessions refused with `409`, until a `session/load` or `session/resume`.
    failed: HashMap<String, String>,
    /// The agent's requests that came on a session stream: their answers name that session.
    answer_sessions: HashMap<Id, String>,
    /// Our requests of a session, still unanswered: failed if the session's stream ends.
    in_flight: HashMap<Id, String>,
    /// Whether it failed or closed (reported once).
    over: bool,
    /// Why it failed, if it did: what reading ends with.
    failure: Option<String>,
}

impl State {
    /// Forgets `session`'s stream; the ids of its requests still in flight, which are no
    /// longer waited for here.
    fn take_session(&mut self, session: &str) -> Vec<Id> {
        self.sessions.remove(session);
        let mut ids = Vec::new();
        self.in_flight.retain(|id, of| {
            let theirs = of == session;
            if theirs {
                ids.push(id.clone());
            }
            !theirs
        });
        ids
    }
}

impl HttpClient {
    pub(crate) fn new(
        http: Http,
        url: http::Uri,
        peer: String,
        headers: HeaderMap,
        jar: Option<CookieJar>,
        max_message: usize,
    ) -> HttpClient {
        let (to_reader, inbound) = mpsc::channel(READ_AHEAD);
        HttpClient {
            shared: Arc::new(Shared {
                http,
                url,
                peer,
                headers,
                own_jar: jar.is_none(),
                jar: jar.unwrap_or_default(),
                max_message,
                to_reader,
                state: Mutex::default(),
                ended: CancellationToken::new(),
            }),
            inbound,
        }
    }
}

impl Transport for HttpClient {
    type Reader = HttpReader;
    type Writer = HttpWriter;

    fn split(self) -> (HttpReader, HttpWriter) {
        (
            HttpReader {
                inbound: self.inbound,
                shared: self.shared.clone(),
            },
            HttpWriter {
                shared: self.shared,
            },
        )
    }
}

/// The reading half of an [`HttpClient`]: what the SSE streams bring.
#[derive(Debug)]
pub struct HttpReader {
    inbound: mpsc::Receiver<std::io::Result<Inbound>>,
    shared: Arc<Shared>,
}

impl MessageReader for HttpReader {
    async fn read(&mut self) -> std::io::Result<Option<Inbound>> {
        let read = tokio::select! {
            biased;
            read = self.inbound.recv() => read,
            // What was read before the end still comes first.
            () = self.shared.ended.cancelled() => self.inbound.try_recv().ok(),
        };
        match read {
            Some(read) => read.map(Some),
            None => match lock(&self.shared.state).failure.clone() {
                Some(why) => Err(std::io::Error::new(
                    std::io::ErrorKind::ConnectionAborted,
                    why,
                )),
                None => Ok(None),
            },
        }
    }
}

/// The writing half of an [`HttpClient`]: one POST per message, one at a time.
#[derive(Debug)]
pub struct HttpWriter {
    shared: Arc<Shared>,
}

impl MessageWriter for HttpWriter {
    async fn write(&mut self, batch: &mut Vec<Message>) -> std::io::Result<()> {
        for message in batch.drain(..) {
            if self.shared.ended.is_cancelled() {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::BrokenPipe,
                    format!("the ACP connection to {} is closed", self.shared.peer),
                ));
            }
            let connected = lock(&self.shared.state).connection.clone();
            let posted = match connected {
                None => self.shared.clone().initialize(message).await,
                Some(connection) => self.shared.clone().post(&connection, message).await,
            };
            if let Err(e) = posted {
                self.shared.fail(e.to_string()).await;
                return Err(e);
            }
        }
        Ok(())
    }

    async fn close(&mut self) -> std::io::Result<()> {
        self.shared.close().await;
        Ok(())
    }
}

/// An HTTP answer that was not a success.
struct Refused {
    status: http::StatusCode,
    body: String,
}

impl Shared {
    /// Sends a request to the server's URL with `headers` (after the user's), the jar's
    /// cookies and `body`; keeps the cookies of the answer.
    async fn send(
        &self,
        method: http::Method,
        headers: HeaderMap,
        body: bytes::Bytes,
    ) -> std::io::Result<http::Response<hyper::body::Incoming>> {
        let mut all = self.headers.clone();
        all.extend(headers);
        self.jar.apply(&mut all);
        let mut request = http::Request::new(http_body_util::Full::new(body));
        *request.method_mut() = method;
        *request.uri_mut() = self.url.clone();
        *request.headers_mut() = all;
        let response = self
            .http
            .request(request)
            .await
            .map_err(|e| self.unreachable(&e))?;
        self.jar.store(response.headers());
        Ok(response)
    }

    fn unreachable(&self, e: &(dyn std::error::Error + 'static)) -> std::io::Error {
        let mut text = e.to_string();
        let mut source = e.source();
        while let Some(cause) = source {
            text.push_str(&format!(": {cause}"));
            source = cause.source();
        }
        std::io::Error::new(
            std::io::ErrorKind::ConnectionRefused,
            format!("cannot reach the ACP server at {}: {text}", self.peer),
        )
    }

    /// The body of a response, up to `max` bytes (`cut`: the rest dropped; otherwise an
    /// error).
    async fn body(
        &self,
        response: http::Response<hyper::body::Incoming>,
        max: usize,
        cut: bool,
    ) -> std::io::Result<Vec<u8>> {
        use http_body_util::BodyExt;
        let mut out = Vec::new();
        let mut body = response.into_body();
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| self.unreachable(&e))?;
            let Ok(chunk) = frame.into_data() else {
                continue;
            };
            if out.len() + chunk.len() > max {
                if cut {
                    out.extend_from_slice(&chunk[..max - out.len()]);
                    return Ok(out);
                }
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!(
                        "the ACP server at {} sent a body over {max} bytes",
                        self.peer
                    ),
                ));
            }
            out.extend_from_slice(&chunk);
        }
        Ok(out)
    }

    async fn refused(&self, response: http::Response<hyper::body::Incoming>) -> Refused {
        let status = response.status();
        let body = self
            .body(response, MAX_ERROR_BODY, true)
            .await
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default();
        Refused { status, body }
    }

    /// POSTs `initialize`, the connection's first message, and hands its answer to the reader.
    async fn initialize(self: Arc<Self>, message: Message) -> std::io::Result<()> {
        let Message::Request(request) = &message else {
            return Err(protocol(
                "the first message of an ACP HTTP connection must be initialize",
            ));
        };
        if request.method != "initialize" {
            return Err(protocol(&format!(
                "the first message of an ACP HTTP connection must be initialize, not {}",
                request.method
            )));
        }
        let id = request.id.clone();
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let response = self
            .send(http::Method::POST, headers, wire::encode(&message))
            .await?;
        if !response.status().is_success() {
            let refused = self.refused(response).await;
            return Err(std::io::Error::new(
                std::io::ErrorKind::ConnectionRefused,
                format!(
                    "the ACP server at {} refused initialize: {} {}",
                    self.peer, refused.status, refused.body
                ),
            ));
        }
        let connection = response
            .headers()
            .get(CONNECTION_ID)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
            .ok_or_else(|| protocol("the initialize answer has no Acp-Connection-Id"))?;
        lock(&self.state).connection = Some(connection.clone());
        let body = self.body(response, self.max_message, false).await?;
        let answer = match wire::decode(body.into()) {
            Parsed::Message(Message::Response(answer)) if answer.id == id => answer,
            _ => {
                return Err(protocol(
                    "the initialize answer is not the response to initialize",
                ));
            }
        };
        let stream = Stream {
            shared: self.clone(),
            connection,
            session: None,
        };
        tokio::spawn(stream.run(None));
        self.deliver(Ok(Inbound::Message(Message::Response(answer))))
            .await;
        Ok(())
    }

    /// POSTs a message of the connection: `Ok` when it was taken, or failed alone.
    async fn post(self: Arc<Self>, connection: &str, message: Message) -> std::io::Result<()> {
        let session = wire::session_of_params(&message)
            .map(Cow::into_owned)
            .or_else(|| match &message {
                Message::Response(r) => lock(&self.state).answer_sessions.remove(&r.id),
                _ => None,
            });
        let request_id = match &message {
            Message::Request(r) => Some(r.id.clone()),
            _ => None,
        };
        if let Some(session) = &session {
            if matches!(message.method(), Some("session/load" | "session/resume")) {
                lock(&self.state).failed.remove(session);
            }
            if let Err(why) = self.clone().open_session(connection, session).await {
                if let Some(id) = request_id {
                    self.fail_request(id, &why, None).await;
                }
                return Ok(());
            }
            if let Some(id) = &request_id {
                lock(&self.state)
                    .in_flight
                    .insert(id.clone(), session.clone());
            }
        }
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(CONNECTION_ID, header(connection)?);
        if let Some(session) = &session {
            headers.insert(SESSION_ID, header(session)?);
        }
        let response = self
            .send(http::Method::POST, headers, wire::encode(&message))
            .await?;
        if response.status().is_success() {
            return Ok(());
        }
        let refused = self.refused(response).await;
        let what = format!(
            "ACP POST failed: {} {}",
            refused.status.as_u16(),
            refused.status.canonical_reason().unwrap_or_default()
        );
        let gone = matches!(refused.status.as_u16(), 401 | 403 | 404 | 410);
        match (request_id, session) {
            (Some(id), Some(session)) if refused.status.as_u16() == 409 => {
                self.fail_session(&session, &what).await;
                let pending = lock(&self.state).in_flight.remove(&id).is_some();
                if pending {
                    self.fail_request(id, &what, Some(&refused)).await;
                }
                Ok(())
            }
            (Some(id), session) if !gone => {
                // A request of a session may have been settled meanwhile (answered, or failed
                // with its stream).
                let pending =
                    session.is_none() || lock(&self.state).in_flight.remove(&id).is_some();
                if pending {
                    self.fail_request(id, &what, Some(&refused)).await;
                }
                Ok(())
            }
            (None, Some(session)) if refused.status.as_u16() == 409 => {
                self.fail_session(&session, &what).await;
                Ok(())
            }
            _ => Err(std::io::Error::new(
                std::io::ErrorKind::ConnectionAborted,
                format!("{what} ({}): {}", self.peer, refused.body),
            )),
        }
    }

    /// Opens the SSE stream of `session` unless it is open, and waits for its `200`.
    async fn open_session(self: Arc<Self>, connection: &str, session: &str) -> Result<(), String> {
        let mut ready = {
            let mut state = lock(&self.state);
            if let Some(why) = state.failed.get(session) {
                return Err(why.clone());
            }
            match state.sessions.get(session) {
                Some(ready) => ready.clone(),
                None => {
                    let (tx, rx) = watch::channel(None);
                    state.sessions.insert(session.to_owned(), rx.clone());
                    let stream = Stream {
                        shared: self.clone(),
                        connection: connection.to_owned(),
                        session: Some(session.to_owned()),
                    };
                    tokio::spawn(stream.run(Some(tx)));
                    rx
                }
            }
        };
        let opened = ready.wait_for(Option::is_some).await;
        match opened.as_deref() {
            Ok(Some(Ok(()))) => Ok(()),
            Ok(Some(Err(why))) => Err(why.clone()),
            _ => Err("the session's stream ended before it opened".to_owned()),
        }
    }

    /// Session `session` was refused (`409`): its requests fail until it is loaded again.
    async fn fail_session(&self, session: &str, why: &str) {
        let failed: Vec<Id> = {
            let mut state = lock(&self.state);
            state.failed.insert(session.to_owned(), why.to_owned());
            state.take_session(session)
        };
        for id in failed {
            self.fail_request(id, why, None).await;
        }
    }

    /// Answers our request `id` with an error, as if the server had.
    async fn fail_request(&self, id: Id, why: &str, refused: Option<&Refused>) {
        let mut error = Error::internal_error(why);
        if let Some(refused) = refused {
            let body = serde_json::from_str::<serde_json::Value>(&refused.body)
                .unwrap_or_else(|_| serde_json::Value::String(refused.body.clone()));
            error = error.with_data(serde_json::json!({
                "status": refused.status.as_u16(),
                "body": body,
            }));
        }
        let answer = Response::error(id, &error);
        self.deliver(Ok(Inbound::Message(Message::Response(answer))))
            .await;
    }

    async fn deliver(&self, read: std::io::Result<Inbound>) {
        let _ = self.to_reader.send(read).await;
    }

    /// The connection failed: the reader gets `why` (once), the streams stop, the server is
    /// told (DELETE, best effort).
    async fn fail(&self, why: String) {
        {
            let mut state = lock(&self.state);
            if std::mem::replace(&mut state.over, true) {
                return;
            }
            state.failure = Some(why.clone());
        }
        tracing::warn!(server = %self.peer, "the ACP connection failed: {why}");
        self.end().await;
    }

    /// Ends the connection as the client chose: DELETE, then the reader's end of stream.
    async fn close(&self) {
        if std::mem::replace(&mut lock(&self.state).over, true) {
            return;
        }
        self.end().await;
    }

    async fn end(&self) {
        self.ended.cancel();
        let connection = lock(&self.state).connection.take();
        if let Some(connection) = connection
            && let Ok(value) = header(&connection)
        {
            let mut headers = HeaderMap::new();
            headers.insert(CONNECTION_ID, value);
            let delete = self.send(http::Method::DELETE, headers, bytes::Bytes::new());
            let deleted = tokio::time::timeout(std::time::Duration::from_secs(5), delete);
            if let Ok(Err(e)) = deleted.await {
                tracing::debug!("DELETE of the ACP connection: {e}");
            }
        }
        if self.own_jar {
            self.jar.clear();
        }
    }
}

/// How a stream's body ended.
enum Taken {
    /// The server ended it.
    End,
    /// It broke, and why: it may be resumed.
    Broken(String),
    /// It sent what fails the connection (which has been failed).
    Failed,
}

/// One SSE stream: the connection's, or a session's.
struct Stream {
    shared: Arc<Shared>,
    connection: String,
    session: Option<String>,
}

impl Stream {
    /// Reads the stream until it ends or the connection does. (Boxed: a stream's messages can
    /// open other streams.)
    fn run(
        self,
        ready: Option<watch::Sender<Option<Result<(), String>>>>,
    ) -> futures_util::future::BoxFuture<'static, ()> {
        Box::pin(async move {
            let shared = self.shared.clone();
            tokio::select! {
                () = shared.ended.cancelled() => {}
                () = self.read(ready) => {}
            }
        })
    }

    async fn read(self, mut ready: Option<watch::Sender<Option<Result<(), String>>>>) {
        let shared = &self.shared;
        let what = match &self.session {
            Some(session) => format!("the SSE stream of session {session}"),
            None => "the connection's SSE stream".to_owned(),
        };
        let mut parser = sse::Parser::new(shared.max_message);
        let mut tries = 0;
        loop {
            // A stream opened again after it broke resumes after the last event it got.
            let resuming = parser.last_id().map(str::to_owned).filter(|_| tries > 0);
            let Some(mut body) = self.open(&what, resuming.as_deref(), &mut ready).await else {
                return;
            };
            match self.events(&what, &mut parser, &mut body).await {
                Taken::End => break,
                Taken::Failed => return,
                Taken::Broken(why) => {
                    if parser.last_id().is_none() || tries >= RESUME_TRIES {
                        shared.fail(why).await;
                        return;
                    }
                    parser.broken();
                    tracing::info!(server = %shared.peer, "{why}: resuming it");
                    tokio::time::sleep(RESUME_BACKOFF * 2u32.pow(tries)).await;
                    tries += 1;
                }
            }
        }
        self.ended().await;
    }

    /// GETs the stream (after event `resuming`, if given): its body, or `None` when it was
    /// refused or could not be had (said where it must be).
    async fn open(
        &self,
        what: &str,
        resuming: Option<&str>,
        ready: &mut Option<watch::Sender<Option<Result<(), String>>>>,
    ) -> Option<hyper::body::Incoming> {
        let shared = &self.shared;
        let mut headers = HeaderMap::new();
        headers.insert(ACCEPT, HeaderValue::from_static(EVENT_STREAM));
        let (Ok(connection), session) = (
            header(&self.connection),
            self.session.as_deref().map(header).transpose(),
        ) else {
            return None;
        };
        headers.insert(CONNECTION_ID, connection);
        if let Ok(Some(session)) = session {
            headers.insert(SESSION_ID, session);
        }
        if let Some(last) = resuming.and_then(|id| header(id).ok()) {
            headers.insert(LAST_EVENT_ID, last);
        }
        let opened = match shared
            .send(http::Method::GET, headers, bytes::Bytes::new())
            .await
        {
            Ok(response) if response.status().is_success() => Ok(response.into_body()),
            Ok(response) => {
                let refused = shared.refused(response).await;
                let why = format!(
                    "{what} was refused: {} {}",
                    refused.status.as_u16(),
                    refused.body
                );
                Err((why, Some(refused.status.as_u16())))
            }
            Err(e) => Err((e.to_string(), None)),
        };
        match opened {
            Ok(body) => {
                if let Some(ready) = ready.take() {
                    let _ = ready.send(Some(Ok(())));
                }
                Some(body)
            }
            Err((why, status)) => {
                if let Some(ready) = ready.take() {
                    let _ = ready.send(Some(Err(why.clone())));
                }
                match (&self.session, status) {
                    (Some(session), Some(409)) => shared.fail_session(session, &why).await,
                    _ => shared.fail(why).await,
                }
                None
            }
        }
    }

    /// Takes the events of `body` until it ends, breaks or must not be read on.
    async fn events(
        &self,
        what: &str,
        parser: &mut sse::Parser,
        body: &mut hyper::body::Incoming,
    ) -> Taken {
        let shared = &self.shared;
        let mut events = Vec::new();
        loop {
            let chunk = match http_body_util::BodyExt::frame(body).await {
                None => return Taken::End,
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(chunk) => chunk,
                    Err(_) => continue,
                },
                Some(Err(e)) => {
                    return Taken::Broken(format!("{what} failed: {}", shared.unreachable(&e)));
                }
            };
            if let Err(sse::TooLong(n)) = parser.feed(&chunk, &mut events) {
                let why = format!("{what} sent an event of {n} bytes, over the limit");
                shared.fail(why).await;
                return Taken::Failed;
            }
            for data in events.drain(..) {
                self.take(data).await;
            }
        }
    }

    /// The stream ended: the connection's ends the connection; a session's, its requests in
    /// flight.
    async fn ended(&self) {
        let shared = &self.shared;
        match &self.session {
            None => {
                shared
                    .fail(format!(
                        "the ACP server at {} closed the connection's SSE stream",
                        shared.peer
                    ))
                    .await
            }
            Some(session) => {
                let failed: Vec<Id> = lock(&shared.state).take_session(session);
                for id in failed {
                    shared
                        .fail_request(id, "ACP session SSE stream closed", None)
                        .await;
                }
            }
        }
    }

    /// One event's message, to the reader.
    async fn take(&self, data: bytes::Bytes) {
        let shared = &self.shared;
        let message = match wire::decode(data) {
            Parsed::Message(message) => message,
            Parsed::BadResponse { id, error } => {
                shared.deliver(Ok(Inbound::BadResponse { id, error })).await;
                return;
            }
            Parsed::Invalid { error, .. } => {
                tracing::warn!(server = %shared.peer, %error, "skipping an SSE event that is not a message");
                return;
            }
        };
        match &message {
            Message::Request(request) => {
                if let Some(session) = &self.session {
                    lock(&shared.state)
                        .answer_sessions
                        .insert(request.id.clone(), session.clone());
                }
            }
            Message::Response(response) => {
                lock(&shared.state).in_flight.remove(&response.id);
                if let Some(session) = wire::session_of_result(&message).map(Cow::into_owned) {
                    let known = lock(&shared.state).sessions.contains_key(&session);
                    if !known {
                        let opening = shared
                            .clone()
                            .open_session_later(self.connection.clone(), session);
                        tokio::spawn(opening);
                    }
                }
            }
            Message::Notification(_) => {}
        }
        shared.deliver(Ok(Inbound::Message(message))).await;
    }
}

impl Shared {
    /// Opens a session's stream without waiting for it (a result named a new session).
    async fn open_session_later(self: Arc<Self>, connection: String, session: String) {
        let _ = self.open_session(&connection, &session).await;
    }
}

fn header(value: &str) -> std::io::Result<HeaderValue> {
    HeaderValue::from_str(value)
        .map_err(|_| protocol(&format!("{value:?} cannot be an HTTP header value")))
}

fn protocol(what: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_owned())
}
