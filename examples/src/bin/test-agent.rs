//! A deterministic ACP agent for tests and benchmarks; see `sacp_examples::test_agent`.
//!
//! `test-agent [--protocol 1|2|1,2] [--mcp-acp|--mcp-rfd|--mcp-http] [--sessions DIR] [--offers LIST] [--no-close] [--auth] [--image] [--setup] [--history] [--max-prompt BYTES] [--ignore-eof] [--initialize-delay DURATION] [--on-sigterm FILE] [--ignore-sigterm] [--listen ADDR [--token TOKEN] [--tls-cert FILE --tls-key FILE] [--stall-timeout DURATION] [--max-connections N]]`:
//! - `--protocol`: the ACP versions it speaks: 1 (the default), 2 (`TestAgentV2`, the draft),
//!   or both (`1,2`: a `sacp::agent::Dual` that serves each connection with the side its
//!   `initialize` chose);
//! - `--mcp-acp`, `--mcp-rfd`, `--mcp-http`: how its v1 side takes MCP servers (see the
//!   module docs); `--mcp-http` makes the v2 side declare HTTP only (else stdio only);
//! - `--sessions DIR`: keeps its v1 sessions in `DIR` too, so that a later process loads or
//!   resumes them;
//! - `--offers resume,load|resume|load|none`: what it offers in `initialize` to take sessions
//!   back (both by default);
//! - `--auth`: offers authentication in `initialize`: `login` (an `agent` method) and, to a
//!   client that takes terminal methods, `setup` (`--setup`, with `TEST_AGENT_SETUP=1`);
//! - `--setup`: the terminal authentication of `--auth`: says so on stdout and exits 0;
//! - `--no-close`: neither offers `session/close` in `initialize` nor serves it (an agent of
//!   the many that cannot close a session);
//! - `--image`: says in `initialize` that it takes images in prompts, and answers each image
//!   block with `image MIME DATA` (as it came);
//! - `--history`: says in `initialize` that it takes a history with `session/new`
//!   (`_meta.sacp.history`) and starts such a session with it;
//! - `--max-prompt BYTES`: refuses a prompt with more text than that (invalid params), as an
//!   agent with a small context would;
//! - `--initialize-delay DURATION` (`500ms`, `2s`): answers `initialize` only after that long (an
//!   agent slow to start; its client may send `session/new` meanwhile);
//! - `--ignore-eof`: keeps running after its stdin ends, as the agents people run do (they end
//!   on a signal);
//! - `--on-sigterm FILE`: on `SIGTERM`, writes `saved` to `FILE` (its session, as a real agent
//!   would save it) and exits 0;
//! - `--ignore-sigterm`: takes no notice of `SIGTERM` (only `SIGKILL` ends it);
//! - `--listen ADDR`: serves ACP over the network instead of stdio (both profiles at
//!   `http://ADDR/acp`, see `sacp::remote::Server`), a new agent for each connection,
//!   and prints the URL as the first line of stdout; `--token` (else one is made up and printed
//!   on stderr), `--tls-cert`/`--tls-key` (PEM) for `https`/`wss`, `--stall-timeout` (`500ms`,
//!   `2s`) for how long a client may read nothing, `--max-connections N` for how many at once.
//!   `SIGTERM` shuts it down.

use std::path::PathBuf;

use sacp::agent::Dual;
use sacp_examples::test_agent::{TestAgent, TestAgentV2};
use tokio::signal::unix::{SignalKind, signal};

/// How its v1 side takes MCP servers.
#[derive(Default, Clone, Copy, PartialEq)]
enum Mcp {
    #[default]
    Stdio,
    Acp,
    Rfd,
    Http,
}

/// How it was asked to behave.
#[derive(Default)]
struct Args {
    mcp: Mcp,
    /// The ACP versions to speak (`--protocol`); v1 when not given.
    protocols: Option<Vec<u16>>,
    sessions: Option<PathBuf>,
    ignore_eof: bool,
    on_sigterm: Option<PathBuf>,
    ignore_sigterm: bool,
    listen: Option<String>,
    token: Option<String>,
    tls: (Option<PathBuf>, Option<PathBuf>),
    stall: Option<std::time::Duration>,
    max_connections: Option<usize>,
    /// How long `initialize` waits before it is answered (`--initialize-delay`).
    initialize_delay: Option<std::time::Duration>,
    /// It takes a history with `session/new` (`--history`).
    history: bool,
    /// The longest prompt it takes, in bytes of text (`--max-prompt`).
    max_prompt: Option<usize>,
    /// What it offers to take sessions back (`--offers`): resume, load.
    offers: Option<(bool, bool)>,
    /// It cannot close a session (`--no-close`).
    no_close: bool,
    /// It offers authentication (`--auth`).
    auth: bool,
    /// It takes images in prompts (`--image`).
    image: bool,
}

