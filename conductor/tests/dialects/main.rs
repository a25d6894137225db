//! Against the other SDKs, with their real crates and packages from the registries: the three
//! proxy-chain dialects (see `sacp::protocol::dialect`) — their proxies in our chains (`chain`),
//! ours under their conductors (`foreign_conductor`) —, ACP v2 (`v2`), the unstable surface
//! (`unstable`) and ACP over the network (`remote`). A test binary of its own: the other SDKs' crates are built on first
//! use (`tests/peers`), and that build runs beside these tests only.

// A test may tell one long story (a drop, a reconnect, a replay) in one function.
#![allow(clippy::too_many_lines)]

/// The workspace's test set-up, and the conductor this test binary was built with.
mod common {
    pub(crate) use sacp_test_support::*;

    pub(crate) fn conductor() -> &'static str {
        env!("CARGO_BIN_EXE_conductor")
    }
}
use sacp_test_support::processes;

mod across_machines;
mod attach;
mod attach_load;
mod attach_sdk;
mod between_turns;
mod chain;
mod cursors;
mod foreign_conductor;
mod journal;
mod journal_only;
mod offers;
mod ownership;
mod peers;
mod raw;
mod remote;
mod restart;
mod sessions;
mod sessions_rejoin;
mod turns;
mod unstable;
mod v2;
mod wasm;
