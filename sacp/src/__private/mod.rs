//! What the code `#[sacp::proxy]`, `#[sacp::agent]` and `#[tool]` generate names: the routes
//! of a `dispatch` (`routes`) and the support of `#[tool]` (`tools`). Not a public API, and nothing in the crate uses it: it sits on top
//! of everything else.

mod routes;
mod tools;

pub use self::routes::{
    NotificationFromAgent, NotificationFromClient, RequestFromAgent, RequestFromClient, TypedReply,
    speaks, take_notification, take_request, unhandled,
};
pub use self::tools::{
    AsIs, AsStructured, AsText, ToolOutput, tool_definition, tool_definition_without_input,
    tool_error, tool_input,
};
pub use crate::runtime::Context;

/// The type of a tool's arguments.
pub type JsonObject = serde_json::Map<String, serde_json::Value>;

/// The versions of a `#[sacp::proxy]` with nothing typed (no handler, tool or MCP server): it
/// reads nothing it forwards, so it speaks every version the SDK forwards.
pub const FORWARDED_VERSIONS: &[u16] = crate::protocol::version::KNOWN;

/// Named by `#[sacp::agent(protocol = 2)]` and `#[sacp::proxy(protocol = …)]` with v2: it
/// exists only with the `unstable_protocol_v2` feature, so that without it the compiler names
/// the feature to turn on.
#[cfg(feature = "unstable_protocol_v2")]
#[allow(non_upper_case_globals)]
pub const protocol_v2_needs_the_sacp_feature_unstable_protocol_v2: () = ();
