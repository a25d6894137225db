//! # sacp
//!
//! A Rust SDK for composing [Agent Client Protocol](https://agentclientprotocol.com) agents out
//! of proxies, and the conductor that runs such a chain.
//!
//! This crate is built in layers, each using only the ones before it:
//! - [`jsonrpc`]: JSON-RPC 2.0 over newline-delimited streams or in-process channels — wire
//!   messages with raw payloads, framing, transports, and connections with in-order dispatch,
//!   cancellation and timeouts.
//! - [`acp`]: the ACP messages as types (generated from the schema, see [`schema`]), with their
//!   method names and the side that sends them.
//! - [`protocol`]: SACP's own wire pieces, the successor envelope, the proxy-capability
//!   handshake and the `_mcp/*` messages (shared with the conductor).
//! - `remote` (feature `remote`): ACP's network transport, its Streamable HTTP and WebSocket
//!   profiles, client and server — a JSON-RPC transport like stdio, but ACP's own (it routes
//!   by session and takes sessions back after a drop), so it stands on the protocol layers.
//! - a crate-private runtime that both roles stand on: their handler sets and the one rule
//!   that schedules what they receive onto lanes, their contexts' neighbours, the answer to a
//!   request ([`proxy::Reply`]).
//! - [`proxy`](mod@proxy): the runtime every proxy shares — concurrent `&self` handlers, order
//!   kept per side, default forwarding, bounded queues — and [`macro@proxy`], which turns an
//!   `impl` block into one.
//! - [`agent`](mod@agent): the same for agents, with [`macro@agent`].
//! - [`mcp`]: MCP over ACP under one path — a proxy's `#[tool]` methods served to the agent
//!   as an MCP server (the proxy runtime's), and the client side for agents that speak it
//!   themselves (the agent runtime's).
//! - `__private`: what the macros' expansions call, on top of everything; nothing in the crate
//!   uses it.
//! - `testing` (feature `testing`): utilities for testing proxies and agents.
//!
//! The guides: [`_proxies`] (a proxy in one example, tools, the conductor's MCP bridges) and,
//! with the feature `remote`, `_network` (serving an agent over the network, reaching one).
//!
//! **Features.** `stdio` (on by default): a peer on this process's stdin and stdout
//! (`ByteStream::stdio`, `proxy::serve_stdio`, `agent::serve_stdio`). `remote`: ACP over the
//! network. `rmcp`: an `rmcp` server served over ACP. `testing`: `sacp::testing`. `unstable`
//! and `unstable_protocol_v2`: ACP's unstable surface and its v2 draft. Without its default
//! features the crate needs nothing of tokio that WebAssembly lacks (no processes, sockets,
//! stdio or threads), so it builds for `wasm32-wasip2`: the JSON-RPC core, the ACP types, the
//! protocol layer, the proxy and agent runtimes, the macros, `mcp` and `testing`; there
//! `ByteStream::stdio`, `proxy::serve_stdio` and `agent::serve_stdio` are the WebAssembly
//! component's own stdin and stdout (WASI's), and [`run`] is the runtime its `main` needs
//! (`cargo check -p sacp-sdk --no-default-features --features testing --target
//! wasm32-wasip2`, which CI runs).
//!
//! A proxy that forwards everything is one line plus `main`:
//!
//! ```no_run
//! struct PassThrough;
//!
//! #[sacp::proxy]
//! impl PassThrough {}
//!
//! #[tokio::main]
//! async fn main() -> sacp::Result<()> {
//!     sacp::proxy::serve_stdio(PassThrough).await
//! }
//! ```

#![forbid(unsafe_code)]

pub mod acp;
pub mod agent;
pub mod jsonrpc;
mod lock;
pub mod mcp;
pub mod protocol;
pub mod proxy;
#[cfg(feature = "remote")]
pub mod remote;
mod run;
mod runtime;
#[cfg(feature = "testing")]
pub mod testing;

#[doc(hidden)]
pub mod __private;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;

pub use sacp_macros::{agent, content, mcp_server, on_notification, on_request, proxy, tool};
/// The generated protocol types (ACP v1 and v2, MCP) and their method tables.
pub use sacp_schema as schema;

pub use crate::jsonrpc::{Error, Result};
pub use crate::run::run;

/// The `serde` that `sacp`'s types and `#[tool]` inputs use: derive through it
/// (`#[derive(sacp::serde::Deserialize)]` with `#[serde(crate = "sacp::serde")]`) to need no
/// `serde` of your own.
pub use serde;

/// The `schemars` (1.x) that `#[tool]` inputs' schemas come from: derive through it
/// (`#[derive(sacp::schemars::JsonSchema)]` with `#[schemars(crate = "sacp::schemars")]`)
/// to need no `schemars` of your own, or depend on `schemars = "1"`.
pub use schemars;

#[doc = include_str!("../docs/proxies.md")]
pub mod _proxies {}

#[cfg(feature = "remote")]
#[doc = include_str!("../docs/network.md")]
pub mod _network {}

/// The crate's own README (what crates.io shows), compiled as doc tests so that it cannot
/// drift (it tests with
/// `sacp::testing`, so with that feature: `cargo test --workspace` turns it on).
#[cfg(all(doctest, feature = "testing"))]
#[doc = include_str!("../README.md")]
struct CrateReadmeDoctests;
