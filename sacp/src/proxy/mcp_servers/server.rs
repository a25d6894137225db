//! What an MCP server is to the proxy runtime: something that opens MCP connections, each
//! handling the MCP messages of one `_mcp/connect` … `_mcp/disconnect`, and able to talk back
//! to the agent's MCP client through a [`ClientLink`].

use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::acp::SessionId;
use crate::jsonrpc::{BoxFuture, Error, PendingResponse, RawJson};
use crate::lock::lock;
use crate::protocol::mcp::{self, MessageParams};
use crate::proxy::Cx;

/// An MCP server that a proxy gives agents over ACP: its `#[tool]` methods
/// ([`ToolServer`](super::ToolServer)), an `rmcp` server (feature `rmcp`), or your own.
pub trait McpServer: Send + Sync + 'static {
    /// The name the server goes by in `mcpServers` (what the agent shows its tools under).
    fn name(&self) -> String;

    /// Opens one MCP connection: it gets every MCP message of one `_mcp/connect`, and talks
    /// back to that connection's client through `link`.
    fn connect(&self, link: ClientLink) -> Box<dyn McpConnection>;
}

/// One MCP connection of an [`McpServer`]: one MCP session with one client.
pub trait McpConnection: Send + Sync + 'static {
    /// An MCP request from the client; the future gives the MCP result (or error). Dropping
    /// it (the request was cancelled at the ACP level) must stop its work.
    fn request(&self, message: McpMessage) -> BoxFuture<Result<RawJson, Error>>;

    /// An MCP notification from the client (`notifications/initialized`,
    /// `notifications/cancelled`, …).
    fn notify(&self, message: McpMessage);

    /// The client disconnected (or the session ended): let go of everything.
    fn close(&self) {}
}

/// An MCP message as it came in `_mcp/request` or `_mcp/notification`.
#[derive(Debug, Clone)]
pub struct McpMessage {
    /// The MCP method.
    pub method: String,
    /// The MCP params, as they are.
    pub params: Option<RawJson>,
    /// The id the MCP client gave a request (when the bridge or agent passed it on): what
    /// `notifications/cancelled` names.
    pub id: Option<Value>,
}

/// The ACP session an MCP server's URL was given to, once it is known (agents often connect
/// before they answer `session/new`).
#[derive(Debug, Clone, Default)]
pub(crate) struct SessionSlot(Arc<Mutex<Option<SessionId>>>);

impl SessionSlot {
    pub(crate) fn known(session: SessionId) -> SessionSlot {
        SessionSlot(Arc::new(Mutex::new(Some(session))))
    }

    pub(crate) fn get(&self) -> Option<SessionId> {
        lock(&self.0).clone()
    }

    /// Sets it, unless it is set already.
    pub(crate) fn set(&self, session: SessionId) {
        let mut slot = lock(&self.0);
        slot.get_or_insert(session);
    }
}

/// How an MCP connection talks back to its client (the agent, or the conductor's bridge on its
/// behalf): `_mcp/request` and `_mcp/notification` sent down to the proxy's successor.
#[derive(Debug, Clone)]
pub struct ClientLink {
    cx: Cx,
    /// The connection, or for a stateless client the server id.
    connection_id: String,
    session: SessionSlot,
    /// Whether the client calls statelessly (the RFD's `mcp/message`): then it is told in
    /// that form, about the request in progress.
    stateless: bool,
}

impl ClientLink {
    pub(crate) fn new(cx: Cx, connection_id: String, session: SessionSlot) -> ClientLink {
        ClientLink {
            cx,
            connection_id,
            session,
            stateless: false,
        }
    }

    /// The link of a server the client calls statelessly, by `server_id`.
    pub(crate) fn stateless(cx: Cx, server_id: String, session: SessionSlot) -> ClientLink {
        ClientLink {
            stateless: true,
            ..ClientLink::new(cx, server_id, session)
        }
    }

    /// The ACP session this connection's server was given to, once known.
    pub fn session_id(&self) -> Option<SessionId> {
        self.session.get()
    }

    /// The connection's id (as `_mcp/*` messages name it).
    pub fn connection_id(&self) -> &str {
        &self.connection_id
    }

    /// The proxy's context: its client and successor.
    pub fn proxy(&self) -> &Cx {
        &self.cx
    }

    /// The `_mcp/*` method and params that carry an MCP message of `kind` to the client, in
    /// the conductor's dialect.
    fn params(
        &self,
        kind: &'static str,
        method: String,
        params: Option<RawJson>,
        related: Option<Value>,
    ) -> Result<(&'static str, RawJson), Error> {
        let dialect = self.cx.neighbours().dialect();
        if self.stateless {
            // Stateless: a server speaks only about a request in progress, naming it.
            let Some(request_id) = related else {
                return Err(Error::method_not_found(&method).with_data(
                    "under ACP's RFD an MCP server over ACP sends only notifications about a \
                     request in progress",
                ));
            };
            if kind == mcp::REQUEST {
                return Err(Error::method_not_found(&method)
                    .with_data("under ACP's RFD an MCP server over ACP cannot send requests"));
            }
            let message = mcp::RfdMessage {
                server_id: self.connection_id.clone(),
                request_id,
                method,
                params,
            };
            return Ok((mcp::RFD_MESSAGE, RawJson::to_raw(&message)?));
        }
        if dialect == crate::protocol::dialect::Dialect::S11 {
            let message = mcp::S11Message::new(self.connection_id.clone(), method, params);
            return Ok((mcp::S11_MESSAGE, RawJson::to_raw(&message)?));
        }
        let wrapped = RawJson::to_raw(&MessageParams {
            connection_id: self.connection_id.clone(),
            method,
            params,
            mcp_request_id: None,
            related_mcp_request_id: related,
        })?;
        Ok((kind, wrapped))
    }

    /// Sends an MCP request to the client (`ping`, `sampling/createMessage`, …); `related` is
    /// the client's id of the request being handled, if it is on that request's behalf.
    pub fn request(
        &self,
        method: impl Into<String>,
        params: Option<RawJson>,
        related: Option<Value>,
    ) -> PendingResponse<RawJson> {
        match self.params(mcp::REQUEST, method.into(), params, related) {
            Ok((method, wrapped)) => self.cx.successor().request_raw(method, Some(wrapped)),
            Err(e) => PendingResponse::failed(e, Ok),
        }
    }

    /// Sends an MCP notification to the client (`notifications/progress`, …).
    pub async fn notify(
        &self,
        method: impl Into<String>,
        params: Option<RawJson>,
        related: Option<Value>,
    ) -> Result<(), Error> {
        let (method, wrapped) = self.params(mcp::NOTIFICATION, method.into(), params, related)?;
        self.cx.successor().notify_raw(method, Some(wrapped)).await
    }
}
