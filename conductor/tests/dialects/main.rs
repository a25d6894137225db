//! The three proxy-chain dialects (`../shared/spec/DIALECTS.md`), with real crates of the other
//! SDKs from the registry: their proxies in our chains (`chain`), ours under their conductors
//! (`foreign_conductor`). A test binary of its own: the other SDKs' crates are built on first
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
mod unstable;
mod v2;
