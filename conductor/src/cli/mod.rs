//! The `conductor` command line.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use crate::chain::BridgeMode;
use crate::chain::Chain;
use crate::conductor::{Options, run_stdio};
use crate::launch;
use crate::listen::Listen;

mod registry;

const EXAMPLES: &str = "\
Examples:
  conductor agent sparkle-proxy \"my-agent --acp\"
  conductor agent --chain chain.toml my-agent
  conductor agent -- sparkle-proxy --verbose -- my-agent --acp

An editor runs the conductor as its agent. In Zed's settings.json:
  \"agent_servers\": {
    \"Sparkle\": {
      \"type\": \"custom\",
      \"command\": \"conductor\",
      \"args\": [\"agent\", \"sparkle\", \"my-agent --acp\"],
      \"env\": {}
    }
  }
In JetBrains' ~/.jetbrains/acp.json, the same entry without \"type\", with the absolute path
of conductor as the command.

Logs go to stderr, filtered by RUST_LOG (default: warn); stdout carries only the protocol.";

/// Composes an ACP agent out of proxies: the editor talks to the conductor as to one agent,
/// and the conductor runs `proxy1 -> proxy2 -> ... -> agent` behind it.
#[derive(Debug, Parser)]
#[command(name = "conductor", version, after_help = EXAMPLES)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Runs a chain of components as one ACP agent on stdin/stdout: every component but the
    /// last is a proxy, the last one is the agent.
    #[command(after_help = EXAMPLES)]
    Agent(Box<AgentArgs>),
    /// The stdio MCP bridge (started by agents, as the conductor tells them in `session/new`):
    /// connects to the conductor's MCP bridge on 127.0.0.1:PORT with the secret in
    /// SACP_MCP_BRIDGE_TOKEN and copies MCP messages between it and stdin/stdout.
    Mcp {
        /// The port of the conductor's listener for this MCP server.
        port: u16,
    },
    /// Runs a session router as one ACP agent on stdin/stdout: each session runs on a backend
    /// of its workspace (by its `cwd`), started from a command template.
    #[command(after_help = ROUTE_EXAMPLES)]
    Route(RouteArgs),
    /// Reads a trace file (`conductor agent --trace FILE`).
    #[command(subcommand)]
    Trace(TraceCommand),
    /// The ACP agent registry: what a registry offers, and a chain as a registry entry. A
    /// component `registry:ID` (or `registry:ID@VERSION`) of `conductor agent` runs that agent.
    #[command(subcommand)]
    Registry(registry::RegistryCommand),
}

#[derive(Debug, Subcommand)]
enum TraceCommand {
    /// Serves the trace viewer for a finished trace; its URL, with a token, goes to stderr.
    View {
        /// The trace file.
        file: PathBuf,
        /// Where to listen (127.0.0.1 on a free port by default).
        #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:0")]
        addr: std::net::SocketAddr,
    },
    /// Summarises a trace in the terminal: the chain, messages per hop, the slowest requests,
    /// errors, exits and stderr.
    #[command(alias = "summarize")]
    Summarise {
        /// The trace file.
        file: PathBuf,
    },
}

const ROUTE_EXAMPLES: &str = "\
Examples:
  conductor route --backend 'docker exec -i ws-{workspace} claude-agent-acp'
  conductor route --config router.toml
  conductor route --backend 'wss://{workspace}.devbox:8443/acp' --header 'Authorization: Bearer …'
  conductor agent sparkle \"conductor route --backend 'my-agent --acp --cwd {cwd}'\"

Placeholders: {workspace} (the workspace root's name), {root} and {cwd} (as the backend sees
them); quoted for a shell in a command, percent-encoded in a URL (a backend over the network). A workspace is the nearest ancestor of the session's cwd with a .git, or a rule's prefix.";

#[derive(Debug, Args)]
struct RouteArgs {
    /// A TOML file of rules (cwd prefix → backend, path translation) and the idle timeout.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,

