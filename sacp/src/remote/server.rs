//! Serving ACP on a network listener: both profiles on one endpoint (see [`crate::remote`]), one
//! [`Accepted`] transport per ACP connection.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderValue};
use http::{Method, Request, StatusCode};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, Limited, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::{Role, WebSocketConfig};
use tokio_util::sync::CancellationToken;

use super::http_server::{self, Conn, Registry, Route};
use super::ws::{self, WebSocket};
use super::{DEFAULT_STALL, tls, wire};
use crate::jsonrpc::message::Parsed;
use crate::jsonrpc::transport::{Channel, Transport};
use crate::jsonrpc::{Either, Error, Id, Message, Response, channel};

mod service;

use self::service::Service;

type Body = UnsyncBoxBody<Bytes, Infallible>;

/// The bytes of sent events each SSE stream keeps by default, for a receiver that resumes.
const DEFAULT_RESUME: usize = 4 * 1024 * 1024;

/// The largest POST body taken by default (the TypeScript SDK's Node adapter's).
const DEFAULT_MAX_BODY: usize = 16 * 1024 * 1024;

/// How an ACP server listens: its token, TLS, who may reach it, its limits. Made by
/// [`Server::builder`], ended by [`ServerBuilder::bind`].
///
/// The defaults are safe ones: a bearer token is always required (one is made up when none is
/// given: [`Server::token`]); on a loopback address only requests whose `Host` is a loopback
/// name are served (no DNS rebinding); a request with an `Origin` — a web page — is refused
/// unless that origin is allowed; bodies over 16 MiB are refused (`413`), WebSocket messages
/// over 16 MiB close the socket (`1008`); each connection queues at most 8 MiB for its client
/// and is closed when the client takes nothing for 60 s; an HTTP connection nobody reads or
/// posts to for 5 minutes is closed; at most 256 ACP connections at once.
#[derive(Debug)]
pub struct ServerBuilder {
    path: String,
    token: Option<String>,
    origins: Vec<String>,
    hosts: Vec<String>,
    tls: Option<Arc<rustls::ServerConfig>>,
    max_connections: usize,
    max_body: usize,
    max_message: usize,
    limits: http_server::Limits,
    pages: Vec<(String, Bytes)>,
}

/// A network listener serving ACP on one endpoint (`/acp` unless [`ServerBuilder::path`] says
/// otherwise), both profiles: Streamable HTTP (`POST`, `GET` streams, `DELETE`) and WebSocket
/// (an upgrade on the same path).
///
/// Every accepted ACP connection is handed to the function given to [`Server::serve`] as an
/// [`Accepted`] transport, in a task of its own: the function makes what serves the
/// connection — typically a new agent each time, so that every connection has its own state:
///
/// ```no_run
/// # #[derive(Default)] struct MyAgent;
/// # #[sacp::agent] impl MyAgent {}
/// # async fn run() -> std::io::Result<()> {
/// use sacp::remote::Server;
///
/// let server = Server::builder().token("s3cret").bind("127.0.0.1:8080").await?;
/// eprintln!("serving at {}", server.url());
/// server
///     .serve(|connection| async move {
///         let _ = sacp::agent::serve(MyAgent::default(), connection).await;
///     })
///     .await
/// # }
/// ```
///
/// State shared by every connection goes in the closure (an `Arc`), as in any server.
#[derive(Debug)]
pub struct Server {
    listener: TcpListener,
    local: SocketAddr,
    config: Arc<Config>,
}

#[derive(Debug)]
struct Config {
    path: String,
    token: String,
    origins: Vec<String>,
    hosts: Vec<String>,
    loopback: bool,
    tls: Option<Arc<rustls::ServerConfig>>,
    max_connections: usize,
    max_body: usize,
    max_message: usize,
    limits: http_server::Limits,
    /// Static pages served at their paths (see [`ServerBuilder::page`]).
    pages: Vec<(String, Bytes)>,
    registry: Registry,
    /// Cancelled when the server shuts down.
    shutdown: CancellationToken,
}

/// Which profile a connection uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Profile {
    /// Streamable HTTP: POSTs, SSE streams, DELETE.
    Http,
    /// WebSocket: one socket.
    WebSocket,
}

