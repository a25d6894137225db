//! # sacp-schema
//!
//! The protocol types of sacp, generated from the pinned JSON Schemas by
//! `cargo xtask regen-schema` (never edited by hand):
//! - [`acp::v1`]: Agent Client Protocol v1 (stable);
//! - [`acp::v2`]: Agent Client Protocol v2 (draft);
//! - with the feature `unstable`, both as ACP's unstable schemas define them: the same types
//!   with the unstable methods, fields and updates added (see [`acp`]); one generated file per
//!   version holds both, what only the unstable schema has under `cfg(feature = "unstable")`;
//! - [`mcp`]: Model Context Protocol 2025-11-25 (messages of older MCP versions deserialize
//!   where the schemas agree).
//!
//! Each module has a `methods` table generated in the same pass from the schema's `x-method` and
//! `x-side` annotations (ACP) or `method` constants (MCP): every request's method, params and
//! response types and who receives it, every notification's method and receiver, a `METHOD`
//! constant on each message type, and `for_each_*` macros that hand the table to a callback
//! macro.
//!
//! ```
//! use sacp_schema::acp::v1::{InitializeRequest, ProtocolVersion, SessionUpdate};
//!
//! assert_eq!(InitializeRequest::METHOD, "initialize");
//! let update: SessionUpdate = serde_json::from_str(
//!     r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Hi"}}"#,
//! ).unwrap();
//! assert!(matches!(update, SessionUpdate::AgentMessageChunk(_)));
//! # let _ = ProtocolVersion(1);
//! ```
//!
//! Every struct has `new(required fields…)` (in the schema's order) and a setter per optional
//! field; what was absent stays absent when written back:
//!
//! ```
//! use sacp_schema::acp::v1::{ContentBlock, ErrorCode, PromptRequest, TextContent};
//!
//! let prompt = PromptRequest::new("sess_1".to_owned(), vec![ContentBlock::Text(TextContent::new("Hi"))]);
//! assert_eq!(
//!     serde_json::to_string(&prompt).unwrap(),
//!     r#"{"prompt":[{"type":"text","text":"Hi"}],"sessionId":"sess_1"}"#,
//! );
//! assert_eq!(ErrorCode::METHOD_NOT_FOUND, ErrorCode(-32601));
//! ```

#![forbid(unsafe_code)]

mod origin;
mod patch;
pub mod table;

pub use self::origin::{HasOrigin, Origin};
pub use self::patch::Patch;

#[doc(hidden)]
pub mod lenient;

// The generated files, declared here and re-exported under their protocol's path below.
/// The method table of ACP v1.
#[allow(clippy::all, missing_docs)]
#[rustfmt::skip]
#[path = "generated/acp_v1_methods.rs"]
#[doc(hidden)]
pub mod acp_v1_methods;
#[allow(
    clippy::all,
    clippy::pedantic,
    missing_docs,
    rustdoc::all,
    unreachable_pub,
    dead_code
)]
#[rustfmt::skip]
#[path = "generated/acp_v1.rs"]
mod acp_v1_types;
/// The method table of ACP v2.
#[allow(clippy::all, missing_docs)]
#[rustfmt::skip]
#[path = "generated/acp_v2_methods.rs"]
#[doc(hidden)]
pub mod acp_v2_methods;
#[allow(
    clippy::all,
    clippy::pedantic,
    missing_docs,
    rustdoc::all,
    unreachable_pub,
    dead_code
)]
#[rustfmt::skip]
#[path = "generated/acp_v2.rs"]
mod acp_v2_types;
/// The method table of MCP 2025-11-25.
#[allow(clippy::all, missing_docs)]
#[rustfmt::skip]
#[path = "generated/mcp_methods.rs"]
#[doc(hidden)]
pub mod mcp_methods;
#[allow(
    clippy::all,
    clippy::pedantic,
    missing_docs,
    rustdoc::all,
    unreachable_pub,
    dead_code
)]
#[rustfmt::skip]
#[path = "generated/mcp.rs"]
mod mcp_types;

/// Agent Client Protocol.
///
/// With the feature `unstable`, both versions are as ACP's unstable schemas
/// (`schema.unstable.json`: forks, subagents, system prompts, session titles, archive and
/// status, providers, `auth/status`, the RFD's `proxy/*` and `mcp/message`, …) define them
/// instead of the stable ones. That surface is a strict superset — every stable type, field, variant and
/// constructor stays as it is, which `cargo xtask regen-schema` checks — so turning the
/// feature on never changes the meaning of code written without it; only a `match` on one of
/// the enums that gain variants, written without a `_` arm, needs one.
#[cfg_attr(feature = "unstable", doc = "")]
#[cfg_attr(feature = "unstable", doc = include_str!("generated/unstable.md"))]
pub mod acp {
    /// ACP protocol v1 (stable), from `acp/v1/schema.json`.
    pub mod v1 {
        pub use crate::acp_v1_types::*;

        pub use crate::acp_v1_methods as methods;
    }

    /// ACP protocol v2 (draft), from `acp/v2/schema.json`.
    pub mod v2 {
        pub use crate::acp_v2_types::*;

        pub use crate::acp_v2_methods as methods;
    }
}

/// Model Context Protocol 2025-11-25, from `mcp/2025-11-25/schema.json`.
pub mod mcp {
    pub use crate::mcp_types::*;

    pub use crate::mcp_methods as methods;
}