    /// The backend command template for sessions no rule covers.
    #[arg(long, value_name = "TEMPLATE")]
    backend: Option<String>,

    /// How long a backend without sessions lives on (default 10m).
    #[arg(long, value_name = "DURATION")]
    idle_timeout: Option<humantime::Duration>,

    /// How long a backend has to start and answer the editor's initialize, replayed to it
    /// (default 30s); past it, that session/new fails and the next one tries afresh.
    #[arg(long, value_name = "DURATION")]
    start_timeout: Option<humantime::Duration>,

    /// A header for every backend that is a URL (ws://, wss://, http://, https://), as
    /// 'Name: value'. Repeatable.
    #[arg(long, value_name = "'NAME: VALUE'")]
    header: Vec<String>,

    /// A PEM file of CA certificates trusted besides the system's, for backends reached over
    /// wss:// or https://. Repeatable.
    #[arg(long, value_name = "FILE")]
    ca_file: Vec<PathBuf>,
}

impl RouteArgs {
    fn config(self) -> Result<crate::router::Config, String> {
        let mut config = match &self.config {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
                toml::from_str::<crate::router::Config>(&text)
                    .map_err(|e| format!("{} is not valid: {e}", path.display()))?
            }
            None => crate::router::Config::default(),
        };
        if let Some(backend) = self.backend {
            config.backend = Some(backend);
        }
        if let Some(idle) = self.idle_timeout {
            config.idle_timeout = Some(idle.into());
        }
        if let Some(start) = self.start_timeout {
            config.start_timeout = Some(start.into());
        }
        if config.backend.is_none() && config.rules.iter().all(|r| r.backend.is_none()) {
            return Err(
                "conductor route needs a backend: --backend TEMPLATE or a config file".into(),
            );
        }
        Ok(config)
    }
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("network").args(["listen", "share"])))]
struct AgentArgs {
    /// The components, in order, each a command line (split like a shell would; quote it when
    /// it has arguments). The last one is the agent. `wasm:PATH ARGS…` is a WebAssembly
    /// component run in the conductor's process, granted nothing (grant it directories, the
    /// network and an environment in a --chain file).
    #[arg(value_name = "COMPONENT")]
    components: Vec<String>,

    /// A TOML file of components (with names, env and working directories) that come before
    /// the ones on the command line.
    #[arg(long, value_name = "FILE")]
    chain: Option<PathBuf>,

    /// The ACP registry that `registry:ID` components come from: a URL or a file. Default: the
    /// chain file's `registry`, else the public registry.
    #[arg(long, value_name = "URL|FILE")]
    registry: Option<String>,

    /// Runs the chain's agent's terminal authentication method ID in this terminal instead of
    /// serving the chain (what an editor does with a `terminal` auth method of the
    /// conductor's `initialize` answer), and exits with its status.
    #[arg(long, value_name = "ID")]
    terminal_auth: Option<String>,

    /// Writes one JSON line per message per hop (time, from, to, direction, method, id).
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,

    /// Includes each message's params, result or error in the trace.
    #[arg(long, requires = "trace")]
    trace_payloads: bool,

