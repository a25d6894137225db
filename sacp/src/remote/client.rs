//! Reaching an ACP server: [`Remote`], a transport from a URL.

use std::path::PathBuf;
use std::time::Duration;

use http::header::{HeaderMap, HeaderName, HeaderValue};
use tokio::net::TcpStream;
use tokio_tungstenite::MaybeTlsStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

use super::cookies::CookieJar;
use super::http_client::HttpClient;
use super::rejoin::Rejoining;
use super::ws::{self, WebSocket};
use super::{DEFAULT_MAX_MESSAGE, DEFAULT_STALL, tls};
use crate::jsonrpc::Either;
use crate::jsonrpc::transport::Transport;

/// An ACP server's address, and how to reach it: a transport from a URL, usable wherever a
/// transport is (an editor's connection, a component of a chain).
///
/// - `ws://…` and `wss://…`: the WebSocket profile (connected by [`Remote::connect`]);
/// - `http://…` and `https://…`: the Streamable HTTP profile (the first message sent must be
///   `initialize`, which opens the connection).
///
/// The URL is used as given, path and all (servers conventionally serve
/// `/acp`). TLS trusts the system's root certificates and the CA files added with
/// [`Remote::ca_file`]. Headers given with [`Remote::header`] (authentication, say) go on
/// every request and on the WebSocket upgrade; cookies the server sets go back on every later
/// request of the connection.
///
/// ```no_run
/// # async fn run() -> std::io::Result<()> {
/// use sacp::remote::Remote;
///
/// let transport = Remote::new("wss://devbox.example:8443/acp")
///     .header("Authorization", "Bearer s3cret")?
///     .ca_file("/etc/devbox/ca.pem")
///     .connect()
///     .await?;
/// let agent = sacp::jsonrpc::Connection::builder()
///     .name("agent")
///     .spawn(transport, sacp::jsonrpc::Methods::new());
/// # drop(agent); Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Remote {
    url: String,
    headers: HeaderMap,
    ca_files: Vec<PathBuf>,
    jar: Option<CookieJar>,
    max_message: usize,
    stall: Duration,
    rejoin: bool,
}

impl Remote {
    /// The server at `url` (`http`, `https`, `ws` or `wss`).
    pub fn new(url: impl Into<String>) -> Remote {
        Remote {
            url: url.into(),
            headers: HeaderMap::new(),
            ca_files: Vec::new(),
            jar: None,
            max_message: DEFAULT_MAX_MESSAGE,
            stall: DEFAULT_STALL,
            rejoin: false,
        }
    }

