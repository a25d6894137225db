//! Against the other SDKs, with their real crates and packages from the registries: the three
//! proxy-chain dialects (`../shared/spec/DIALECTS.md`) — their proxies in our chains (`chain`),
//! ours under their conductors (`foreign_conductor`) —, ACP v2 (`v2`), the unstable surface
//! (`unstable`) and ACP over the network (`remote`). A test binary of its own: the other SDKs' crates are built on first
//! use (`tests/peers`), and that build runs beside these tests only.

// Shared with the `chain` tests, which use the rest of it.
#[allow(dead_code)]
#[path = "../chain/common.rs"]
mod common;
#[path = "../../benches/support/processes.rs"]
mod processes;

mod chain;
mod foreign_conductor;
mod peers;
mod remote;
mod unstable;
mod v2;