    /// Serves the live trace viewer (a page of every hop of every message, as it happens):
    /// `--serve` on 127.0.0.1 on a free port, `--serve=ADDR` on ADDR; its URL, with a token, goes to stderr. Records
    /// payloads; without --trace, the trace goes to a temporary file removed at the end. With --listen or
    /// --share, the listener also serves the sessions page at `/` (a session in the browser: watch it, or
    /// prompt and answer as a controller); its URL, the token in its fragment, goes to stderr.
    #[arg(
        long,
        value_name = "ADDR",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "127.0.0.1:0"
    )]
    serve: Option<std::net::SocketAddr>,

    /// After the editor closes stdin, how long its requests in flight may still be answered.
    #[arg(long, value_name = "DURATION", default_value = "1s")]
    eof_grace: humantime::Duration,

    /// At the end, how long answers still owed to a slow editor may take to be written.
    #[arg(long, value_name = "DURATION", default_value = "5s")]
    flush_timeout: humantime::Duration,

    /// After the editor closes stdin and the components' stdins are closed: how long they get
    /// between `SIGTERM` and `SIGKILL`, to save their sessions (agents people run do that on
    /// `SIGTERM`, not at the end of stdin).
    #[arg(long, value_name = "DURATION", default_value = "3s")]
    term_grace: humantime::Duration,

    /// How the proxies' MCP servers reach an agent that does not speak MCP over ACP: `stdio`
    /// (the agent runs `conductor mcp PORT`), `http` (a streamable-HTTP endpoint on 127.0.0.1),
    /// or `auto`: HTTP when the agent declares `mcpCapabilities.http`, else stdio. Default: the
    /// chain file's `mcp_bridge`, else `auto`.
    #[arg(long, value_name = "stdio|http|auto")]
    mcp_bridge: Option<BridgeMode>,

    /// Serves the chain over the network instead of stdin/stdout: ACP's remote transport at
    /// http://ADDR/acp (Streamable HTTP; ws://ADDR/acp for WebSocket), a chain of its own for
    /// every connection, whose sessions outlive the connection (a later one takes them back
    /// with session/load). The URL goes to stdout. Port 0: any free port.
    #[arg(long, value_name = "ADDR", conflicts_with = "share")]
    listen: Option<String>,

    /// Serves the editor on stdin/stdout as usual, and shares its sessions on the network:
    /// clients with the token (see --listen-token-file) attach to them with session/attach
    /// (ACP's remote transport at http://ADDR/acp, ws://ADDR/acp), as controllers or
    /// observers. The URL goes to stderr. The conductor ends when stdin ends.
    #[arg(long, value_name = "ADDR")]
    share: Option<String>,

    /// With --listen or --share: the bearer token clients must send is this file's content; else a random
    /// one, printed on stderr.
    #[arg(long, value_name = "FILE", requires = "network")]
    listen_token_file: Option<PathBuf>,

    /// With --listen or --share: TLS (https:// and wss://) with this PEM certificate chain.
    #[arg(long, value_name = "FILE", requires_all = ["network", "tls_key"])]
    tls_cert: Option<PathBuf>,

    /// With --listen or --share: the PEM private key of --tls-cert.
    #[arg(long, value_name = "FILE", requires_all = ["network", "tls_cert"])]
    tls_key: Option<PathBuf>,

    /// With --listen or --share: how many connections at once (default 256). The chains of sessions no
    /// connection holds are not counted: they end after --detached-timeout.
    #[arg(long, value_name = "N", requires = "network")]
    max_connections: Option<usize>,

    /// With --listen or --share: how long a Streamable HTTP connection may go without a request or a
    /// reader before it is closed (a client that vanished is gone then, and its sessions
    /// detached).
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "5m",
        requires = "network"
    )]
    http_idle_timeout: humantime::Duration,

    /// With --listen or --share: how long a session with no connection attached and nothing new lives
    /// on before it ends (and its chain, when nothing else keeps it).
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "30m",
        requires = "network"
    )]
    detached_timeout: humantime::Duration,

    /// With --listen or --share: how long a request of the agent's for an editor (a permission, a file)
    /// waits while no connection is attached to its session, before it gets what a refusing
    /// editor answers.
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "5m",
        requires = "network"
    )]
    editor_request_timeout: humantime::Duration,

    /// With --listen or --share: the bytes a session keeps for its clients (what no client took yet, and
    /// its history for a later session/load); `64MiB`, `512KiB` or plain bytes.
    #[arg(long, value_name = "SIZE", default_value = "32MiB", value_parser = crate::chain::parse_size, requires = "network")]
    session_buffer: usize,

    /// With --listen or --share: the journal of every session — this SQLite file (created
    /// 0600 if need be) or the PostgreSQL database of a postgres:// URL — from which a
    /// conductor started again on it (or another one sharing it) restores a session a client
    /// loads with session/load. Default: journal.db in sacp's state directory
    /// ($XDG_STATE_HOME/sacp, else ~/.local/state/sacp; the local data directory where there is
    /// no state directory).
    #[arg(long, value_name = "FILE|URL", requires = "network")]
    journal: Option<String>,

    /// With --listen or --share: this conductor's name among the conductors sharing a journal:
    /// what a client that asks another of them for a session this one holds is told
    /// (`data.heldBy` of the -32002 error). Give the name your load balancer knows it by (with
    /// deploy/haproxy.cfg, its affinity cookie: c1, c2). Default: HOST:PORT of its address.
    #[arg(long, value_name = "NAME", requires = "network")]
    instance: Option<String>,

    /// With --listen or --share: keep no journal (a session then ends with its conductor).
    #[arg(long, conflicts_with_all = ["journal", "journal_retention"], requires = "network")]
    no_journal: bool,

    /// With --listen or --share: how long the journal keeps a session nothing happened in;
    /// then it is deleted and can no longer be restored.
    #[arg(long, value_name = "DURATION", requires = "network")]
    journal_retention: Option<humantime::Duration>,

    /// With --listen or --share: the bytes all sessions keep together.
    #[arg(long, value_name = "SIZE", default_value = "256MiB", value_parser = crate::chain::parse_size, requires = "network")]
    sessions_buffer: usize,

    /// A header for every component given as a URL (ws://, wss://, http://, https://), as
    /// 'Name: value' ('Authorization: Bearer …', say). Repeatable.
    #[arg(long, value_name = "'NAME: VALUE'")]
    header: Vec<String>,

    /// A PEM file of CA certificates trusted besides the system's, for every component given
    /// as a wss:// or https:// URL. Repeatable.
    #[arg(long, value_name = "FILE")]
    ca_file: Vec<PathBuf>,

    /// Declares the proxy-chain dialect of the component at POSITION (1-based): `sacp` (this
    /// project's), `s11` (symposium's sacp 11) or `rfd` (ACP's RFD, agent-client-protocol 5).
    /// Repeatable. Without it, each proxy's dialect is found from its answer to `initialize`.
    #[arg(long, value_name = "POSITION=DIALECT")]
    dialect: Vec<String>,

    /// Components as separate words instead of quoted command lines, after `--`, separated
    /// by `--`: `-- proxy --flag -- agent --acp`.
    #[arg(last = true, value_name = "WORDS")]
    words: Vec<String>,
}

