//! The MCP client side of MCP over ACP, for agents that speak it themselves (they declare
//! `_meta.mcp_acp_transport: true` in their `initialize` result): connect to an `acp:` server,
//! list its tools, call them. Also the RFD's stateless form (agents declaring
//! `mcpCapabilities.acp`, servers declared `{"type": "acp", "serverId"}`): one `mcp/message`
//! per MCP request, no connection, no `initialize` ([`McpClient::stateless`]).

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value};

use super::Cx;
use crate::acp::SessionId;
use crate::jsonrpc::{Error, RawJson, decode_typed};
use crate::lock::lock;
use crate::protocol::mcp::{
    self, ConnectParams, ConnectResult, DisconnectParams, MessageParams, RfdMessage,
};
use crate::runtime::Neighbour;
use crate::schema::mcp::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, Implementation,
    InitializeRequestParams, InitializeResult, ListToolsResult, PaginatedRequestParams, Tool,
};

/// The MCP connections an agent has open: where the server's own requests (`ping`, …) and
/// notifications (progress, logging) are answered or noted.
#[derive(Debug, Default)]
pub(crate) struct Clients {
    open: Mutex<HashSet<String>>,
}

impl Clients {
    /// Whether an `_mcp/request` or `_mcp/notification` from the client side belongs to one of
    /// this agent's connections.
    pub(crate) fn owns(&self, params: Option<&RawJson>) -> bool {
        mcp::connection_of(params).is_some_and(|id| lock(&self.open).contains(&id))
    }

    /// A request of a server: `ping` is answered, everything else is not supported (the client
    /// declared no capabilities).
    pub(crate) fn answer(params: Option<&RawJson>) -> Result<RawJson, Error> {
        let message = MessageParams::parse(params)?;
        match message.method.as_str() {
            "ping" => Ok(RawJson::empty_object()),
            other => Err(Error::method_not_found(other)),
        }
    }

    /// A notification of a server (progress, logging): noted in the log.
    pub(crate) fn note(params: Option<&RawJson>) {
        if let Ok(message) = MessageParams::parse(params) {
            tracing::debug!(
                connection = %message.connection_id,
                method = %message.method,
                params = ?message.params,
                "MCP notification from a server"
            );
        }
    }
}

/// An MCP connection to a server reached over ACP (`acp:` URL), for an agent.
///
/// ```no_run
/// # async fn run(cx: &sacp::agent::Cx, url: &str) -> sacp::Result<()> {
/// use sacp::mcp::McpClient;
///
/// let client = McpClient::connect(cx, url, None).await?;
/// for tool in client.list_tools().await? {
///     println!("{}: {}", tool.name, tool.description.unwrap_or_default());
/// }
/// let result = client.call_tool("save_insight", serde_json::json!({"topic": "t", "insight": "i"}).as_object().cloned()).await?;
/// client.close().await;
/// # let _ = result; Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct McpClient {
    peer: Neighbour,
    /// The connection (`_mcp/*`), or the server id (the RFD's stateless `mcp/message`).
    connection_id: String,
    stateless: bool,
    server: InitializeResult,
    next_id: Arc<AtomicU64>,
    clients: Arc<Clients>,
}

impl McpClient {
    /// Opens a connection to the server at `acp_url` (`_mcp/connect`, naming the ACP session
    /// when given) and goes through MCP's `initialize`.
    pub async fn connect(
        cx: &Cx,
        acp_url: &str,
        session: Option<&SessionId>,
    ) -> Result<McpClient, Error> {
        let peer = cx.client();
        let connect = ConnectParams {
            acp_url: acp_url.to_owned(),
            session_id: session.map(|s| s.0.clone()),
        };
        let connected = peer
            .request_raw(mcp::CONNECT, Some(RawJson::to_raw(&connect)?))
            .await?;
        let ConnectResult { connection_id } = decode_typed(connected)?;
        let clients = cx.clients().clone();
        lock(&clients.open).insert(connection_id.clone());
        let mut client = McpClient {
            peer,
            connection_id,
            stateless: false,
            server: InitializeResult::new(
                crate::schema::mcp::ServerCapabilities::new(),
                "",
                Implementation::new("", ""),
            ),
            next_id: Arc::new(AtomicU64::new(1)),
            clients,
        };
        let init = InitializeRequestParams::new(
            ClientCapabilities::new(),
            Implementation::new("sacp", env!("CARGO_PKG_VERSION")),
            mcp::PROTOCOL_VERSIONS[0],
        );
        let answer = client
            .request("initialize", Some(RawJson::to_raw(&init)?))
            .await;
        client.server = match answer.and_then(decode_typed) {
            Ok(server) => server,
            Err(e) => {
                client.close().await;
                return Err(e);
            }
        };
        client.notify("notifications/initialized", None).await?;
        Ok(client)
    }

