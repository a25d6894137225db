//! The proxy and agent runtimes and the `#[proxy]`/`#[agent]` macros, driven in-process over
//! the channel transport by a conductor stand-in that plays the editor and the agent.

#![allow(unreachable_pub)]

mod agent;
mod answer_order;
mod common;
mod concurrency;
mod forwarding;
mod handlers;
mod handshake;
#[cfg(feature = "testing")]
mod kit;
mod mcp;
use sacp_test_support::patience;
#[cfg(feature = "rmcp")]
mod rmcp;
#[cfg(feature = "unstable_protocol_v2")]
mod v2;