impl AgentArgs {
    fn chain(self) -> Result<(Chain, Options, Option<Listen>), String> {
        let mut chain = Chain::default();
        if let Some(path) = &self.chain {
            chain.push_file(path).map_err(|e| e.to_string())?;
        }
        chain
            .push_command_lines(&self.components)
            .map_err(|e| e.to_string())?;
        if let Some(registry) = &self.registry {
            chain.registry = Some(crate::registry::Source::parse(registry));
        }
        chain.push_argv_groups(self.words);
        chain
            .declare_dialects(&self.dialect)
            .map_err(|e| e.to_string())?;
        let headers = self
            .header
            .iter()
            .map(|h| crate::chain::remote::parse_header(h))
            .collect::<Result<Vec<_>, _>>()?;
        for component in &mut chain.components {
            if let Some(remote) = &mut component.remote {
                remote.headers.extend(headers.iter().cloned());
                remote.ca_files.extend(self.ca_file.iter().cloned());
            }
        }
        let shared = self.share.is_some();
        let listen = self.listen.or(self.share).map(|addr| {
            let mut listen = Listen::new(addr);
            if shared {
                listen = listen.stdio_editor();
            }
            if let Some(file) = self.listen_token_file {
                listen = listen.token_file(file);
            }
            if let Some((cert, key)) = self.tls_cert.zip(self.tls_key) {
                listen = listen.tls(cert, key);
            }
            if let Some(n) = self.max_connections {
                listen = listen.max_connections(n);
            }
            let journal = match (self.no_journal, self.journal) {
                (true, _) => None,
                (false, Some(spec)) => Some(spec),
                (false, None) => default_journal(),
            };
            if let Some(spec) = journal {
                listen = listen.journal(spec);
            }
            if let Some(retention) = self.journal_retention {
                listen = listen.journal_retention(retention.into());
            }
            if let Some(name) = self.instance {
                listen = listen.instance(name);
            }
            listen = listen.http_idle_timeout(self.http_idle_timeout.into());
            listen.sessions(
                crate::sessions::Limits::default()
                    .detached_timeout(self.detached_timeout.into())
                    .ask_timeout(self.editor_request_timeout.into())
                    .record(self.session_buffer)
                    .records(self.sessions_buffer),
            )
        });
        let options = Options {
            trace: self.trace,
            trace_payloads: self.trace_payloads,
            serve: self.serve,
            eof_grace: self.eof_grace.into(),
            flush_timeout: self.flush_timeout.into(),
            term_grace: self.term_grace.into(),
            launcher: std::env::current_exe().ok(),
            mcp_bridge: self.mcp_bridge,
            bridge_program: None,
            connection: None,
            notes: None,
        };
        Ok((chain, options, listen))
    }
}

