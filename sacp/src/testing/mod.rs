//! Test utilities for proxies and agents built with `sacp` (feature `testing`).
//!
//! - [`within`] and [`PATIENCE`]: every await on a peer in a test gets a timeout, and a
//!   failure says what it was waiting for; [`Tally`]: a count handlers bump and tests wait on,
//!   instead of sleeping and polling.

mod patience;

pub use self::patience::{PATIENCE, Tally, within};
