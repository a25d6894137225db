//! What the macros read: the role, the handlers and their routes.

use proc_macro2::Span;
use syn::{Ident, ItemImpl, Path, Type};

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
pub(crate) enum Kind {
    Request,
    Notification,
}

impl Kind {
    /// The attribute's name.
    pub(crate) fn attr(self) -> &'static str {
        match self {
            Kind::Request => "on_request",
            Kind::Notification => "on_notification",
        }
    }

    /// The kind whose attribute is `name`, if any.
    pub(crate) fn from_attr(name: &str) -> Option<Kind> {
        match name {
            "on_request" => Some(Kind::Request),
            "on_notification" => Some(Kind::Notification),
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
    pub(crate) kind: Kind,
    pub(crate) from: Side,
    /// The method's name.
    pub(crate) name: Ident,
    /// The message type (the method's second parameter).
    pub(crate) message: Type,
    /// Where the return type is (or the signature, without one).
    pub(crate) output_span: Span,
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
}

/// The attribute arguments of `#[proxy(...)]` / `#[agent(...)]`.
#[derive(Debug, Default)]
pub(crate) struct ServiceArgs {
    pub(crate) krate: Option<Path>,
}

/// The attribute arguments of `#[on_request(...)]` / `#[on_notification(...)]`.
#[derive(Debug)]
pub(crate) struct HandlerArgs {
    pub(crate) kind: Kind,
    pub(crate) from: Side,
    /// Where `from = ...` was written, if it was.
    pub(crate) from_span: Option<Span>,
    /// The attribute, for errors about the handler as a whole.
    pub(crate) span: Span,
}