/// `journal.db` in sacp's state directory: `$XDG_STATE_HOME/sacp` (or `~/.local/state/sacp`),
/// else, on systems without one, the local data directory's `sacp`. `None` (and no journal,
/// said on stderr) where the user has no home.
fn default_journal() -> Option<String> {
    let dir = dirs::state_dir().or_else(dirs::data_local_dir);
    match dir {
        Some(dir) => Some(
            dir.join("sacp")
                .join("journal.db")
                .to_string_lossy()
                .into_owned(),
        ),
        None => {
            tracing::warn!(
                "no state directory (no home?): no session journal; give one with --journal"
            );
            None
        }
    }
}

/// For a program that embeds the conductor ([`Chain::proxy`] chains in one binary): runs the
/// conductor's helper subcommands when this process was started as one — `__launch` (how
/// components are started so that they die with it) and `mcp PORT` (the stdio MCP bridge the
/// agent runs) — and returns their exit status; `None` otherwise. Call it first in `main`, and
/// give the conductor your own executable as [`Options::launcher`](crate::Options::launcher).
pub fn helper_subcommand() -> Option<ExitCode> {
    let mut argv = std::env::args_os().skip(1);
    let first = argv.next()?;
    if first == launch::SUBCOMMAND {
        return Some(launch::run(argv.collect()));
    }
    if first == crate::bridge::pipe::SUBCOMMAND {
        let port = argv.next()?.to_str()?.parse().ok()?;
        return Some(crate::bridge::pipe::run(port));
    }
    None
}

/// Parses the command line, runs the conductor, and returns its exit status.
pub fn main() -> ExitCode {
    let mut argv = std::env::args_os().skip(1);
    if argv.next().is_some_and(|first| first == launch::SUBCOMMAND) {
        return launch::run(argv.collect());
    }
    let cli = Cli::parse();
    let args = match cli.command {
        Command::Agent(args) => *args,
        Command::Mcp { port } => return crate::bridge::pipe::run(port),
        Command::Route(args) => {
            init_logging();
            return route(args);
        }
        Command::Trace(command) => {
            init_logging();
            return trace(command);
        }
        Command::Registry(command) => {
            init_logging();
            return registry::run(command);
        }
    };
    init_logging();
    let terminal_auth = args.terminal_auth.clone();
    let (chain, options, listen) = match args.chain() {
        Ok(parsed) => parsed,
        Err(why) => {
            tracing::error!("{why}");
            crate::stderr::finish(std::time::Duration::from_millis(500));
            return ExitCode::from(2);
        }
    };
    if let Some(id) = terminal_auth {
        let status = match on_runtime(crate::auth::terminal(chain, &id)) {
            Ok(Ok(status)) => ExitCode::from(status),
            Ok(Err(why)) => {
                tracing::error!("--terminal-auth {id}: {why}");
                ExitCode::FAILURE
            }
            Err(code) => code,
        };
        crate::stderr::finish(std::time::Duration::from_millis(500));
        return status;
    }
    let serving = async move {
        match listen {
            Some(listen) => crate::listen::serve(chain, options, listen).await,
            None => run_stdio(chain, options).await,
        }
    };
    let exit = match on_runtime(serving) {
        Ok(exit) => exit,
        Err(code) => return code,
    };
    let dropped = crate::stderr::dropped();
    if dropped > 0 {
        crate::stderr::write_line(
            format!("[conductor] {dropped} stderr lines were dropped in all: stderr was not read fast enough\n")
                .into_bytes(),
        );
    }
    // What is queued for stderr gets a moment, no more: nobody may be reading it.
    crate::stderr::finish(std::time::Duration::from_millis(500));
    ExitCode::from(exit.code())
}

