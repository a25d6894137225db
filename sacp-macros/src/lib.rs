//! The attribute macros of [`sacp-sdk`](https://docs.rs/sacp-sdk) (imported as `sacp`). Use
//! them through it (`#[sacp::proxy]`, `#[sacp::agent]`); the generated code names `::sacp`
//! paths.
//!
//! - `#[proxy]` on an inherent `impl` block makes the type a `sacp::proxy::Proxy`;
//! - `#[agent]` makes it a `sacp::agent::Agent`;
//! - inside, `#[on_request]` and `#[on_notification]` (optionally `(from = client | agent)` in a
//!   proxy) mark the handler methods: `async fn name(&self, message: T, cx: &Cx) ->
//!   Result<T::Response, E>` (or `Result<(), E>` for a notification), where `E` converts into
//!   `sacp::Error`. Handlers run concurrently, hence `&self`;
//! - in a proxy, `#[tool]`, `#[mcp_server]` and `#[content("…")]` mark its MCP tools, its MCP
//!   servers and its own transformations of a content type.
//!
//! The crate is split by stage: `parse` reads attributes, `model` holds what was read,
//! `validate` checks handler signatures and routes, `expand` writes the impl, `fallback`
//! writes what is emitted next to errors (so one mistake gives one error, not a cascade).

#![forbid(unsafe_code)]

mod expand;
mod fallback;
mod model;
mod parse;
mod validate;

use proc_macro::TokenStream;

/// Makes an inherent `impl` block an SACP proxy. See `sacp::proxy`.
///
/// Inside, `#[on_request]` and `#[on_notification]` mark handlers, `#[tool]` the methods of
/// the proxy's MCP server, `#[mcp_server]` methods that make servers of their own; everything
/// no handler takes is forwarded unchanged.
///
/// Keys (`#[sacp::proxy(key = value, …)]`), all optional:
/// - `crate = path`: where the `sacp` crate is, when it is not `::sacp` (a renamed dependency,
///   or a crate that re-exports it);
/// - `mcp_name = "name"`: the name of the MCP server of the `#[tool]` methods (default: the
///   type's name in kebab case);
/// - `protocol = N` or `protocol = [N, M]`: the ACP versions the proxy speaks (v2 needs
///   `sacp`'s feature `unstable_protocol_v2`). Without it: v1 for a proxy with a handler, tool
///   or MCP server; every version the SDK knows for one with nothing typed (it reads nothing
///   it forwards, so a v2 chain through it stays v2). A handler whose message type is of a
///   version not declared (a `sacp::acp::v2` type under the default, a v1 type under
///   `protocol = 2`) is a compile error at that type, saying what to declare.
#[proc_macro_attribute]
pub fn proxy(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::service(model::Role::Proxy, attr.into(), item.into()).into()
}

/// Makes an inherent `impl` block an ACP agent. See `sacp::agent`.
///
/// Inside, `#[on_request]` and `#[on_notification]` mark handlers; what no handler takes is
/// answered `-32601` (a request) or dropped (a notification).
///
/// Keys (`#[sacp::agent(key = value, …)]`), all optional:
/// - `crate = path`: where the `sacp` crate is, when it is not `::sacp`;
/// - `mcp_over_acp`: the agent speaks MCP over ACP itself (it declares `mcpCapabilities.acp`),
///   so a conductor gives it the proxies' `acp:` MCP servers as they are, without a bridge;
/// - `protocol = N` or `protocol = [N, M]`: the ACP versions the agent speaks (default v1; v2
///   needs `sacp`'s feature `unstable_protocol_v2`); a handler of another version's message
///   type is a compile error, as in `#[proxy]`.
#[proc_macro_attribute]
pub fn agent(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::service(model::Role::Agent, attr.into(), item.into()).into()
}

/// Marks a request handler inside a `#[proxy]` or `#[agent]` impl block: `async fn name(&self,
/// request: T, cx: &Cx) -> Result<T::Response, E>`, `T` an ACP request type of `sacp::acp`.
///
/// Key, in a `#[proxy]` only: `from = client` (the default: a request the client sends on its
/// way to the agent) or `from = agent` (a request the agent sends on its way to the client,
/// such as `session/request_permission`).
#[proc_macro_attribute]
pub fn on_request(_attr: TokenStream, item: TokenStream) -> TokenStream {
    fallback::misplaced(model::MessageKind::Request, item.into()).into()
}

/// Marks a notification handler inside a `#[proxy]` or `#[agent]` impl block: `async fn
/// name(&self, notification: T, cx: &Cx) -> Result<(), E>`.
///
/// Key, in a `#[proxy]` only: `from = client` (the default) or `from = agent` (a notification
/// the agent sends, such as `session/update`).
#[proc_macro_attribute]
pub fn on_notification(_attr: TokenStream, item: TokenStream) -> TokenStream {
    fallback::misplaced(model::MessageKind::Notification, item.into()).into()
}

/// Marks an MCP tool inside a `#[proxy]` impl block: `async fn name(&self, input: I, cx:
/// &ToolCx) -> Result<O, E>` (the input optional), its doc comment the tool's description.
/// See `sacp::mcp`.
///
/// Key: `name = "tool_name"`: the tool's name (default: the method's).
#[proc_macro_attribute]
pub fn tool(_attr: TokenStream, item: TokenStream) -> TokenStream {
    fallback::misplaced_mcp("tool", item.into()).into()
}

/// Marks a proxy's own transformation of a content type inside a `#[proxy]` impl block:
/// `fn name(&self, block: ContentBlock) -> ContentBlock`, called for each block of the media
/// type or range (`#[content("text/html")]`, `#[content("image/*")]`) on its way to a
/// neighbour that does not take it. The proxy declares in `initialize` that it takes the type,
/// so the conductor leaves it to the proxy. See `sacp::protocol::content`.
#[proc_macro_attribute]
pub fn content(_attr: TokenStream, item: TokenStream) -> TokenStream {
    fallback::misplaced_mcp("content", item.into()).into()
}

/// Marks a method that makes an MCP server for every session, inside a `#[proxy]` impl block.
/// See `sacp::mcp`.
#[proc_macro_attribute]
pub fn mcp_server(_attr: TokenStream, item: TokenStream) -> TokenStream {
    fallback::misplaced_mcp("mcp_server", item.into()).into()
}
