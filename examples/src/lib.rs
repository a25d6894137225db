//! Runnable examples of `sacp`.
//!
//! - [`audit`]: a proxy whose prompt handler awaits the agent while its permission handler asks
//!   the editor, in the same turn (`audit-proxy`).
//! - [`bins`]: finds (and builds) the workspace's binaries for tests, benchmarks and demos.
//! - `chain-demo` (the README's main job): a scripted editor driving
//!   `conductor agent sparkle test-agent` (Sparkle is the `sparkle` package, next door).
//! - [`context`]: a proxy that puts a text in front of every prompt (`context-proxy`).
//! - [`demo`]: a tiny agent/client protocol used by the `jsonrpc-demo` binary and by the
//!   child-process tests.
//! - [`logger`]: a proxy that writes a JSON line per message it sees to a file
//!   (`logging-proxy`), written against the `Proxy` trait without the macro.
//! - [`panel`]: a proxy that ends every turn with an HTML panel, a summary of the tools the
//!   turn used (`panel-proxy`); an editor that does not take HTML gets it as text.
//! - [`plain`]: a proxy with a content handler of its own: it renders HTML as text for a
//!   client that cannot take HTML, in place of the conductor (`plain-proxy`).
//! - [`prefix`]: a proxy that prefixes each text chunk the agent streams (`prefix-proxy`).
//! - [`reminder`]: a proxy that speaks between turns: `/remind 2s TEXT` ends the turn at once,
//!   and the editor gets `reminder: TEXT` two seconds later; `/later 2s TEXT` starts a turn
//!   of the proxy's own; a `start_job` tool's end is reported after the turn that started it
//!   (`reminder-proxy`).
//! - [`seed`]: a proxy that starts every session with a conversation from a file as its
//!   history (session pre-population, `seed-proxy`).
//! - [`steward`]: a typed proxy for ACP's unstable surface: forks, subagents and elicitations
//!   (`steward-proxy`).
//! - `passthrough-proxy`: the smallest proxy there is, `#[sacp::proxy] impl PassThrough {}`
//!   (speaking ACP v1 and v2: it reads nothing it forwards).
//! - `v2-observer-proxy`: a typed ACP v2 proxy that reads every prompt and update and sends
//!   each on as it came.
//! - [`test_agent`]: a deterministic agent written with `#[sacp::agent]`, driven by keywords in
//!   its prompts (`test-agent`); an MCP client too (rmcp for stdio and HTTP servers, MCP over
//!   ACP with `--mcp-acp`), it calls the tools of the servers it is given. `--protocol 2` runs
//!   its ACP v2 side ([`test_agent::TestAgentV2`]), `--protocol 1,2` both.
//! - [`toolbox`]: a proxy that gives the agent tools (`tool-proxy`).

#![forbid(unsafe_code)]

#[cfg(not(target_family = "wasm"))]
pub mod audit;
#[cfg(not(target_family = "wasm"))]
#[doc = include_str!("../../docs/guide.md")]
pub mod guide {}
#[cfg(not(target_family = "wasm"))]
pub mod bins;
#[cfg(not(target_family = "wasm"))]
pub mod context;
#[cfg(not(target_family = "wasm"))]
pub mod demo;
mod lock;
pub mod logger;
pub mod panel;
pub mod plain;
pub mod prefix;
pub mod probe;
#[cfg(not(target_family = "wasm"))]
pub mod reminder;
#[cfg(not(target_family = "wasm"))]
pub mod seed;
#[cfg(not(target_family = "wasm"))]
pub mod steward;
#[cfg(not(target_family = "wasm"))]
pub mod test_agent;
#[cfg(not(target_family = "wasm"))]
pub mod toolbox;

/// Logs to stderr, filtered by `RUST_LOG`: stdout belongs to the protocol.
pub fn init_logging() {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .init();
}
