//! `conductor agent --listen ADDR`: the chain served over the network (ACP's remote transport,
//! [`sacp::remote`], both profiles at `http(s)://ADDR/acp`) instead of on stdin/stdout.
//!
//! Every ACP connection is a client of the session layer (`crate::sessions`): its
//! `initialize` starts a chain of its own, with its own component processes, exactly as if an
//! editor had started the conductor ([`crate::run`], with the layer as the chain's editor), and
//! its sessions live there. A connection that closes or drops detaches from its sessions; they
//! go on, and any later connection takes one back with `session/load`. A chain ends as on
//! stdin's end (the EOF grace, `SIGTERM`, nothing left behind) once it has no session and its
//! connection is gone; a session with no connection ends after the detached timeout. A
//! `SIGTERM` or `SIGINT` ends every chain and then the conductor.
//!
//! `--trace FILE` records each chain in a file of its own, `FILE` with the id of the
//! connection that started it before its extension (`trace.jsonl` → `trace.<id>.jsonl`), the
//! id also in the file's first line; `--serve` serves each chain's viewer on a free port of its
//! address's host, its URL on stderr with the connection's id; and the listener serves the
//! sessions page at `/` (its URL, with the token in the fragment, on stderr).

use std::path::{Path, PathBuf};

use sacp::remote::Server;
use tokio::signal::unix::{SignalKind, signal};

use crate::chain::Chain;
use crate::conductor::{Exit, Options, run};
use crate::sessions::{Layer, Limits, Notes, Port, Started, Starter};

/// How the chain is served over the network (`conductor agent --listen`):
///
/// ```no_run
/// # async fn run(chain: sacp_conductor::Chain) {
/// use sacp_conductor::{Listen, Options};
///
/// let listen = Listen::new("0.0.0.0:9000")
///     .token_file("/etc/sacp/token")
///     .tls("/etc/sacp/cert.pem", "/etc/sacp/key.pem");
/// let exit = sacp_conductor::serve_listen(chain, Options::default(), listen).await;
/// # drop(exit); }
/// ```
#[derive(Debug, Clone)]
pub struct Listen {
    addr: String,
    token_file: Option<PathBuf>,
    tls: Option<(PathBuf, PathBuf)>,
    max_connections: Option<usize>,
    http_idle_timeout: Option<std::time::Duration>,
    sessions: Limits,
    stdio_editor: bool,
    journal: Option<String>,
    journal_retention: std::time::Duration,
    instance: Option<String>,
}

impl Listen {
    /// On `HOST:PORT` (port 0: any free port), with a random token printed on stderr, no TLS,
    /// and the server's default bound on connections (256).
    pub fn new(addr: impl Into<String>) -> Listen {
        Listen {
            addr: addr.into(),
            token_file: None,
            tls: None,
            max_connections: None,
            http_idle_timeout: None,
            sessions: Limits::default(),
            stdio_editor: false,
            journal: None,
            journal_retention: JOURNAL_RETENTION,
            instance: None,
        }
    }

    /// How long a Streamable HTTP connection may go without a request or a reader before it
    /// is closed (default 5 minutes): when a client that vanished counts as gone, and its
    /// sessions as detached.
    pub fn http_idle_timeout(mut self, timeout: std::time::Duration) -> Listen {
        self.http_idle_timeout = Some(timeout);
        self
    }

    /// The session layer's bounds and deadlines: how long a session without a connection
    /// lives on, how much it keeps for its clients.
    pub fn sessions(mut self, limits: Limits) -> Listen {
        self.sessions = limits;
        self
    }

    /// The bearer token clients must send is this file's content (trimmed).
    pub fn token_file(mut self, path: impl Into<PathBuf>) -> Listen {
        self.token_file = Some(path.into());
        self
    }

    /// `https`/`wss` with this PEM certificate chain and private key.
    pub fn tls(mut self, cert: impl Into<PathBuf>, key: impl Into<PathBuf>) -> Listen {
        self.tls = Some((cert.into(), key.into()));
        self
    }

    /// Shares the sessions of the editor on stdin/stdout (`conductor agent --share`): that
    /// editor is a client of the session layer like the network's, and network clients attach
    /// to its sessions with `session/attach`. Stdout is the editor's: the URL goes to stderr
    /// only. The conductor ends when stdin ends, as without sharing.
    pub fn stdio_editor(mut self) -> Listen {
        self.stdio_editor = true;
        self
    }

    /// Keeps a journal of every session — in the SQLite file at `spec` (created `0600` if
    /// need be), or in the PostgreSQL database a `postgres://` URL names (the schema created by
    /// the conductor) — so that a conductor started on it restores a session a client loads.
    /// Without it, no journal is kept (the `conductor` command keeps one by default, under
    /// the user's state directory).
    pub fn journal(mut self, spec: impl Into<String>) -> Listen {
        self.journal = Some(spec.into());
        self
    }