impl Args {
    /// Sets the flag `word` names, if it names one that takes no value.
    fn switch(&mut self, word: &str) -> bool {
        let flag = match word {
            "--ignore-eof" => &mut self.ignore_eof,
            "--history" => &mut self.history,
            "--no-close" => &mut self.no_close,
            "--auth" => &mut self.auth,
            "--image" => &mut self.image,
            "--ignore-sigterm" => &mut self.ignore_sigterm,
            _ => return false,
        };
        *flag = true;
        true
    }

    fn v1(&self) -> TestAgent {
        let agent = match self.mcp {
            Mcp::Stdio => TestAgent::default(),
            Mcp::Acp => TestAgent::speaking_mcp_over_acp(),
            Mcp::Rfd => TestAgent::speaking_rfd_mcp_over_acp(),
            Mcp::Http => TestAgent::with_mcp_over_http(),
        };
        let agent = match &self.sessions {
            Some(dir) => agent.keeping_sessions_in(dir.clone()),
            None => agent,
        };
        let agent = match self.initialize_delay {
            Some(delay) => agent.answering_initialize_after(delay),
            None => agent,
        };
        let agent = match self.history {
            true => agent.taking_histories(),
            false => agent,
        };
        let agent = match self.offers {
            Some((resume, load)) => agent.offering(resume, load),
            None => agent,
        };
        let agent = match self.no_close {
            true => agent.not_closing(),
            false => agent,
        };
        let agent = match self.auth {
            true => agent.authenticating(),
            false => agent,
        };
        let agent = match self.image {
            true => agent.taking_images(),
            false => agent,
        };
        match self.max_prompt {
            Some(bytes) => agent.refusing_prompts_over(bytes),
            None => agent,
        }
    }

    fn v2(&self) -> TestAgentV2 {
        if self.mcp == Mcp::Http {
            TestAgentV2::with_mcp_over_http()
        } else {
            TestAgentV2::default()
        }
    }

    /// Serves one connection with the agent of the versions asked for.
    async fn serve(&self, transport: impl sacp::jsonrpc::Transport) -> sacp::Result<()> {
        match self.protocols.as_deref() {
            Some([2]) => sacp::agent::serve(self.v2(), transport).await,
            Some([1, 2]) => sacp::agent::serve(Dual::new(self.v1(), self.v2()), transport).await,
            _ => sacp::agent::serve(self.v1(), transport).await,
        }
    }
}

/// The value after flag `flag`.
fn value(
    words: &mut impl Iterator<Item = String>,
    flag: &str,
    what: &str,
) -> Result<String, String> {
    words.next().ok_or(format!("{flag} needs {what}"))
}

fn args() -> Result<Args, String> {
    let mut args = Args::default();
    let mut mcp_given = false;
    let mut words = std::env::args().skip(1);
    while let Some(word) = words.next() {
        if args.switch(&word) {
            continue;
        }
        match word.as_str() {
            "--mcp-acp" | "--mcp-rfd" | "--mcp-http" if !mcp_given => {
                mcp_given = true;
                args.mcp = match word.as_str() {
                    "--mcp-acp" => Mcp::Acp,
                    "--mcp-rfd" => Mcp::Rfd,
                    _ => Mcp::Http,
                };
            }
            "--protocol" => {
                let list = value(&mut words, "--protocol", "1, 2 or 1,2")?;
                args.protocols = Some(match list.as_str() {
                    "1" => vec![1],
                    "2" => vec![2],
                    "1,2" | "2,1" => vec![1, 2],
                    other => return Err(format!("--protocol {other:?}: expected 1, 2 or 1,2")),
                });
            }
            "--sessions" => args.sessions = Some(value(&mut words, "--sessions", "a DIR")?.into()),
            "--setup" => {
                // The terminal authentication a client runs: interactive in a real agent.
                let set = std::env::var("TEST_AGENT_SETUP").unwrap_or_default();
                // The terminal is this mode's whole interface, as it is a real agent's login.
                #[allow(clippy::print_stdout)]
                {
                    println!("test-agent: set up (TEST_AGENT_SETUP={set})");
                }
                std::process::exit(0);
            }
            "--offers" => {
                let list = value(&mut words, "--offers", "resume,load, resume, load or none")?;
                let words: Vec<&str> = list.split(',').collect();
                if words
                    .iter()
                    .any(|w| !["resume", "load", "none"].contains(w))
                {
                    return Err(format!(
                        "--offers {list:?}: expected resume,load, resume, load or none"
                    ));
                }
                args.offers = Some((words.contains(&"resume"), words.contains(&"load")));
            }
            "--max-prompt" => {
                let n = value(&mut words, "--max-prompt", "a number of bytes")?;
                args.max_prompt = Some(
                    n.parse()
                        .map_err(|_| format!("--max-prompt {n:?}: not a number"))?,
                );
            }
            "--on-sigterm" => {
                args.on_sigterm = Some(value(&mut words, "--on-sigterm", "a FILE")?.into())
            }
            "--listen" => args.listen = Some(value(&mut words, "--listen", "an ADDR")?),
            "--max-connections" => {
                let n = value(&mut words, "--max-connections", "a number")?;
                args.max_connections = Some(
                    n.parse()
                        .map_err(|_| format!("--max-connections {n:?}: not a number"))?,
                );
            }
            "--token" => args.token = Some(value(&mut words, "--token", "a TOKEN")?),
            "--tls-cert" => args.tls.0 = Some(value(&mut words, "--tls-cert", "a FILE")?.into()),
            "--tls-key" => args.tls.1 = Some(value(&mut words, "--tls-key", "a FILE")?.into()),
            "--initialize-delay" | "--stall-timeout" => {
                let flag = word.clone();
                let text = value(&mut words, &flag, "a DURATION")?;
                let ms = match text.strip_suffix("ms") {
                    Some(ms) => ms.parse::<u64>().ok(),
                    None => text
                        .strip_suffix('s')
                        .and_then(|s| s.parse::<u64>().ok())
                        .map(|s| s * 1000),
                };
                let ms = ms.ok_or(format!("{flag} {text:?}: expected 500ms or 2s"))?;
                let duration = Some(std::time::Duration::from_millis(ms));
                if flag == "--stall-timeout" {
                    args.stall = duration;
                } else {
                    args.initialize_delay = duration;
                }
            }
            other => {
                return Err(format!(
                    "unknown argument {other:?}; expected --protocol 1|2|1,2, --mcp-acp, \
                     --mcp-rfd or --mcp-http, --sessions DIR, --ignore-eof, --on-sigterm FILE, \
                     --ignore-sigterm, --history, --no-close, --auth, --image, --offers LIST, \
                     --max-prompt BYTES, --listen ADDR, --token TOKEN, --tls-cert FILE, \
                     --tls-key FILE, --stall-timeout DURATION, --max-connections N, \
                     --initialize-delay DURATION"
                ));
            }
        }
    }
    Ok(args)
}