    /// A server declared in the RFD's form, `{"type": "acp", "name", "serverId"}`: each request
    /// is one `mcp/message` carrying MCP 2026-07-28 (its revision, capabilities and client
    /// info in the request's `_meta`), with no connection to open and no `initialize`.
    pub fn stateless(cx: &Cx, server_id: impl Into<String>) -> McpClient {
        McpClient {
            peer: cx.client(),
            connection_id: server_id.into(),
            stateless: true,
            server: InitializeResult::new(
                crate::schema::mcp::ServerCapabilities::new(),
                mcp::RFD_REVISION,
                Implementation::new("", ""),
            ),
            next_id: Arc::new(AtomicU64::new(1)),
            clients: cx.clients().clone(),
        }
    }

    /// An RFD `mcp/message` request: the MCP answer, `{"result"}` or `{"error"}`, unwrapped.
    async fn stateless_request(
        &self,
        id: u64,
        method: String,
        params: Option<RawJson>,
    ) -> Result<RawJson, Error> {
        let mut params: Map<String, Value> = match params {
            Some(p) => p.parse()?,
            None => Map::new(),
        };
        let meta = params
            .entry("_meta")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(meta) = meta {
            meta.insert(mcp::RFD_VERSION_KEY.into(), mcp::RFD_REVISION.into());
            meta.insert(mcp::RFD_CAPABILITIES_KEY.into(), Value::Object(Map::new()));
            meta.insert(
                mcp::RFD_CLIENT_INFO_KEY.into(),
                serde_json::json!({"name": "sacp", "version": env!("CARGO_PKG_VERSION")}),
            );
        }
        let message = RfdMessage {
            server_id: self.connection_id.clone(),
            request_id: Value::from(id),
            method,
            params: Some(RawJson::to_raw(&params)?),
        };
        let answer = self
            .peer
            .request_raw(mcp::RFD_MESSAGE, Some(RawJson::to_raw(&message)?))
            .await?;
        answer.parse::<mcp::RfdAnswer>()?.into_outcome()
    }

    /// What the server said of itself in `initialize`.
    pub fn server(&self) -> &InitializeResult {
        &self.server
    }

    /// Sends an MCP request; its result stays raw.
    pub async fn request(
        &self,
        method: impl Into<String>,
        params: Option<RawJson>,
    ) -> Result<RawJson, Error> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        if self.stateless {
            return self.stateless_request(id, method.into(), params).await;
        }
        let message = MessageParams {
            connection_id: self.connection_id.clone(),
            method: method.into(),
            params,
            mcp_request_id: Some(Value::from(id)),
            related_mcp_request_id: None,
        };
        self.peer
            .request_raw(mcp::REQUEST, Some(RawJson::to_raw(&message)?))
            .await
    }

    /// Sends an MCP notification.
    pub async fn notify(
        &self,
        method: impl Into<String>,
        params: Option<RawJson>,
    ) -> Result<(), Error> {
        if self.stateless {
            // The RFD's MCP over ACP has no notifications from the client.
            tracing::debug!("not sent under the RFD: an MCP notification to a server");
            return Ok(());
        }
        let message = MessageParams {
            connection_id: self.connection_id.clone(),
            method: method.into(),
            params,
            mcp_request_id: None,
            related_mcp_request_id: None,
        };
        self.peer
            .notify_raw(mcp::NOTIFICATION, Some(RawJson::to_raw(&message)?))
            .await
    }

    /// Every tool of the server (following `tools/list` pages).
    pub async fn list_tools(&self) -> Result<Vec<Tool>, Error> {
        let mut tools = Vec::new();
        let mut cursor = None;
        loop {
            let mut params = PaginatedRequestParams::new();
            if let Some(cursor) = cursor.take() {
                params = params.cursor(cursor);
            }
            let page: ListToolsResult = decode_typed(
                self.request("tools/list", Some(RawJson::to_raw(&params)?))
                    .await?,
            )?;
            tools.extend(page.tools);
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => return Ok(tools),
            }
        }
    }

    /// Calls a tool.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Option<Map<String, Value>>,
    ) -> Result<CallToolResult, Error> {
        let mut params = CallToolRequestParams::new(name);
        params.arguments = arguments;
        decode_typed(
            self.request("tools/call", Some(RawJson::to_raw(&params)?))
                .await?,
        )
    }

    /// Closes the connection (`_mcp/disconnect`).
    pub async fn close(self) {
        if self.stateless {
            return;
        }
        lock(&self.clients.open).remove(&self.connection_id);
        let params = DisconnectParams {
            connection_id: self.connection_id.clone(),
        };
        if let Ok(params) = RawJson::to_raw(&params) {
            let _ = self.peer.notify_raw(mcp::DISCONNECT, Some(params)).await;
        }
    }
}
