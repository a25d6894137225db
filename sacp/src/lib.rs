//! # sacp
//!
//! A Rust SDK for composing [Agent Client Protocol](https://agentclientprotocol.com) agents out
//! of proxies, and the conductor that runs such a chain.
//!
//! This crate is built in layers:
//! - [`jsonrpc`]: JSON-RPC 2.0 over newline-delimited streams or in-process channels — wire
//!   messages with raw payloads, framing, transports, and connections with in-order dispatch,
//!   cancellation and timeouts.

pub mod jsonrpc;

/// The README's examples, compiled as doc tests so they cannot drift.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeDoctests;