/// `conductor trace`.
fn trace(command: TraceCommand) -> ExitCode {
    let finish = |code: ExitCode| {
        crate::stderr::finish(std::time::Duration::from_millis(500));
        code
    };
    match command {
        TraceCommand::Summarise { file } => {
            let summary = std::fs::read_to_string(&file)
                .map_err(|e| format!("cannot read {}: {e}", file.display()))
                .and_then(|text| crate::trace::summary::summarise(&text));
            printed(summary, "conductor trace summarise")
        }
        TraceCommand::View { file, addr } => {
            if let Err(e) = std::fs::metadata(&file) {
                eprintln!("conductor trace view: cannot read {}: {e}", file.display());
                return finish(ExitCode::from(2));
            }
            let serve = async {
                let source = crate::trace::serve::Source::Finished { path: file };
                let served = crate::trace::serve::start(addr, source).await?;
                crate::stderr::write_line(
                    format!("[conductor] trace viewer: {}\n", served.url).into_bytes(),
                );
                // Until interrupted.
                tokio::signal::ctrl_c().await
            };
            match on_runtime(serve) {
                Ok(Ok(())) => finish(ExitCode::SUCCESS),
                Ok(Err(e)) => {
                    eprintln!("conductor trace view: {e}");
                    finish(ExitCode::FAILURE)
                }
                Err(code) => code,
            }
        }
    }
}

/// `conductor route`.
fn route(args: RouteArgs) -> ExitCode {
    let headers = args
        .header
        .iter()
        .map(|h| crate::chain::remote::parse_header(h))
        .collect::<Result<Vec<_>, _>>();
    let remote = match headers {
        Ok(headers) => {
            let remote = headers
                .into_iter()
                .fold(crate::route::Remote::default(), |r, (name, value)| {
                    r.header(name, value)
                });
            args.ca_file.iter().fold(remote, |r, file| r.ca_file(file))
        }
        Err(why) => {
            tracing::error!("{why}");
            crate::stderr::finish(std::time::Duration::from_millis(500));
            return ExitCode::from(2);
        }
    };
    let config = match args.config() {
        Ok(config) => config,
        Err(why) => {
            tracing::error!("{why}");
            crate::stderr::finish(std::time::Duration::from_millis(500));
            return ExitCode::from(2);
        }
    };
    let launcher = std::env::current_exe().ok();
    let result = match on_runtime(crate::route::run_stdio(config, launcher, remote)) {
        Ok(result) => result,
        Err(code) => return code,
    };
    crate::stderr::finish(std::time::Duration::from_millis(500));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("conductor route: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Runs `work` on a single-threaded runtime, which is then dropped without waiting for the
/// tasks still blocked on our stdio (they must not hold the process up).
pub(crate) fn on_runtime<T>(work: impl std::future::Future<Output = T>) -> Result<T, ExitCode> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| {
            tracing::error!("cannot start the async runtime: {e}");
            ExitCode::FAILURE
        })?;
    let done = runtime.block_on(work);
    runtime.shutdown_background();
    Ok(done)
}