impl Server {
    /// Starts describing a server.
    pub fn builder() -> ServerBuilder {
        ServerBuilder {
            path: "/acp".to_owned(),
            token: None,
            origins: Vec::new(),
            hosts: Vec::new(),
            tls: None,
            max_connections: 256,
            max_body: DEFAULT_MAX_BODY,
            max_message: DEFAULT_MAX_BODY,
            limits: http_server::Limits {
                max_buffered: 8 * 1024 * 1024,
                max_session_streams: 1024,
                stall: DEFAULT_STALL,
                idle: Duration::from_secs(300),
                keep_alive: Duration::from_secs(15),
                resume: DEFAULT_RESUME,
            },
            pages: Vec::new(),
        }
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// Its URL: `http(s)://ADDR/acp` (use `ws(s)://` for the WebSocket profile).
    pub fn url(&self) -> String {
        let scheme = if self.config.tls.is_some() {
            "https"
        } else {
            "http"
        };
        format!("{scheme}://{}{}", self.local, self.config.path)
    }

    /// The bearer token every request must carry (`Authorization: Bearer …`).
    pub fn token(&self) -> &str {
        &self.config.token
    }

    /// A handle that shuts the server down ([`Shutdown::shutdown`]).
    pub fn shutdown_handle(&self) -> Shutdown {
        Shutdown(self.config.shutdown.clone())
    }

    /// Serves until [`Shutdown::shutdown`]: each ACP connection is handed to `accept` in a
    /// task of its own. At the shutdown it stops listening, ends every connection (WebSocket
    /// close `1001`; HTTP streams end), gives the tasks up to five seconds to finish, and
    /// returns.
    pub async fn serve<F, Fut>(self, accept: F) -> std::io::Result<()>
    where
        F: Fn(Accepted) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let accept: Arc<
            dyn Fn(Accepted) -> futures_util::future::BoxFuture<'static, ()> + Send + Sync,
        > = Arc::new(move |a| Box::pin(accept(a)));
        let config = self.config.clone();
        let tasks = tokio_util::task::TaskTracker::new();
        let sweeper = {
            let config = config.clone();
            tokio::spawn(async move {
                loop {
                    tokio::select! {
                        () = tokio::time::sleep(Duration::from_secs(1)) => config.registry.sweep().await,
                        () = config.shutdown.cancelled() => return,
                    }
                }
            })
        };
        let tls = config.tls.clone().map(tokio_rustls::TlsAcceptor::from);
        loop {
            let (tcp, peer) = tokio::select! {
                accepted = self.listener.accept() => match accepted {
                    Ok(accepted) => accepted,
                    Err(e) => {
                        tracing::warn!("accept failed: {e}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                },
                () = config.shutdown.cancelled() => break,
            };
            let _ = tcp.set_nodelay(true);
            let service = Service {
                config: config.clone(),
                accept: accept.clone(),
                tasks: tasks.clone(),
                peer,
            };
            let tls = tls.clone();
            let shutdown = config.shutdown.clone();
            tasks.spawn(async move {
                let served = match tls {
                    Some(tls) => {
                        match tokio::time::timeout(Duration::from_secs(10), tls.accept(tcp)).await {
                            Ok(Ok(stream)) => {
                                serve_connection(TokioIo::new(stream), service, shutdown).await
                            }
                            Ok(Err(e)) => {
                                tracing::debug!(%peer, "TLS handshake failed: {e}");
                                return;
                            }
                            Err(_) => return,
                        }
                    }
                    None => serve_connection(TokioIo::new(tcp), service, shutdown).await,
                };
                if let Err(e) = served {
                    tracing::debug!(%peer, "HTTP connection ended: {e}");
                }
            });
        }
        sweeper.abort();
        config.registry.close_all().await;
        tasks.close();
        let _ = tokio::time::timeout(Duration::from_secs(5), tasks.wait()).await;
        Ok(())
    }
}

/// Shuts a [`Server`] down (see [`Server::serve`]).
#[derive(Debug, Clone)]
pub struct Shutdown(CancellationToken);

impl Shutdown {
    /// Stops the server.
    pub fn shutdown(&self) {
        self.0.cancel();
    }
}

async fn serve_connection<I>(
    io: TokioIo<I>,
    service: Service,
    shutdown: CancellationToken,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>>
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
    let connection = builder.serve_connection_with_upgrades(
        io,
        hyper::service::service_fn(move |req| {
            let service = service.clone();
            async move { Ok::<_, Infallible>(service.handle(req).await) }
        }),
    );
    tokio::pin!(connection);
    tokio::select! {
        served = connection.as_mut() => served,
        () = shutdown.cancelled() => {
            connection.as_mut().graceful_shutdown();
            let _ = tokio::time::timeout(Duration::from_secs(5), connection).await;
            Ok(())
        }
    }
}

impl ServerBuilder {
    /// The endpoint's path (default `/acp`); requests to any other path get `404`.
    pub fn path(mut self, path: impl Into<String>) -> ServerBuilder {
        self.path = path.into();
        self
    }

    /// The bearer token clients must send (`Authorization: Bearer TOKEN`, compared in constant
    /// time). Without one, a random token is made ([`Server::token`]).
    pub fn token(mut self, token: impl Into<String>) -> ServerBuilder {
        self.token = Some(token.into());
        self
    }

    /// Allows requests from web pages of `origin` (`https://app.example`): without it, any
    /// request with an `Origin` header is refused (`403`).
    pub fn allow_origin(mut self, origin: impl Into<String>) -> ServerBuilder {
        self.origins.push(origin.into());
        self
    }

    /// Allows the `Host` `host` (`devbox.example:8443`). On a loopback address, loopback names
    /// are always allowed and others only when listed; elsewhere every `Host` is, unless some
    /// are listed.
    pub fn allow_host(mut self, host: impl Into<String>) -> ServerBuilder {
        self.hosts.push(host.into());
        self
    }

    /// Serves over TLS (`https://`, `wss://`) with the certificate chain and private key of
    /// two PEM files.
    pub fn tls_pem(
        mut self,
        cert: impl AsRef<Path>,
        key: impl AsRef<Path>,
    ) -> std::io::Result<ServerBuilder> {
        self.tls = Some(tls::server(cert.as_ref(), key.as_ref())?);
        Ok(self)
    }

    /// The most ACP connections at once (default 256); more are refused with `503`.
    pub fn max_connections(mut self, n: usize) -> ServerBuilder {
        self.max_connections = n;
        self
    }

    /// The largest POST body, and WebSocket message, taken (default 16 MiB).
    pub fn max_message(mut self, bytes: usize) -> ServerBuilder {
        self.max_body = bytes;
        self.max_message = bytes;
        self
    }

    /// How much a connection may queue for a client that reads slowly (default 8 MiB): past
    /// it, the agent waits.
    pub fn max_buffered(mut self, bytes: usize) -> ServerBuilder {
        self.limits.max_buffered = bytes;
        self
    }

    /// How long a client may take nothing while output waits for it (default 60 s) before its
    /// connection is closed.
    pub fn stall_timeout(mut self, timeout: Duration) -> ServerBuilder {
        self.limits.stall = timeout;
        self
    }

    /// How long an HTTP connection may see no request and no reader (default 5 minutes) before
    /// it is closed.
    pub fn idle_timeout(mut self, timeout: Duration) -> ServerBuilder {
        self.limits.idle = timeout;
        self
    }

    /// Serves `html` at `path` (`GET`, no token: a page holds nothing but itself), for a web
    /// page that is a client of this server: its requests to the ACP endpoint from the
    /// server's own origin are then allowed (an `Origin` naming the `Host` it was sent to),
    /// and since a browser's WebSocket cannot send an `Authorization` header, it may carry
    /// the token in a subprotocol instead: `sacp.bearer.` and the token in base64url without
    /// padding, beside `acp` (which the server then selects). The page is sent with a strict
    /// Content Security Policy (inline scripts and styles, connections to its own origin, no
    /// other source), `no-referrer` and `no-store`.
    pub fn page(mut self, path: impl Into<String>, html: impl Into<Bytes>) -> ServerBuilder {
        self.pages.push((path.into(), html.into()));
        self
    }

    /// How often an idle SSE stream gets a keep-alive comment (default 15 s).
    pub fn keep_alive(mut self, every: Duration) -> ServerBuilder {
        self.limits.keep_alive = every;
        self
    }

    /// Listens on `addr`.
    pub async fn bind(self, addr: impl tokio::net::ToSocketAddrs) -> std::io::Result<Server> {
        let listener = TcpListener::bind(addr).await?;
        let local = listener.local_addr()?;
        let token = self.token.unwrap_or_else(|| {
            format!(
                "{}{}",
                uuid::Uuid::new_v4().simple(),
                uuid::Uuid::new_v4().simple()
            )
        });
        Ok(Server {
            listener,
            local,
            config: Arc::new(Config {
                path: self.path,
                token,
                origins: self.origins,
                hosts: self.hosts,
                loopback: local.ip().is_loopback(),
                tls: self.tls,
                max_connections: self.max_connections,
                max_body: self.max_body,
                max_message: self.max_message,
                limits: self.limits,
                pages: self.pages,
                registry: Registry::default(),
                shutdown: CancellationToken::new(),
            }),
        })
    }
}

/// One accepted ACP connection: a transport to its client, and what is known of it.
#[derive(Debug)]
pub struct Accepted {
    transport: Served,
    connection_id: String,
    profile: Profile,
    peer: SocketAddr,
}

/// A WebSocket, or a Streamable HTTP connection's channel.
type Served = Either<Box<WebSocket<TokioIo<hyper::upgrade::Upgraded>>>, Channel>;

impl Accepted {
    /// The connection's id (`Acp-Connection-Id`).
    pub fn connection_id(&self) -> &str {
        &self.connection_id
    }

    /// The profile it uses.
    pub fn profile(&self) -> Profile {
        self.profile
    }

    /// The client's address.
    pub fn peer(&self) -> SocketAddr {
        self.peer
    }
}

impl Transport for Accepted {
    type Reader = AcceptedReader;
    type Writer = AcceptedWriter;

    fn split(self) -> (AcceptedReader, AcceptedWriter) {
        self.transport.split()
    }
}

/// The reading half of an [`Accepted`] connection.
pub type AcceptedReader = <Served as Transport>::Reader;

/// The writing half of an [`Accepted`] connection.
pub type AcceptedWriter = <Served as Transport>::Writer;
