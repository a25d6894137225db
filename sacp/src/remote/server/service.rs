//! What serves the requests of one HTTP connection: authentication and the `Host` and
//! `Origin` checks, the WebSocket upgrade, and the Streamable HTTP profile's POST, GET and
//! DELETE (see *Streamable HTTP* in [`crate::remote`]).

use super::*;
use crate::jsonrpc::transport::{Inbound, MessageReader};

/// What serves the requests of one HTTP connection (TCP or TLS).
#[derive(Clone)]
pub(super) struct Service {
    pub(super) config: Arc<Config>,
    pub(super) accept:
        Arc<dyn Fn(Accepted) -> futures_util::future::BoxFuture<'static, ()> + Send + Sync>,
    pub(super) tasks: tokio_util::task::TaskTracker,
    pub(super) peer: SocketAddr,
}

/// Whether `message` may go to `conn`'s agent as its headers name it: its session header
/// agrees with its params, its ids are not too long, and a request has room for its answer
/// (waited for), which is then expected on the stream of its session. The answer refusing it
/// otherwise.
async fn admit(
    conn: &Conn,
    headers: &HeaderMap,
    message: &Message,
) -> Result<(), http::Response<Body>> {
    let session = header_of(headers, wire::SESSION_ID).map(str::to_owned);
    let too_long = || {
        text(
            StatusCode::BAD_REQUEST,
            "Session ID exceeds maxIdLength (1024)",
        )
    };
    if session.as_deref().is_some_and(wire::too_long) {
        return Err(too_long());
    }
    let mismatched = || text(StatusCode::BAD_REQUEST, "Mismatched Acp-Session-Id");
    if let Message::Response(response) = message {
        // An answer names the session of the stream its request went on, if it names one.
        // Unlike the TypeScript SDK's server we take an answer without `Acp-Session-Id`
        // (routed by its id): the official Rust client sends none (measured against it: its
        // HTTP permission round trip fails otherwise).
        if let (Some(Route::Session(asked)), Some(named)) =
            (conn.asked_route(&response.id), &session)
            && *named != asked
        {
            return Err(mismatched());
        }
        return Ok(());
    }
    let of_params = wire::session_of_params(message);
    let method = message.method().unwrap_or_default();
    if (wire::session_scoped(method) || of_params.is_some()) && session.is_none() {
        return Err(text(StatusCode::BAD_REQUEST, "Missing Acp-Session-Id"));
    }
    if let (Some(header), Some(params)) = (&session, &of_params)
        && header != params
    {
        return Err(mismatched());
    }
    if of_params.as_deref().is_some_and(wire::too_long) {
        return Err(too_long());
    }
    if let Message::Request(request) = message {
        if wire::id_too_long(&request.id) {
            return Err(text(
                StatusCode::BAD_REQUEST,
                "Request ID exceeds maxIdLength (1024)",
            ));
        }
        // Anything the agent answers waits for room for the answer.
        if !conn.room().await {
            return Err(text(StatusCode::NOT_FOUND, "Unknown Acp-Connection-Id"));
        }
        let route = match (&session, method) {
            (_, "session/load") | (None, _) => Route::Connection,
            (Some(s), _) => Route::Session(s.clone()),
        };
        conn.expect_answer(request.id.clone(), route);
    }
    Ok(())
}

/// The Content Security Policy of a page of [`ServerBuilder::page`]: its own inline scripts
/// and styles, connections to its own origin, frames only from `srcdoc` (sandboxed by the
/// page), nothing else.
const PAGE_POLICY: &str = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; \
     img-src data:; connect-src 'self'; frame-src 'self'; base-uri 'none'; form-action 'none'; \
     frame-ancestors 'none'";

/// The subprotocol a browser offers beside its token, which the server selects.
const ACP_SUBPROTOCOL: &str = "acp";

/// What starts the subprotocol that carries a browser's token.
const BEARER_SUBPROTOCOL: &str = "sacp.bearer.";

