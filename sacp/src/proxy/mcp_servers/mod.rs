//! The MCP servers a proxy gives agents over ACP (spec §4), as the proxy runtime serves them:
//! which `acp:` URL is whose and which connection is open ([`registry`]), what a server is to
//! the runtime ([`McpServer`], `server.rs`), the server of a proxy's `#[tool]` methods
//! (`tools.rs`), and `rmcp` servers (`rmcp.rs`, feature `rmcp`). Users reach them through the
//! [`crate::mcp`] façade.

pub(crate) mod registry;
#[cfg(feature = "rmcp")]
mod rmcp;
mod server;
mod tools;

pub use self::registry::McpServers;
#[cfg(feature = "rmcp")]
pub use self::rmcp::Rmcp;
pub use self::server::{ClientLink, McpConnection, McpMessage, McpServer};
pub use self::tools::{PROTOCOL_VERSIONS, ToolCx, ToolInput, ToolServer, ToolSet};
