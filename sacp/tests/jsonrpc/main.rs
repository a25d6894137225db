//! Runtime integration tests of `sacp::jsonrpc`: two connections over in-process transports, or
//! one connection driven line by line over a raw byte stream.

#![allow(unreachable_pub)]

mod bad_input;
mod cancellation;
mod common;
mod lossless;
mod ordering;
#[path = "../../src/testing/patience.rs"]
mod patience;
mod peer_closed;
mod round_trips;
