//! What the code `#[sacp::proxy]` and `#[sacp::agent]` generate names. Not a public API: it
//! only re-exports the rungs of the dispatch ladder (see `ladder.rs`) and the support of
//! `#[tool]` (see `mcp/support.rs`).

pub use crate::ladder::{
    Fallback, NotificationFromAgent, NotificationFromClient, RequestFromAgent, RequestFromClient,
    TypedReply, take_notification, take_request, unhandled,
};
pub use crate::mcp::expansion::*;
