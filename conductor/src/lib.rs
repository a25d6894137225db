//! The SACP conductor: runs a chain of ACP proxies and an agent as one ACP agent.
//!
//! An editor starts `conductor agent proxy1 proxy2 agent` as its agent. The conductor spawns
//! the three components and sits between every pair of neighbours: the editor sees one plain
//! ACP agent, each proxy sees its client and (through `_proxy/successor/*`) its successor, and
//! the agent sees a plain ACP client. The protocol is [`sacp::protocol`]'s (the successor
//! envelope, the proxy-capability handshake, proxy mode, MCP over ACP), in these parts:
//! - [`sacp::protocol::routing`]: where each message goes, per-hop ids, the successor
//!   envelope, the proxy-capability handshake, proxy mode, and at the chain's ends sessions
//!   created with a history adapted to the agent and a v2 editor's session states (a table
//!   without I/O, in the SDK so that `sacp::testing` routes exactly like this conductor);
//! - `conductor/`: the event loop (`mod.rs`), the start of a chain (`start.rs`, [`run`]) and
//!   its end, from a component's failure to the last process group killed (`ending.rs`);
//!   `endpoint.rs`: each connection's reader and writer, with backpressure; `process.rs`:
//!   process groups and stderr; `trace/`: `--trace` and the live viewer;
//! - `bridge/`: the MCP bridges that give an agent which knows nothing of `acp:` URLs the
//!   proxies' MCP servers, over stdio (`conductor mcp PORT`) or HTTP, and the translator
//!   between the MCP-over-ACP forms of the dialects;
//! - [`Chain`]: the components, from command lines or a TOML chain file, Rust proxies that
//!   run in this process ([`Chain::proxy`]), or ACP servers reached over the network
//!   (`chain/remote.rs`);
//! - `listen.rs`: the chain served over the network ([`serve_listen`]), standing on the
//!   session layer (`sessions/`): connections attach to sessions, sessions live in chains, a
//!   dropped connection detaches and a later one takes its sessions back;
//! - [`router`]: the session router (`conductor route`): one ACP agent for the editor that
//!   runs each session on a backend of the session's workspace; `route.rs` runs it with
//!   backends as processes or servers over the network;
//! - [`cli`]: the `conductor` command line.
//!
//! The guides: [`_chains`] (running chains: ending, traces, other SDKs' proxies, versions,
//! the network, sessions), [`_router`] (`conductor route`), [`_benchmarks`].
//!
//! The library runs a conductor over any transport, for instance inside another program:
//!
//! ```no_run
//! use sacp_conductor::{Chain, Options};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let chain = Chain::from_command_lines(&["passthrough-proxy", "my-agent --acp"])?;
//! let exit = sacp_conductor::run_stdio(chain, Options::default()).await;
//! std::process::exit(exit.code().into());
//! # }
//! ```

#![forbid(unsafe_code)]
#![cfg(unix)]

mod account;
mod auth;
mod bridge;
mod chain;
pub mod cli;
mod conductor;
mod endpoint;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
mod in_process;
mod journal;
mod launch;
mod listen;
mod lock;
mod process;
pub mod registry;
mod route;
pub mod router;
mod sessions;
pub mod stderr;
mod trace;
mod versions;
#[cfg(feature = "wasm")]
mod wasm;

#[doc = include_str!("../docs/conductor.md")]
pub mod _chains {}

#[doc = include_str!("../docs/router.md")]
pub mod _router {}

#[doc = include_str!("../docs/benchmarks.md")]
pub mod _benchmarks {}

pub use self::chain::{BridgeMode, Chain, ChainError, Component, InProcess, UnknownBridgeMode};
pub use self::conductor::{Exit, Failure, Options, run, run_stdio};
pub use self::listen::{Listen, serve as serve_listen};
pub use self::sessions::Limits as SessionLimits;