/// The subprotocols a WebSocket upgrade offers.
fn subprotocols(headers: &HeaderMap) -> impl Iterator<Item = &str> {
    headers
        .get_all(header::SEC_WEBSOCKET_PROTOCOL)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
}

/// The token a browser's WebSocket upgrade carries in a `sacp.bearer.<base64url>`
/// subprotocol.
fn subprotocol_token(headers: &HeaderMap) -> Option<Vec<u8>> {
    use base64::Engine as _;
    let encoded = subprotocols(headers).find_map(|p| p.strip_prefix(BEARER_SUBPROTOCOL))?;
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(encoded)
        .ok()
}

/// Whether `origin` is this server's own, reached as `host`.
fn same_origin(origin: &str, host: &str, tls: bool) -> bool {
    let scheme = if tls { "https://" } else { "http://" };
    origin
        .strip_prefix(scheme)
        .is_some_and(|rest| rest.eq_ignore_ascii_case(host))
}

fn text(status: StatusCode, body: &str) -> http::Response<Body> {
    let mut response = http::Response::new(full(Bytes::from(body.to_owned())));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    response
}

fn json(status: StatusCode, body: Bytes) -> http::Response<Body> {
    let mut response = http::Response::new(full(body));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

fn empty(status: StatusCode) -> http::Response<Body> {
    let mut response = http::Response::new(full(Bytes::new()));
    *response.status_mut() = status;
    response
}

fn full(bytes: Bytes) -> Body {
    UnsyncBoxBody::new(Full::new(bytes))
}

fn header_of<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

impl Service {
    pub(super) async fn handle(&self, req: Request<Incoming>) -> http::Response<Body> {
        // HTTP/2 names the host in the URI (`:authority`), HTTP/1.1 in `Host`.
        let authority = req.uri().authority().map(|a| a.as_str().to_owned());
        if req.uri().path() != self.config.path {
            return self.page(&req, authority.as_deref());
        }
        if let Err(response) = self.admit(req.headers(), authority.as_deref()) {
            return *response;
        }
        let upgrade = header_of(req.headers(), "upgrade")
            .is_some_and(|u| u.eq_ignore_ascii_case("websocket"));
        match *req.method() {
            Method::GET if upgrade => self.upgrade(req),
            Method::POST => self.post(req).await,
            Method::GET => self.get(req.headers(), req.version()),
            Method::DELETE => self.delete(req.headers()).await,
            _ => text(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed"),
        }
    }

    /// A page of [`ServerBuilder::page`] at the request's path, or `404`.
    fn page(&self, req: &Request<Incoming>, authority: Option<&str>) -> http::Response<Body> {
        let page = self
            .config
            .pages
            .iter()
            .find(|(path, _)| path == req.uri().path());
        let Some((_, html)) = page.filter(|_| req.method() == Method::GET) else {
            return text(StatusCode::NOT_FOUND, "Not Found");
        };
        if !self.host_ok(req.headers(), authority) {
            return text(StatusCode::FORBIDDEN, "Forbidden: Host not allowed");
        }
        let mut response = http::Response::new(full(html.clone()));
        let out = response.headers_mut();
        out.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/html; charset=utf-8"),
        );
        out.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(PAGE_POLICY),
        );
        out.insert(
            header::REFERRER_POLICY,
            HeaderValue::from_static("no-referrer"),
        );
        out.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        out.insert(
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        );
        response
    }

    /// Whether the request names a host this server answers for.
    fn host_ok(&self, headers: &HeaderMap, authority: Option<&str>) -> bool {
        let config = &self.config;
        let host = header_of(headers, "host").or(authority).unwrap_or_default();
        if config.hosts.iter().any(|h| h.eq_ignore_ascii_case(host)) {
            true
        } else if config.loopback {
            is_loopback_host(host)
        } else {
            config.hosts.is_empty()
        }
    }

    /// The checks every request passes: its host, its `Origin`, its token.
    fn admit(
        &self,
        headers: &HeaderMap,
        authority: Option<&str>,
    ) -> Result<(), Box<http::Response<Body>>> {
        let config = &self.config;
        if !self.host_ok(headers, authority) {
            return Err(Box::new(text(
                StatusCode::FORBIDDEN,
                "Forbidden: Host not allowed",
            )));
        }
        let host = header_of(headers, "host").or(authority).unwrap_or_default();
        if let Some(origin) = header_of(headers, "origin")
            && !config
                .origins
                .iter()
                .any(|o| o.eq_ignore_ascii_case(origin))
            && (config.pages.is_empty() || !same_origin(origin, host, config.tls.is_some()))
        {
            return Err(Box::new(text(
                StatusCode::FORBIDDEN,
                "Forbidden: Origin not allowed",
            )));
        }
        let given = header_of(headers, "authorization")
            .and_then(|a| {
                a.strip_prefix("Bearer ")
                    .or_else(|| a.strip_prefix("bearer "))
            })
            .map(|t| t.as_bytes().to_vec())
            .or_else(|| subprotocol_token(headers))
            .unwrap_or_default();
        if !constant_time_eq(&given, config.token.as_bytes()) {
            let mut response = text(StatusCode::UNAUTHORIZED, "Unauthorized");
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            return Err(Box::new(response));
        }
        Ok(())
    }

    /// Counts a new ACP connection, if the limit allows one more.
    fn admit_connection(&self) -> bool {
        let live = &self.config.registry.live;
        let mut now = live.load(Ordering::Acquire);
        loop {
            if now >= self.config.max_connections {
                return false;
            }
            match live.compare_exchange(now, now + 1, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return true,
                Err(seen) => now = seen,
            }
        }
    }

    fn upgrade(&self, req: Request<Incoming>) -> http::Response<Body> {
        let headers = req.headers();
        let version_ok = header_of(headers, "sec-websocket-version") == Some("13");
        let Some(key) = headers
            .get("sec-websocket-key")
            .cloned()
            .filter(|_| version_ok)
        else {
            return text(StatusCode::BAD_REQUEST, "Bad WebSocket upgrade");
        };
        if !self.admit_connection() {
            return text(StatusCode::SERVICE_UNAVAILABLE, "Too many connections");
        }
        let connection_id = uuid::Uuid::new_v4().to_string();
        let mut response = empty(StatusCode::SWITCHING_PROTOCOLS);
        let out = response.headers_mut();
        out.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
        out.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
        if let Ok(accept) = HeaderValue::from_str(&derive_accept_key(key.as_bytes())) {
            out.insert(header::SEC_WEBSOCKET_ACCEPT, accept);
        }
        if let Ok(id) = HeaderValue::from_str(&connection_id) {
            out.insert(wire::CONNECTION_ID, id);
        }
        // A browser that offered subprotocols (its token in one) fails the connection unless
        // one is selected: `acp`.
        if subprotocols(req.headers()).any(|p| p == ACP_SUBPROTOCOL) {
            out.insert(
                header::SEC_WEBSOCKET_PROTOCOL,
                HeaderValue::from_static(ACP_SUBPROTOCOL),
            );
        }
        let this = self.clone();
        self.tasks.spawn(async move {
            let live = this.config.registry.live.clone();
            let upgraded = match hyper::upgrade::on(req).await {
                Ok(upgraded) => upgraded,
                Err(e) => {
                    tracing::debug!("WebSocket upgrade failed: {e}");
                    live.fetch_sub(1, Ordering::AcqRel);
                    return;
                }
            };
            let mut config = WebSocketConfig::default();
            // tungstenite zeroes its read buffer's spare room on every read: 128 KiB by default,
            // microseconds per message (a larger message still grows the buffer as it needs).
            config.read_buffer_size = super::super::WS_READ_BUFFER;
            config.max_message_size = Some(this.config.max_message);
            config.max_frame_size = Some(this.config.max_message);
            let socket = WebSocketStream::from_raw_socket(
                TokioIo::new(upgraded),
                Role::Server,
                Some(config),
            )
            .await;
            let transport = WebSocket::new(
                socket,
                ws::Side::Server,
                this.peer.to_string(),
                this.config.limits.stall,
            )
            .ending_on(this.config.shutdown.clone());
            let accepted = Accepted {
                transport: Either::Left(Box::new(transport)),
                connection_id,
                profile: Profile::WebSocket,
                peer: this.peer,
            };
            (this.accept)(accepted).await;
            live.fetch_sub(1, Ordering::AcqRel);
        });
        response
    }

    async fn post(&self, req: Request<Incoming>) -> http::Response<Body> {
        let (parts, message) = match self.read_message(req).await {
            Ok(read) => read,
            Err(refused) => return refused,
        };
        let connection = header_of(&parts.headers, wire::CONNECTION_ID);
        if message.method() == Some("initialize")
            && let Message::Request(request) = &message
        {
            if connection.is_some() {
                return text(
                    StatusCode::BAD_REQUEST,
                    "Initialize not allowed on existing connection",
                );
            }
            if request.id == Id::Null {
                return text(
                    StatusCode::BAD_REQUEST,
                    "Initialize request must include an ID",
                );
            }
            return self.initialize(message).await;
        }
        let Some(connection) = connection else {
            return text(StatusCode::BAD_REQUEST, "Missing Acp-Connection-Id");
        };
        let Some(conn) = self.config.registry.get(connection) else {
            return text(StatusCode::NOT_FOUND, "Unknown Acp-Connection-Id");
        };
        if let Err(refused) = admit(&conn, &parts.headers, &message).await {
            return refused;
        }
        if !conn.to_agent(message).await {
            return text(StatusCode::NOT_FOUND, "Unknown Acp-Connection-Id");
        }
        empty(StatusCode::ACCEPTED)
    }

    /// The message of a POST, within the body limit; or the answer refusing it (an object
    /// that is not a message is answered on its connection's stream, as an agent would).
    async fn read_message(
        &self,
        req: Request<Incoming>,
    ) -> Result<(http::request::Parts, Message), http::Response<Body>> {
        let media = header_of(req.headers(), "content-type")
            .and_then(|c| c.split(';').next())
            .map(|m| m.trim().to_ascii_lowercase());
        if media.as_deref() != Some("application/json") {
            return Err(text(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "Unsupported Media Type",
            ));
        }
        let too_large = || {
            text(
                StatusCode::PAYLOAD_TOO_LARGE,
                &format!("Request body exceeds {} bytes", self.config.max_body),
            )
        };
        let declared =
            header_of(req.headers(), "content-length").and_then(|l| l.parse::<usize>().ok());
        if declared.is_some_and(|l| l > self.config.max_body) {
            return Err(too_large());
        }
        let (parts, body) = req.into_parts();
        let body = match Limited::new(body, self.config.max_body).collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(e) if e.is::<http_body_util::LengthLimitError>() => return Err(too_large()),
            Err(_) => {
                return Err(text(
                    StatusCode::BAD_REQUEST,
                    "Request body could not be read",
                ));
            }
        };
        let first = body.iter().find(|b| !b.is_ascii_whitespace()).copied();
        if first == Some(b'[') && serde_json::from_slice::<serde::de::IgnoredAny>(&body).is_ok() {
            let error = Error::invalid_request("JSON-RPC batches are not supported");
            return Err(json(
                StatusCode::BAD_REQUEST,
                wire::encode(&Message::Response(Response::error(Id::Null, &error))),
            ));
        }
        match wire::decode(body) {
            Parsed::Message(message) => Ok((parts, message)),
            Parsed::Invalid { error, .. } if error.code == crate::jsonrpc::code::PARSE_ERROR => {
                Err(text(StatusCode::BAD_REQUEST, "Invalid JSON"))
            }
            Parsed::Invalid { id, error } | Parsed::BadResponse { id, error } => {
                if first != Some(b'{') {
                    return Err(text(StatusCode::BAD_REQUEST, "Invalid JSON-RPC message"));
                }
                Err(self.answer_invalid(&parts.headers, id, error).await)
            }
        }
    }

    /// Answers a POSTed object that is not a JSON-RPC message on its connection's stream.
    async fn answer_invalid(
        &self,
        headers: &HeaderMap,
        id: Id,
        error: Error,
    ) -> http::Response<Body> {
        let Some(connection) = header_of(headers, wire::CONNECTION_ID) else {
            return text(StatusCode::BAD_REQUEST, "Missing Acp-Connection-Id");
        };
        let Some(conn) = self.config.registry.get(connection) else {
            return text(StatusCode::NOT_FOUND, "Unknown Acp-Connection-Id");
        };
        conn.answer_for_agent(Message::Response(Response::error(id, &error)));
        empty(StatusCode::ACCEPTED)
    }

    /// A new connection: its agent started, `initialize` written to it, its first message the
    /// answer.
    async fn initialize(&self, message: Message) -> http::Response<Body> {
        let Message::Request(request) = &message else {
            return text(StatusCode::BAD_REQUEST, "Invalid JSON-RPC message");
        };
        let id = request.id.clone();
        let failed = |why: &str| {
            let error = Error::internal_error("Initialize failed").with_data(why);
            json(
                StatusCode::INTERNAL_SERVER_ERROR,
                wire::encode(&Message::Response(Response::error(id.clone(), &error))),
            )
        };
        if !self.admit_connection() {
            return text(StatusCode::SERVICE_UNAVAILABLE, "Too many connections");
        }
        let connection_id = uuid::Uuid::new_v4().to_string();
        let (ours, theirs) = channel();
        let (mut from_agent, to_agent) = ours.split();
        let conn = Conn::new(connection_id.clone(), self.config.limits, to_agent);
        self.config.registry.insert(conn.clone());
        let accepted = Accepted {
            transport: Either::Right(theirs),
            connection_id: connection_id.clone(),
            profile: Profile::Http,
            peer: self.peer,
        };
        self.tasks.spawn((self.accept)(accepted));
        if !conn.to_agent(message).await {
            self.config.registry.remove(&connection_id).await;
            return failed("the agent ended before it read initialize");
        }
        // The agent's first message must be the answer.
        let first = tokio::select! {
            read = from_agent.read() => read,
            () = tokio::time::sleep(self.config.limits.idle) => Ok(None),
        };
        let answer = match first {
            Ok(Some(Inbound::Message(Message::Response(answer)))) if answer.id == id => answer,
            Ok(Some(_)) => {
                self.config.registry.remove(&connection_id).await;
                return failed("the agent's first message was not the answer to initialize");
            }
            Ok(None) | Err(_) => {
                self.config.registry.remove(&connection_id).await;
                return failed("the agent ended, or did not answer, before answering initialize");
            }
        };
        tokio::spawn(http_server::pump(conn, from_agent));
        let mut response = json(StatusCode::OK, wire::encode(&Message::Response(answer)));
        if let Ok(value) = HeaderValue::from_str(&connection_id) {
            response.headers_mut().insert(wire::CONNECTION_ID, value);
        }
        response
    }

    fn get(&self, headers: &HeaderMap, version: http::Version) -> http::Response<Body> {
        let accepts = header_of(headers, "accept")
            .is_some_and(|a| a.to_ascii_lowercase().contains(wire::EVENT_STREAM));
        if !accepts {
            return text(StatusCode::NOT_ACCEPTABLE, "Not Acceptable");
        }
        let Some(connection) = header_of(headers, wire::CONNECTION_ID) else {
            return text(StatusCode::BAD_REQUEST, "Missing Acp-Connection-Id");
        };
        let Some(conn) = self.config.registry.get(connection) else {
            return text(StatusCode::NOT_FOUND, "Unknown Acp-Connection-Id");
        };
        let session = header_of(headers, wire::SESSION_ID).map(str::to_owned);
        if session.as_deref().is_some_and(wire::too_long) {
            return text(
                StatusCode::BAD_REQUEST,
                "Session ID exceeds maxIdLength (1024)",
            );
        }
        let after = match header_of(headers, wire::LAST_EVENT_ID) {
            None => None,
            Some(id) => match id.trim().parse::<u64>() {
                Ok(id) => Some(id),
                Err(_) => return text(StatusCode::BAD_REQUEST, "Last-Event-ID is not ours"),
            },
        };
        let receiver = match conn.acquire(session, after) {
            Ok(receiver) => receiver,
            Err(http_server::Acquire::Held) => {
                return text(
                    StatusCode::CONFLICT,
                    "Outbound stream already has an active receiver",
                );
            }
            Err(http_server::Acquire::Gone) => {
                return text(
                    StatusCode::GONE,
                    "The stream no longer has every event after Last-Event-ID",
                );
            }
        };
        let events = futures_util::stream::unfold(receiver, |mut receiver| async move {
            let event = receiver.next().await?;
            Some((Ok::<_, Infallible>(Frame::data(event)), receiver))
        });
        let mut response = http::Response::new(UnsyncBoxBody::new(StreamBody::new(events)));
        let out = response.headers_mut();
        out.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(wire::EVENT_STREAM),
        );
        out.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        if version < http::Version::HTTP_2 {
            out.insert(header::CONNECTION, HeaderValue::from_static("keep-alive"));
        }
        response
    }

    async fn delete(&self, headers: &HeaderMap) -> http::Response<Body> {
        let Some(connection) = header_of(headers, wire::CONNECTION_ID) else {
            return text(StatusCode::BAD_REQUEST, "Missing Acp-Connection-Id");
        };
        if self.config.registry.remove(connection).await {
            empty(StatusCode::ACCEPTED)
        } else {
            text(StatusCode::NOT_FOUND, "Unknown Acp-Connection-Id")
        }
    }
}

