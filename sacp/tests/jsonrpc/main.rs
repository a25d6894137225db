//! Runtime integration tests of `sacp::jsonrpc`: two connections over in-process transports, or
//! one connection driven line by line over a raw byte stream.

#![allow(unreachable_pub)]

mod bad_input;
mod cancellation;
mod common;
mod lossless;
mod ordering;
use sacp_test_support::patience;
mod peer_closed;
mod round_trips;
