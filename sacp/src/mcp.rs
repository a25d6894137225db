//! MCP over ACP: proxies that give agents tools, and agents that use them (spec §4).
//!
//! A proxy's tools are plain async methods marked `#[tool]` in its `#[sacp::proxy]` impl. The
//! runtime serves them as one MCP server, declares it to the agent in every `session/new`,
//! `session/load` and `session/resume` (as `{"type":"http","name":…,"url":"acp:<uuid>"}`, a
//! fresh URL per session), and answers the agent's `_mcp/*` messages for it — while the
//! proxy's own handlers, a prompt handler awaiting that very agent included, go on.
//!
//! ```no_run
//! use std::sync::Mutex;
//!
//! use sacp::acp::{PromptRequest, PromptResponse};
//! use sacp::mcp::ToolCx;
//! use sacp::proxy::Cx;
//!
//! /// What `save_insight` takes.
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Insight {
//!     /// What the insight is about.
//!     topic: String,
//!     insight: String,
//! }
//!
//! #[derive(Default)]
//! struct Notebook {
//!     insights: Mutex<Vec<(String, String)>>,
//! }
//!
//! #[sacp::proxy(mcp_name = "notebook")]
//! impl Notebook {
//!     /// Saves an insight for later; answers how many are saved.
//!     #[tool]
//!     async fn save_insight(&self, input: Insight, cx: &ToolCx) -> sacp::Result<String> {
//!         let mut insights = self.insights.lock().unwrap();
//!         insights.push((input.topic, input.insight));
//!         Ok(format!("{} insights saved (session {:?})", insights.len(), cx.session_id()))
//!     }
//!
//!     /// Tells the agent about the notebook before each prompt.
//!     #[on_request]
//!     async fn prompt(&self, req: PromptRequest, cx: &Cx) -> sacp::Result<PromptResponse> {
//!         cx.successor().request(req).await
//!     }
//! }
//!
//! #[tokio::main]
//! async fn main() -> sacp::Result<()> {
//!     sacp::proxy::serve_stdio(Notebook::default()).await
//! }
//! ```
//!
//! A tool:
//! - takes `(&self, input: T, cx: &ToolCx)`, or `(&self, cx: &ToolCx)` for no input. `T`
//!   derives `serde::Deserialize` and `schemars::JsonSchema` (schemars 1): its schema (JSON
//!   Schema 2020-12) is the tool's `inputSchema`, its doc comments the properties'
//!   descriptions. Arguments that do not fit are answered `-32602` with the reason;
//! - is described by its doc comment and named after the method (or `#[tool(name = "…")]`);
//! - returns `Result<O, E>` with `E: Into<sacp::Error>`. `O` is text (`String`, `&str`), a whole
//!   [`CallToolResult`](crate::schema::mcp::CallToolResult), `()` (no content), or any other
//!   `Serialize` value: its JSON becomes `structuredContent` (when it is an object) and a text
//!   block. An `Err` is an `isError: true` result carrying the error's message;
//! - gets in [`ToolCx`] the ACP session of the call, the proxy's [`Cx`](crate::proxy::Cx),
//!   progress notifications (when the caller asked), requests to the agent's MCP client
//!   (`ping`, `sampling/createMessage`, `elicitation/create`), and its cancellation: a
//!   `notifications/cancelled` from the client stops the call.
//!
//! Other servers: any [`McpServer`], given to every session by a method marked
//! `#[mcp_server]` in the impl (`fn name(&self) -> impl McpServer`), or to one session by a
//! handler ([`McpServers::offer`]); with the `rmcp` feature, an existing `rmcp` server
//! (`Rmcp`, in this module under that feature).
//!
//! Agents that speak MCP over ACP themselves use [`McpClient`].
//!
//! This module gathers the pieces under one path: the servers are the proxy runtime's
//! (`sacp::proxy` serves them), the client is the agent runtime's.

pub use crate::agent::McpClient;
pub use crate::jsonrpc::BoxFuture;
#[cfg(feature = "rmcp")]
pub use crate::proxy::mcp_servers::Rmcp;
pub use crate::proxy::mcp_servers::{
    ClientLink, McpConnection, McpMessage, McpServer, McpServers, PROTOCOL_VERSIONS, ToolCx,
    ToolInput, ToolServer, ToolSet,
};