/// Whether `host` (a `Host` header: a name, and maybe a port) names this machine's loopback.
fn is_loopback_host(host: &str) -> bool {
    let name = if let Some(rest) = host.strip_prefix('[') {
        rest.split(']').next().unwrap_or_default()
    } else {
        host.rsplit_once(':').map_or(host, |(name, _)| name)
    };
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Compares two secrets in time that depends only on their lengths.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    use subtle::ConstantTimeEq;
    a.len() == b.len() && bool::from(a.ct_eq(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts_are_told_apart() {
        for host in [
            "localhost:8080",
            "127.0.0.1:1",
            "[::1]:9",
            "LOCALHOST",
            "127.0.0.2",
        ] {
            assert!(is_loopback_host(host), "{host}");
        }
        for host in ["evil.example:8080", "10.0.0.1", "[2001:db8::1]:1", ""] {
            assert!(!is_loopback_host(host), "{host}");
        }
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
    }

    #[test]
    fn a_browsers_token_rides_in_a_subprotocol_and_its_page_is_its_own_origin() {
        let mut headers = HeaderMap::new();
        // "s3cret/+" in base64url, without padding.
        headers.insert(
            header::SEC_WEBSOCKET_PROTOCOL,
            HeaderValue::from_static("acp, sacp.bearer.czNjcmV0Lys"),
        );
        assert_eq!(
            subprotocol_token(&headers).as_deref(),
            Some(&b"s3cret/+"[..])
        );
        assert!(subprotocols(&headers).any(|p| p == ACP_SUBPROTOCOL));
        headers.insert(
            header::SEC_WEBSOCKET_PROTOCOL,
            HeaderValue::from_static("sacp.bearer.!!"),
        );
        assert_eq!(subprotocol_token(&headers), None);
        assert!(same_origin(
            "http://127.0.0.1:8080",
            "127.0.0.1:8080",
            false
        ));
        assert!(!same_origin(
            "https://127.0.0.1:8080",
            "127.0.0.1:8080",
            false
        ));
        assert!(!same_origin("http://evil.example", "127.0.0.1:8080", false));
        assert!(same_origin("https://h.example:1", "h.example:1", true));
    }
}