/// Serves ACP on `addr` until `SIGTERM`: a new agent per connection.
async fn listen(args: Args, addr: String) -> sacp::Result<()> {
    let mut builder = sacp::remote::Server::builder();
    if let Some(token) = &args.token {
        builder = builder.token(token);
    }
    if let (Some(cert), Some(key)) = &args.tls {
        builder = builder
            .tls_pem(cert, key)
            .map_err(|e| sacp::Error::internal_error(e.to_string()))?;
    }
    if let Some(stall) = args.stall {
        builder = builder.stall_timeout(stall);
    }
    if let Some(n) = args.max_connections {
        builder = builder.max_connections(n);
    }
    let server = builder
        .bind(addr.as_str())
        .await
        .map_err(|e| sacp::Error::internal_error(format!("cannot listen on {addr}: {e}")))?;
    if args.token.is_none() {
        eprintln!("test-agent: token {}", server.token());
    }
    {
        use std::io::Write as _;
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{}", server.url());
        let _ = out.flush();
    }
    let shutdown = server.shutdown_handle();
    tokio::spawn(async move {
        if let Ok(mut terms) = signal(SignalKind::terminate()) {
            terms.recv().await;
            shutdown.shutdown();
        }
    });
    let args = std::sync::Arc::new(args);
    server
        .serve(move |connection| {
            let args = args.clone();
            async move {
                if let Err(e) = args.serve(connection).await {
                    tracing::debug!("a connection ended: {e}");
                }
            }
        })
        .await
        .map_err(|e| sacp::Error::internal_error(e.to_string()))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> sacp::Result<()> {
    sacp_examples::init_logging();
    let args = match args() {
        Ok(args) => args,
        Err(why) => {
            eprintln!("test-agent: {why}");
            std::process::exit(2);
        }
    };
    // Listening for SIGTERM replaces its default (the end of the process): only when asked.
    let mut terms = if args.on_sigterm.is_some() || args.ignore_sigterm {
        Some(signal(SignalKind::terminate())?)
    } else {
        None
    };
    if let Some(addr) = args.listen.clone() {
        return listen(args, addr).await;
    }
    let serving = args.serve(sacp::jsonrpc::ByteStream::stdio());
    let served = tokio::select! {
        served = serving => Some(served),
        () = sigterm(&mut terms) => None,
    };
    match served {
        Some(served) if !args.ignore_eof => return served,
        Some(served) => {
            tracing::info!(?served, "stdin ended; going on until a signal");
            // Without a handler, SIGTERM's default ends the process here.
            sigterm(&mut terms).await;
        }
        None => {}
    }
    // A SIGTERM came, and it is listened for.
    loop {
        if let Some(file) = &args.on_sigterm {
            std::fs::write(file, "saved")?;
            eprintln!(
                "test-agent: saved to {} on SIGTERM; exiting",
                file.display()
            );
            std::process::exit(0);
        }
        eprintln!("test-agent: SIGTERM taken no notice of");
        sigterm(&mut terms).await;
    }
}

/// Completes on the next `SIGTERM`, if it is listened for (never otherwise).
async fn sigterm(terms: &mut Option<tokio::signal::unix::Signal>) {
    match terms {
        Some(terms) => {
            terms.recv().await;
        }
        None => std::future::pending().await,
    }
}