    /// How long the journal keeps a session nothing was written of (default 30 days): then it
    /// is deleted, and can no longer be restored.
    pub fn journal_retention(mut self, retention: std::time::Duration) -> Listen {
        self.journal_retention = retention;
        self
    }

    /// This conductor's name among those sharing its journal (default: the host's name and
    /// the port it listens on): what a client that asks another of them for a session this one
    /// holds is told, in the `-32002` error's `data.heldBy` — so give the name a load balancer
    /// routes by (an affinity cookie's value, say).
    pub fn instance(mut self, name: impl Into<String>) -> Listen {
        self.instance = Some(name.into());
        self
    }

    /// At most `n` ACP connections (so chains) at once.
    pub fn max_connections(mut self, n: usize) -> Listen {
        self.max_connections = Some(n);
        self
    }
}

/// The journal `listen` asks for, if any, opened as this conductor (its `--instance` name, or
/// the host's name and the `port` it listens on).
async fn open_journal(
    listen: &Listen,
    port: u16,
) -> Result<Option<crate::journal::Journal>, String> {
    let Some(spec) = &listen.journal else {
        return Ok(None);
    };
    let instance = listen
        .instance
        .clone()
        .unwrap_or_else(|| format!("{}:{port}", host_name()));
    crate::journal::Journal::open(spec, listen.journal_retention, &instance)
        .await
        .map(Some)
        .map_err(|e| e.to_string())
}

/// This machine's name, as the system gives it (`localhost` when it gives none).
fn host_name() -> String {
    nix::unistd::gethostname()
        .ok()
        .and_then(|name| name.into_string().ok())
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "localhost".to_owned())
}

/// How long a journal keeps a session nothing was written of, unless told otherwise.
const JOURNAL_RETENTION: std::time::Duration = std::time::Duration::from_secs(30 * 24 * 3600);

/// Serves `chain` as described until `SIGTERM` or `SIGINT`. Writes the endpoint's URL as the
/// first line of stdout (and, with a token it made up, the token on stderr).
pub async fn serve(chain: Chain, options: Options, listen: Listen) -> Exit {
    match start(chain, options, listen).await {
        Ok(()) => Exit::Clean,
        Err(why) => {
            tracing::error!("{why}");
            Exit::Failed(crate::conductor::Failure::Serve(why))
        }
    }
}

async fn start(mut chain: Chain, options: Options, listen: Listen) -> Result<(), String> {
    // Once, not for every connection's chain.
    crate::registry::resolve_chain(&mut chain)
        .await
        .map_err(|e| e.to_string())?;
    let page = options.serve.is_some();
    let builder = server_builder(&listen, page)?;
    let server = builder
        .bind(listen.addr.as_str())
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", listen.addr))?;
    let url = server.url();
    let journal = open_journal(&listen, server.local_addr().port()).await?;
    if !listen.stdio_editor {
        use std::io::Write as _;
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{url}");
        let _ = out.flush();
    }
    let token = if listen.token_file.is_none() {
        format!(" with the bearer token {}", server.token())
    } else {
        String::new()
    };
    crate::stderr::write_line(
        format!(
            "[conductor] serving the chain at {url} (WebSocket: {}){token}\n",
            websocket_url(&url)
        )
        .into_bytes(),
    );
    if page {
        // The token goes in the fragment, which a browser never sends to a server.
        let local = server.local_addr();
        let scheme = if listen.tls.is_some() {
            "https"
        } else {
            "http"
        };
        crate::stderr::write_line(
            format!(
                "[conductor] the sessions page: {scheme}://{local}/#token={}\n",
                server.token()
            )
            .into_bytes(),
        );
    }
    let shutdown = server.shutdown_handle();
    let mut terms = signal(SignalKind::terminate()).map_err(|e| e.to_string())?;
    let mut interrupts = signal(SignalKind::interrupt()).map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        tokio::select! {
            _ = terms.recv() => {}
            _ = interrupts.recv() => {}
        }
        shutdown.shutdown();
    });
    let layer = Layer::new(listen.sessions, journal.clone(), Chains { chain, options });
    if listen.stdio_editor {
        // The editor that started the conductor: its leaving ends it.
        let (layer, shutdown) = (layer.clone(), server.shutdown_handle());
        tokio::spawn(async move {
            layer
                .serve(STDIO.to_owned(), sacp::jsonrpc::ByteStream::stdio())
                .await;
            tracing::info!("the editor on stdin left: ending");
            shutdown.shutdown();
        });
    }
    let served = layer.clone();
    let result = server
        .serve(move |connection| {
            let layer = served.clone();
            async move {
                let id = connection.connection_id().to_owned();
                tracing::info!(connection = %id, peer = %connection.peer(), profile = ?connection.profile(), "an editor connected");
                layer.serve(id.clone(), connection).await;
                tracing::info!(connection = %id, "the editor's connection ended");
            }
        })
        .await
        .map_err(|e| format!("the server on {url} failed: {e}"));
    // The connections are gone; the chains end as when their editors leave.
    layer.finish(std::time::Duration::from_secs(10)).await;
    // What the chains' ends wrote (their sessions released) reaches the store before the
    // conductor goes.
    if let Some(journal) = journal {
        let synced = tokio::time::timeout(std::time::Duration::from_secs(5), journal.sync());
        if synced.await.is_err() {
            tracing::warn!(
                "the journal was still writing after 5 s: what it had not written is lost"
            );
        }
    }
    result
}

