//! What the macros read: the role, the handlers and their routes.

use proc_macro2::Span;
use syn::{Expr, Ident, ItemImpl, Path, Type};

/// Which macro is expanding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    Proxy,
    Agent,
}

impl Role {
    /// The attribute's name.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Role::Proxy => "proxy",
            Role::Agent => "agent",
        }
    }
}

/// Which kind of handler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MessageKind {
    Request,
    Notification,
}

impl MessageKind {
    /// The attribute's name.
    pub(crate) fn attr(self) -> &'static str {
        match self {
            MessageKind::Request => "on_request",
            MessageKind::Notification => "on_notification",
        }
    }

    /// The kind whose attribute is `name`, if any.
    pub(crate) fn from_attr(name: &str) -> Option<MessageKind> {
        match name {
            "on_request" => Some(MessageKind::Request),
            "on_notification" => Some(MessageKind::Notification),
            _ => None,
        }
    }
}

/// The side a handled message comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    Client,
    Agent,
}

impl Side {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Side::Client => "client",
            Side::Agent => "agent",
        }
    }
}

/// One handler method.
#[derive(Debug)]
pub(crate) struct Handler {
    pub(crate) kind: MessageKind,
    pub(crate) from: Side,
    /// The method's name.
    pub(crate) name: Ident,
    /// The message type (the method's second parameter).
    pub(crate) message: Type,
    /// Where the return type is (or the signature, without one).
    pub(crate) output_span: Span,
}

/// One `#[tool]` method.
#[derive(Debug)]
pub(crate) struct Tool {
    /// The tool's name (the method's, or `#[tool(name = "…")]`).
    pub(crate) name: String,
    /// The method.
    pub(crate) method: Ident,
    /// The input type, if the tool takes one.
    pub(crate) input: Option<Type>,
    /// The doc comment.
    pub(crate) description: String,
    /// Where the return type is.
    pub(crate) output_span: Span,
}

/// One `#[content("…")]` method: a proxy's own transformation of a content type.
#[derive(Debug)]
pub(crate) struct Content {
    /// The media range it transforms (`text/html`, `image/*`), lowercase.
    pub(crate) range: String,
    /// The method.
    pub(crate) method: Ident,
}

/// The attribute arguments of `#[content("…")]`.
#[derive(Debug)]
pub(crate) struct ContentArgs {
    /// The media range, when it was one.
    pub(crate) range: Option<String>,
    /// The attribute, for errors about the method as a whole.
    pub(crate) span: Span,
}

/// A whole `#[proxy]` or `#[agent]` block, checked.
#[derive(Debug)]
pub(crate) struct Service {
    pub(crate) role: Role,
    /// Where `sacp` is: `::sacp` unless `crate = path` says otherwise.
    pub(crate) krate: Path,
    /// The user's impl block, helper attributes removed.
    pub(crate) item: ItemImpl,
    pub(crate) handlers: Vec<Handler>,
    pub(crate) tools: Vec<Tool>,
    /// The `#[mcp_server]` methods.
    pub(crate) servers: Vec<Ident>,
    /// The `#[content("…")]` methods.
    pub(crate) contents: Vec<Content>,
    /// `mcp_name = …`, if given.
    pub(crate) mcp_name: Option<Expr>,
    /// `#[agent(mcp_over_acp)]`.
    pub(crate) mcp_over_acp: bool,
    /// `protocol = 2` / `protocol = [1, 2]`: the ACP versions spoken, ascending (`None`: the
    /// SDK's default, v1).
    pub(crate) protocols: Option<Vec<u16>>,
}

/// The attribute arguments of `#[proxy(...)]` / `#[agent(...)]`.
#[derive(Debug, Default)]
pub(crate) struct ServiceArgs {
    pub(crate) krate: Option<Path>,
    pub(crate) mcp_name: Option<Expr>,
    /// `#[agent(mcp_over_acp)]`: the agent speaks MCP over ACP itself.
    pub(crate) mcp_over_acp: bool,
    /// `protocol = …`.
    pub(crate) protocols: Option<Vec<u16>>,
}

/// The attribute arguments of `#[tool(...)]`.
#[derive(Debug)]
pub(crate) struct ToolArgs {
    /// `name = "…"`, if given.
    pub(crate) name: Option<String>,
    /// The attribute, for errors about the tool as a whole.
    pub(crate) span: Span,
}

/// What a helper attribute on a method makes of it.
#[derive(Debug)]
pub(crate) enum MethodAttr {
    Handler(HandlerArgs),
    Tool(ToolArgs),
    /// `#[mcp_server]`, with its span.
    McpServer(Span),
    Content(ContentArgs),
}

impl MethodAttr {
    pub(crate) fn span(&self) -> Span {
        match self {
            MethodAttr::Handler(args) => args.span,
            MethodAttr::Tool(args) => args.span,
            MethodAttr::McpServer(span) => *span,
            MethodAttr::Content(args) => args.span,
        }
    }
}

/// The attribute arguments of `#[on_request(...)]` / `#[on_notification(...)]`.
#[derive(Debug)]
pub(crate) struct HandlerArgs {
    pub(crate) kind: MessageKind,
    pub(crate) from: Side,
    /// Where `from = ...` was written, if it was.
    pub(crate) from_span: Option<Span>,
    /// The attribute, for errors about the handler as a whole.
    pub(crate) span: Span,
}
