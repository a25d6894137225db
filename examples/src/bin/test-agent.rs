//! A deterministic ACP agent for tests and benchmarks; see `sacp_examples::test_agent`.
//!
//! `test-agent [--protocol 1|2|1,2] [--mcp-acp|--mcp-rfd|--mcp-http] [--sessions DIR] [--ignore-eof] [--on-sigterm FILE] [--ignore-sigterm]`:
//! - `--protocol`: the ACP versions it speaks: 1 (the default), 2 (`TestAgentV2`, the draft),
//!   or both (`1,2`: a `sacp::agent::Dual` that serves each connection with the side its
//!   `initialize` chose);
//! - `--mcp-acp`, `--mcp-rfd`, `--mcp-http`: how its v1 side takes MCP servers (see the
//!   module docs); `--mcp-http` makes the v2 side declare HTTP only (else stdio only);
//! - `--sessions DIR`: keeps its v1 sessions in `DIR` too, so that a later process loads or
//!   resumes them;
//! - `--ignore-eof`: keeps running after its stdin ends, as the agents people run do (they end
//!   on a signal);
//! - `--on-sigterm FILE`: on `SIGTERM`, writes `saved` to `FILE` (its session, as a real agent
//!   would save it) and exits 0;
//! - `--ignore-sigterm`: takes no notice of `SIGTERM` (only `SIGKILL` ends it).

use std::path::PathBuf;

use sacp::agent::Dual;
use sacp_examples::test_agent::{TestAgent, TestAgentV2};
use tokio::signal::unix::{SignalKind, signal};

/// How it was asked to behave.
#[derive(Default)]
struct Args {
    agent: Option<TestAgent>,
    /// The ACP versions to speak (`--protocol`); v1 when not given.
    protocols: Option<Vec<u16>>,
    /// `--mcp-http`, for the v2 side too.
    mcp_http: bool,
    sessions: Option<PathBuf>,
    ignore_eof: bool,
    on_sigterm: Option<PathBuf>,
    ignore_sigterm: bool,
}

fn args() -> Result<Args, String> {
    let mut args = Args::default();
    let mut words = std::env::args().skip(1);
    while let Some(word) = words.next() {
        match word.as_str() {
            "--mcp-acp" if args.agent.is_none() => {
                args.agent = Some(TestAgent::speaking_mcp_over_acp())
            }
            "--mcp-rfd" if args.agent.is_none() => {
                args.agent = Some(TestAgent::speaking_rfd_mcp_over_acp())
            }
            "--mcp-http" if args.agent.is_none() => {
                args.agent = Some(TestAgent::with_mcp_over_http());
                args.mcp_http = true;
            }
            "--protocol" => {
                let list = words.next().ok_or("--protocol needs 1, 2 or 1,2")?;
                args.protocols = Some(match list.as_str() {
                    "1" => vec![1],
                    "2" => vec![2],
                    "1,2" | "2,1" => vec![1, 2],
                    other => return Err(format!("--protocol {other:?}: expected 1, 2 or 1,2")),
                });
            }
            "--sessions" => {
                let dir = words.next().ok_or("--sessions needs a DIR")?;
                args.sessions = Some(dir.into());
            }
            "--ignore-eof" => args.ignore_eof = true,
            "--ignore-sigterm" => args.ignore_sigterm = true,
            "--on-sigterm" => {
                let file = words.next().ok_or("--on-sigterm needs a FILE")?;
                args.on_sigterm = Some(file.into());
            }
            other => {
                return Err(format!(
                    "unknown argument {other:?}; expected --protocol 1|2|1,2, --mcp-acp, \
                     --mcp-rfd or --mcp-http, --sessions DIR, --ignore-eof, --on-sigterm FILE, \
                     --ignore-sigterm"
                ));
            }
        }
    }
    Ok(args)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> sacp::Result<()> {
    sacp_examples::init_logging();
    let mut args = match args() {
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
    let mut v1 = args.agent.take().unwrap_or_default();
    if let Some(dir) = args.sessions.take() {
        v1 = v1.keeping_sessions_in(dir);
    }
    let v2 = if args.mcp_http {
        TestAgentV2::with_mcp_over_http()
    } else {
        TestAgentV2::default()
    };
    let serving: std::pin::Pin<Box<dyn Future<Output = sacp::Result<()>>>> =
        match args.protocols.as_deref() {
            Some([2]) => Box::pin(sacp::agent::serve_stdio(v2)),
            Some([1, 2]) => Box::pin(sacp::agent::serve_stdio(Dual::new(v1, v2))),
            _ => Box::pin(sacp::agent::serve_stdio(v1)),
        };
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
