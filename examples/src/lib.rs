//! Runnable examples of `sacp`.
//!
//! - [`audit`]: a proxy whose prompt handler awaits the agent while its permission handler asks
//!   the editor, in the same turn (`audit-proxy`).
//! - [`bins`]: finds (and builds) the workspace's binaries for tests, benchmarks and demos.
//! - `chain-demo` (the README's main job): a scripted editor driving the conductor with
//!   `passthrough-proxy`, `prefix-proxy` and `test-agent`.
//! - [`demo`]: a tiny agent/client protocol used by the `jsonrpc-demo` binary and by the
//!   child-process tests.
//! - [`prefix`]: a proxy that prefixes each text chunk the agent streams (`prefix-proxy`).
//! - `passthrough-proxy`: the smallest proxy there is, `#[sacp::proxy] impl PassThrough {}`.
//! - [`test_agent`]: a deterministic agent driven by keywords in its prompts (`test-agent`); with
//!   `--mcp-acp` it calls the tools of the MCP servers it is given.
//! - [`toolbox`]: a proxy that gives the agent tools (`tool-proxy`).

#![forbid(unsafe_code)]

pub mod audit;
pub mod bins;
pub mod demo;
pub mod prefix;
pub mod test_agent;
pub mod toolbox;

/// Logs to stderr, filtered by `RUST_LOG`: stdout belongs to the protocol.
pub fn init_logging() {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .init();
}