    /// A header for every request (and the WebSocket upgrade): `Authorization: Bearer …`, say.
    /// Fails on a name or value HTTP does not allow.
    pub fn header(mut self, name: &str, value: &str) -> std::io::Result<Remote> {
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| invalid(format!("{name:?} is not a header name")))?;
        let value = HeaderValue::from_str(value)
            .map_err(|_| invalid(format!("the value of header {name} is not allowed in HTTP")))?;
        self.headers.append(name, value);
        Ok(self)
    }

    /// Trusts the CA certificates of a PEM file too (for a server with a certificate of its own
    /// CA).
    pub fn ca_file(mut self, path: impl Into<PathBuf>) -> Remote {
        self.ca_files.push(path.into());
        self
    }

    /// Keeps cookies in `jar` (shared with its clones), so that a new connection after a lost
    /// one goes back to the same server behind a load balancer. Without it a connection has a
    /// jar of its own, emptied at its end.
    pub fn cookie_jar(mut self, jar: CookieJar) -> Remote {
        self.jar = Some(jar);
        self
    }

    /// The largest message taken from the server (default 32 MiB, the TypeScript SDK's).
    pub fn max_message(mut self, bytes: usize) -> Remote {
        self.max_message = bytes;
        self
    }

    /// Over WebSocket, connects again when the socket breaks and takes the caller's sessions
    /// back (off by default): a new socket, the caller's `initialize` again, then a
    /// `session/load` of each session it opened — for a server whose sessions outlive their
    /// connection, as `sacp`'s conductor's do under `--listen` (every socket shares one
    /// cookie jar, the one given or its own, so a load balancer's affinity holds). From
    /// `sacp`'s conductor each session replays what followed the last notification the caller
    /// got (its `initialize` asks for positions, and the load gives the last one as a
    /// cursor); from another server, its whole history, as any `session/load` does. Requests
    /// that were waiting for an answer fail with `-32603`; see [`Rejoining`](super::Rejoining).
    /// Streamable HTTP needs none of this: its broken streams resume by themselves.
    pub fn rejoin(mut self, yes: bool) -> Remote {
        self.rejoin = yes;
        self
    }

    /// The URL, as errors show it: without credentials.
    pub fn display_url(&self) -> String {
        redact(&self.url)
    }

    /// Connects: the WebSocket handshake for `ws(s)://`; for `http(s)://` nothing yet (the
    /// connection opens with the `initialize` it carries).
    pub async fn connect(self) -> std::io::Result<RemoteTransport> {
        let url: http::Uri = self
            .url
            .parse()
            .map_err(|e| invalid(format!("{} is not a URL: {e}", self.display_url())))?;
        match url.scheme_str() {
            Some("ws" | "wss") if self.rejoin => {
                // One jar for every socket of the transport: behind a load balancer, the new
                // socket goes back to the server that holds the sessions.
                let mut remote = self;
                remote.jar.get_or_insert_with(CookieJar::new);
                let (reader, writer) = Transport::split(remote.clone().connect_ws().await?);
                let rejoining = Rejoining::new(remote, reader, writer);
                Ok(Either::Left(Either::Right(Box::new(rejoining))))
            }
            Some("ws" | "wss") => self
                .connect_ws()
                .await
                .map(|ws| Either::Left(Either::Left(Box::new(ws)))),
            Some("http" | "https") => {
                // No ALPN of our own: the connector offers what it enables.
                let tls = tls::client(&self.ca_files, &[])?;
                let connector = hyper_rustls::HttpsConnectorBuilder::new()
                    .with_tls_config(rustls::ClientConfig::clone(&tls))
                    .https_or_http()
                    .enable_http1()
                    .enable_http2()
                    .build();
                let http = hyper_util::client::legacy::Client::builder(
                    hyper_util::rt::TokioExecutor::new(),
                )
                .build(connector);
                Ok(Either::Right(HttpClient::new(
                    http,
                    url,
                    self.display_url(),
                    self.headers,
                    self.jar,
                    self.max_message,
                )))
            }
            other => Err(invalid(format!(
                "{}: an ACP server's URL is http(s):// or ws(s)://, not {}://",
                self.display_url(),
                other.unwrap_or_default()
            ))),
        }
    }

    pub(super) async fn connect_ws(self) -> std::io::Result<WebSocket<MaybeTlsStream<TcpStream>>> {
        let peer = self.display_url();
        let mut request = self
            .url
            .as_str()
            .into_client_request()
            .map_err(|e| invalid(format!("{peer}: {e}")))?;
        for (name, value) in &self.headers {
            request.headers_mut().append(name, value.clone());
        }
        let jar = self.jar.clone().unwrap_or_default();
        jar.apply(request.headers_mut());
        let tls = tls::client(&self.ca_files, &[b"http/1.1"])?;
        let mut config = WebSocketConfig::default();
        // tungstenite zeroes its read buffer's spare room on every read: 128 KiB by default,
        // microseconds per message (a larger message still grows the buffer as it needs).
        config.read_buffer_size = super::WS_READ_BUFFER;
        config.max_message_size = Some(self.max_message);
        config.max_frame_size = Some(self.max_message);
        let connecting = tokio_tungstenite::connect_async_tls_with_config(
            request,
            Some(config),
            true,
            Some(tokio_tungstenite::Connector::Rustls(tls)),
        );
        let (stream, response) = connecting.await.map_err(|e| {
            std::io::Error::new(
                std::io::ErrorKind::ConnectionRefused,
                format!("cannot open a WebSocket to the ACP server at {peer}: {e}"),
            )
        })?;
        jar.store(response.headers());
        Ok(WebSocket::new(stream, ws::Side::Client, peer, self.stall))
    }
}

/// A transport to an ACP server, from [`Remote::connect`]: a WebSocket (on the left, itself
/// plain or, with [`Remote::rejoin`], one that connects again when it breaks) or Streamable
/// HTTP (on the right).
pub type RemoteTransport =
    Either<Either<Box<WebSocket<MaybeTlsStream<TcpStream>>>, Box<Rejoining>>, HttpClient>;

/// The reading half of a [`RemoteTransport`].
pub type RemoteReader = <RemoteTransport as Transport>::Reader;

/// The writing half of a [`RemoteTransport`].
pub type RemoteWriter = <RemoteTransport as Transport>::Writer;

fn invalid(what: String) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidInput, what)
}

/// `url` without the user and password it may carry, and without its query (tokens ride there
/// too).
pub(crate) fn redact(url: &str) -> String {
    let Ok(uri) = url.parse::<http::Uri>() else {
        return "(an invalid URL)".to_owned();
    };
    let host = uri.host().unwrap_or_default();
    let port = uri.port().map(|p| format!(":{p}")).unwrap_or_default();
    format!(
        "{}://{host}{port}{}",
        uri.scheme_str().unwrap_or_default(),
        uri.path()
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn urls_are_shown_without_credentials() {
        assert_eq!(
            super::redact("wss://me:secret@host:8443/acp?token=abc"),
            "wss://host:8443/acp"
        );
    }
}
