//! The conductor as the process cargo built, with the example components as processes, driven
//! over real pipes by an editor stand-in (`common::Editor`).

// A test may tell one long story (a drop, a reconnect, a replay) in one function.
#![allow(clippy::too_many_lines)]

mod answer_order;
mod between_turns;
mod bridge;
mod common;
mod concurrency;
mod conformance;
mod content;
mod editor_setup;
mod endings;
mod failures;
mod faults;
mod histories;
mod in_process;
mod in_process_agent;
mod lossless;
mod mcp;
mod parity;
mod registry;
use sacp_test_support::processes;
mod router;
mod router_remote;
mod router_sessions;
mod router_ssh;
mod routing;
mod stderr;
mod strict;
mod trace;
mod unstable;
mod v2;
mod versions;
