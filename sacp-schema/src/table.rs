//! The shapes of the generated method tables.

/// Who receives an ACP message (the schema's `x-side`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AcpSide {
    /// The agent receives it (the client sends it).
    Agent,
    /// The client receives it (the agent sends it).
    Client,
    /// Either side may send it (`$/cancel_request`), or it passes outside the client–agent
    /// relation: with the feature `unstable`, the proxy-chains RFD's `proxy/initialize` and
    /// `proxy/successor`, between a proxy and its conductor (the schema's `x-side: proxy`).
    Protocol,
}

/// Who receives an MCP message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum McpSide {
    /// The server receives it (the client sends it).
    Server,
    /// The client receives it (the server sends it).
    Client,
    /// Either side may send it (`ping`, `notifications/progress`, ...).
    Both,
}

/// One request of a method table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestEntry<S> {
    /// The JSON-RPC method.
    pub method: &'static str,
    /// The name of the type of the request's `params`.
    pub params_type: &'static str,
    /// The name of the type of a successful response's `result`.
    pub response_type: &'static str,
    /// Who receives the request.
    pub receiver: S,
}

/// One notification of a method table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NotificationEntry<S> {
    /// The JSON-RPC method.
    pub method: &'static str,
    /// The name of the type of the notification's `params`.
    pub params_type: &'static str,
    /// Who receives the notification.
    pub receiver: S,
}
