//! The attribute macros of [sacp](https://docs.rs/sacp). Use them through `sacp`
//! (`#[sacp::proxy]`, `#[sacp::agent]`); the generated code names `::sacp` paths.
//!
//! - `#[proxy]` on an inherent `impl` block makes the type a `sacp::proxy::Proxy`;
//! - `#[agent]` makes it a `sacp::agent::Agent`;
//! - inside, `#[on_request]` and `#[on_notification]` (optionally `(from = client | agent)` in a
//!   proxy) mark the handler methods: `async fn name(&self, message: T, cx: &Cx) ->
//!   Result<T::Response, E>` (or `Result<(), E>` for a notification), where `E` converts into
//!   `sacp::Error`. Handlers run concurrently, hence `&self`.
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
#[proc_macro_attribute]
pub fn proxy(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::service(model::Role::Proxy, attr.into(), item.into()).into()
}

/// Makes an inherent `impl` block an ACP agent. See `sacp::agent`.
#[proc_macro_attribute]
pub fn agent(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::service(model::Role::Agent, attr.into(), item.into()).into()
}

/// Marks a request handler inside a `#[proxy]` or `#[agent]` impl block.
#[proc_macro_attribute]
pub fn on_request(_attr: TokenStream, item: TokenStream) -> TokenStream {
    fallback::misplaced(model::Kind::Request, item.into()).into()
}

/// Marks a notification handler inside a `#[proxy]` or `#[agent]` impl block.
#[proc_macro_attribute]
pub fn on_notification(_attr: TokenStream, item: TokenStream) -> TokenStream {
    fallback::misplaced(model::Kind::Notification, item.into()).into()
}

/// Marks an MCP tool inside a `#[proxy]` impl block. See `sacp::mcp`.
#[proc_macro_attribute]
pub fn tool(_attr: TokenStream, item: TokenStream) -> TokenStream {
    fallback::misplaced_mcp("tool", item.into()).into()
}

/// Marks a method that makes an MCP server for every session, inside a `#[proxy]` impl block.
/// See `sacp::mcp`.
#[proc_macro_attribute]
pub fn mcp_server(_attr: TokenStream, item: TokenStream) -> TokenStream {
    fallback::misplaced_mcp("mcp_server", item.into()).into()
}
