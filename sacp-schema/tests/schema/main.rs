//! Round-trip, coverage and differential tests of the generated protocol types.
//!
//! - `fixtures/*.json`: messages written by hand from the schemas, always run: one for every
//!   method and notification of each table and every `SessionUpdate` kind;
//! - the documentation corpus in `$SACP_SCHEMA_DIR/examples/` (messages taken from the
//!   protocols' own docs), run when `SACP_SCHEMA_DIR` is set (`.ci/run` sets it);
//! - a differential test against the hand-written `agent-client-protocol-schema` crate.
//!
//! Every case deserializes, re-serializes and compares as JSON values, and also checks the
//! variant it decoded to: a message decoded as the wrong variant re-serializes identically.

#![allow(unreachable_pub, clippy::print_stderr)]

mod coverage;
mod differential;
mod docs_corpus;
mod fixtures;
mod harness;