/// A program's whole job: runs `chain` on stdin/stdout, with this executable as the
/// components' launcher and the stdio MCP bridge (see [`helper_subcommand`], which the
/// program must call first), and returns the exit status. What
/// [`Chain::run_as_program`](crate::Chain::run_as_program) does.
pub(crate) fn run_as_program(chain: Chain) -> ExitCode {
    let me = std::env::current_exe().ok();
    let options = crate::Options {
        launcher: me.clone(),
        bridge_program: me,
        ..crate::Options::default()
    };
    match on_runtime(run_stdio(chain, options)) {
        Ok(exit) => ExitCode::from(exit.code()),
        Err(code) => code,
    }
}

/// A subcommand's end: its text on stdout, or why not on stderr (exit status 2), once what the
/// log still holds is written.
fn printed(result: Result<String, String>, command: &str) -> ExitCode {
    let code = match result {
        Ok(text) => {
            use std::io::Write as _;
            let _ = std::io::stdout().lock().write_all(text.as_bytes());
            ExitCode::SUCCESS
        }
        Err(why) => {
            eprintln!("{command}: {why}");
            ExitCode::from(2)
        }
    };
    crate::stderr::finish(std::time::Duration::from_millis(500));
    code
}

fn init_logging() {
    crate::stderr::init();
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_writer(crate::stderr::LogWriter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(filter)
        .init();
}

impl Chain {
    /// Runs the chain as this program's whole job, on a runtime of its own, with this
    /// executable as the components' launcher and as the stdio MCP bridge; the exit status to
    /// return from `main`. Call [`helper_subcommand`] first in `main`, so that the executable
    /// can be those.
    pub fn run_as_program(self) -> ExitCode {
        run_as_program(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<(Chain, Options), String> {
        let cli = Cli::try_parse_from(args).map_err(|e| e.to_string())?;
        match cli.command {
            Command::Agent(args) => (*args).chain().map(|(chain, options, _)| (chain, options)),
            Command::Mcp { .. } | Command::Route(_) | Command::Trace(_) | Command::Registry(_) => {
                Err("not an agent command line".to_owned())
            }
        }
    }

    #[test]
    fn components_are_command_lines_or_words_after_dashes() {
        let (chain, options) = parse(&[
            "conductor",
            "agent",
            "--trace",
            "t.jsonl",
            "p1 -v",
            "--",
            "p2",
            "--x",
            "--",
            "agent",
        ])
        .unwrap();
        let lines: Vec<_> = chain.components.iter().map(|c| c.command_line()).collect();
        assert_eq!(lines, ["p1 -v", "p2 --x", "agent"]);
        assert_eq!(options.trace, Some(PathBuf::from("t.jsonl")));
        assert!(!options.trace_payloads);
    }

    #[test]
    fn bad_command_lines_and_flags_are_reported() {
        assert!(
            parse(&["conductor", "agent", "a 'b"])
                .unwrap_err()
                .contains("quotes")
        );
        assert!(parse(&["conductor", "agent", "--trace-payloads", "a"]).is_err());
        // `--serve` takes its address only after `=`: the next word is a component.
        let (chain, options) = parse(&["conductor", "agent", "--serve", "a"]).unwrap();
        assert_eq!(options.serve, Some("127.0.0.1:0".parse().unwrap()));
        assert_eq!(chain.components.len(), 1);
        let (_, options) = parse(&["conductor", "agent", "--serve=127.0.0.1:7777", "a"]).unwrap();
        assert_eq!(options.serve, Some("127.0.0.1:7777".parse().unwrap()));
        assert!(parse(&["conductor", "agent", "p", "--verbose"]).is_err());
        let missing = parse(&["conductor", "agent", "--chain", "/nonexistent/chain.toml"]);
        assert!(missing.unwrap_err().contains("/nonexistent/chain.toml"));
    }

    #[test]
    fn help_shows_an_editor_configuration() {
        let help = Cli::try_parse_from(["conductor", "agent", "--help"])
            .unwrap_err()
            .to_string();
        assert!(
            help.contains("agent_servers") && help.contains("--chain"),
            "{help}"
        );
    }
}
