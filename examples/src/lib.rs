//! Runnable examples of `sacp`.
//!
//! - [`demo`]: a tiny agent/client protocol used by the `jsonrpc-demo` binary (the README's
//!   main job until the conductor demo arrives) and by the child-process tests.
//! - [`prefix`]: a proxy that prefixes each text chunk the agent streams (`prefix-proxy`).
//! - `passthrough-proxy`: the smallest proxy there is, `#[sacp::proxy] impl PassThrough {}`.

pub mod demo;
pub mod prefix;

/// Logs to stderr, filtered by `RUST_LOG`: stdout belongs to the protocol.
pub fn init_logging() {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .init();
}