/// The listener `listen` describes, serving the sessions page when `page`.
fn server_builder(listen: &Listen, page: bool) -> Result<sacp::remote::ServerBuilder, String> {
    let mut builder = Server::builder();
    if let Some(file) = &listen.token_file {
        let token = std::fs::read_to_string(file)
            .map_err(|e| format!("cannot read the token file {}: {e}", file.display()))?;
        let token = token.trim();
        if token.is_empty() {
            return Err(format!("the token file {} is empty", file.display()));
        }
        builder = builder.token(token);
    }
    if let Some((cert, key)) = &listen.tls {
        builder = builder
            .tls_pem(cert, key)
            .map_err(|e| format!("cannot use the TLS certificate and key: {e}"))?;
    }
    if let Some(n) = listen.max_connections {
        builder = builder.max_connections(n);
    }
    if let Some(timeout) = listen.http_idle_timeout {
        builder = builder.idle_timeout(timeout);
    }
    if page {
        builder = builder.page("/", SESSIONS_PAGE);
    }
    Ok(builder)
}

/// Starts a chain for a connection: the served chain, traced to a file of its own.
struct Chains {
    chain: Chain,
    options: Options,
}

impl Starter for Chains {
    fn start(&self, client: &str, editor: Port) -> Started {
        let mut options = self.options.clone();
        // Who attaches to the chain's sessions, for its trace (there is one).
        let notes = (options.trace.is_some() || options.serve.is_some()).then(|| {
            let (notes, heard) = Notes::channel(NOTES);
            options.notes = Some(heard);
            notes
        });
        // The stdio editor's chain is traced where the editor said.
        if client != STDIO {
            options.trace = options
                .trace
                .as_deref()
                .map(|path| per_connection(path, client));
        }
        options.serve = options
            .serve
            .map(|addr| std::net::SocketAddr::new(addr.ip(), 0));
        options.connection = Some(client.to_owned());
        let (chain, id) = (self.chain.clone(), client.to_owned());
        let life = Box::pin(async move {
            match run(chain, options, editor).await {
                Exit::Clean | Exit::Signalled(_) => {
                    tracing::info!(connection = %id, "the chain ended");
                }
                Exit::Ended { why, .. } => {
                    tracing::warn!(connection = %id, "the chain failed: {why}");
                }
                Exit::Failed(why) => {
                    tracing::warn!(connection = %id, "the chain failed: {why}");
                }
            }
        });
        Started { life, notes }
    }
}

/// The page that lists the sessions a token may see and attaches to one (`--serve` under
/// `--listen` or `--share`, at `/`): see `conductor/docs/conductor.md`, "Watching a session
/// from a browser".
const SESSIONS_PAGE: &str = include_str!("sessions/page.html");

/// The name of the editor on stdin/stdout among the layer's clients (`--share`).
const STDIO: &str = "stdio";

/// How many notes of attachments may wait for a chain's loop.
const NOTES: usize = 256;

/// `trace.jsonl` → `trace.<id>.jsonl`; `trace` → `trace.<id>`.
fn per_connection(path: &Path, id: &str) -> PathBuf {
    let stem = path.file_stem().unwrap_or_default().to_string_lossy();
    let name = match path.extension() {
        Some(extension) => format!("{stem}.{id}.{}", extension.to_string_lossy()),
        None => format!("{stem}.{id}"),
    };
    path.with_file_name(name)
}

/// The WebSocket profile's URL for an HTTP one.
fn websocket_url(url: &str) -> String {
    match url.split_once("://") {
        Some(("https", rest)) => format!("wss://{rest}"),
        Some((_, rest)) => format!("ws://{rest}"),
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_connection_traces_to_a_file_of_its_own() {
        assert_eq!(
            per_connection(Path::new("/tmp/trace.jsonl"), "abc"),
            Path::new("/tmp/trace.abc.jsonl")
        );
        assert_eq!(per_connection(Path::new("t"), "abc"), Path::new("t.abc"));
        assert_eq!(websocket_url("https://h:1/acp"), "wss://h:1/acp");
        assert_eq!(websocket_url("http://h:1/acp"), "ws://h:1/acp");
    }
}
