//! The MCP server of a proxy's `#[tool]` methods: the MCP lifecycle (`initialize` with version
//! negotiation, `notifications/initialized`, `ping`), `tools/list` with cursor pagination,
//! `tools/call` with cancellation (`notifications/cancelled`), and clear MCP errors for unknown
//! methods and tools.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::server::{ClientLink, McpConnection, McpMessage, McpServer};
use crate::jsonrpc::{BoxFuture, Error, PendingResponse, RawJson};
use crate::lock::lock;
use crate::schema::mcp::{
    CallToolRequestParams, CallToolResult, CancelledNotificationParams, ClientCapabilities,
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult,
    Implementation, InitializeRequestParams, InitializeResult, ListToolsResult,
    PaginatedRequestParams, ProgressToken, ServerCapabilities, ServerCapabilitiesTools, Tool,
};

pub use crate::protocol::mcp::PROTOCOL_VERSIONS;

/// How many tools one `tools/list` page holds.
const PAGE: usize = 50;

/// What a `#[tool]` method takes as input: a type that derives `serde::Deserialize` and
/// `schemars::JsonSchema` — of schemars 1.x, the version `sacp` uses and re-exports as
/// [`sacp::schemars`](crate::schemars). Every such type is one; nothing to implement.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the input of a `#[tool]`",
    label = "a tool's input must derive `serde::Deserialize` and `schemars::JsonSchema`",
    note = "add `#[derive(serde::Deserialize, schemars::JsonSchema)]` to `{Self}`, with `schemars = \"1\"` in your Cargo.toml (an older schemars derives a trait of another crate), or derive through the re-exports: `sacp::serde`, `sacp::schemars`"
)]
pub trait ToolInput: serde::de::DeserializeOwned + schemars::JsonSchema {}

impl<T: serde::de::DeserializeOwned + schemars::JsonSchema> ToolInput for T {}

/// A proxy's `#[tool]` methods, as `#[sacp::proxy]` writes them.
pub trait ToolSet: Send + Sync + 'static {
    /// The server's name in `mcpServers` (`#[proxy(mcp_name = …)]`; the type's name in
    /// kebab-case by default).
    fn server_name(&self) -> String;

    /// The version in `serverInfo` (the crate's version).
    fn server_version(&self) -> String;

    /// The tools, in the order they were written.
    fn tools() -> Vec<Tool>;

    /// Calls the tool `name` with `arguments`; `None` when there is no such tool.
    fn call_tool(
        &self,
        name: &str,
        arguments: Option<serde_json::Map<String, Value>>,
        cx: &ToolCx,
    ) -> impl Future<Output = Option<Result<CallToolResult, Error>>> + Send;
}

/// The [`McpServer`] of a [`ToolSet`].
pub struct ToolServer<T: ToolSet> {
    tools: Arc<T>,
    list: Arc<Vec<Tool>>,
}

impl<T: ToolSet> std::fmt::Debug for ToolServer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolServer")
            .field("name", &self.tools.server_name())
            .field("tools", &self.list.len())
            .finish()
    }
}

impl<T: ToolSet> ToolServer<T> {
    /// The server of `tools`.
    pub fn new(tools: Arc<T>) -> ToolServer<T> {
        ToolServer {
            tools,
            list: Arc::new(T::tools()),
        }
    }
}

impl<T: ToolSet> McpServer for ToolServer<T> {
    fn name(&self) -> String {
        self.tools.server_name()
    }

    fn connect(&self, link: ClientLink) -> Box<dyn McpConnection> {
        Box::new(ToolConnection {
            tools: self.tools.clone(),
            list: self.list.clone(),
            link,
            state: Arc::default(),
        })
    }
}

/// One MCP connection to a [`ToolServer`].
struct ToolConnection<T: ToolSet> {
    tools: Arc<T>,
    list: Arc<Vec<Tool>>,
    link: ClientLink,
    state: Arc<Mutex<State>>,
}

#[derive(Default)]
struct State {
    client: Option<ClientCapabilities>,
    initialized: bool,
    /// The calls running, by the client's request id (as JSON text).
    calls: HashMap<String, CancellationToken>,
}

impl<T: ToolSet> McpConnection for ToolConnection<T> {
    fn request(&self, message: McpMessage) -> BoxFuture<Result<RawJson, Error>> {
        let McpMessage { method, params, id } = message;
        match method.as_str() {
            "initialize" => {
                let answer = self.initialize(params.as_ref());
                Box::pin(async move { answer })
            }
            "ping" => Box::pin(async { Ok(RawJson::empty_object()) }),
            "tools/list" => {
                let answer = self.list(params.as_ref());
                Box::pin(async move { answer })
            }
            "tools/call" => {
                let call = Call {
                    tools: self.tools.clone(),
                    link: self.link.clone(),
                    state: self.state.clone(),
                };
                Box::pin(call.run(params, id))
            }
            _ => Box::pin(async move { Err(Error::method_not_found(&method)) }),
        }
    }

    fn notify(&self, message: McpMessage) {
        match message.method.as_str() {
            "notifications/initialized" => lock(&self.state).initialized = true,
            "notifications/cancelled" => {
                let Some(Ok(cancelled)) = message
                    .params
                    .as_ref()
                    .map(RawJson::parse::<CancelledNotificationParams>)
                else {
                    return;
                };
                let Some(id) = cancelled.request_id else {
                    return;
                };
                let key = key_of(&serde_json::to_value(id).unwrap_or_default());
                if let Some(token) = lock(&self.state).calls.remove(&key) {
                    token.cancel();
                }
            }
            other => tracing::debug!(method = other, "ignoring an MCP notification"),
        }
    }

    fn close(&self) {
        for (_, token) in lock(&self.state).calls.drain() {
            token.cancel();
        }
    }
}

impl<T: ToolSet> ToolConnection<T> {
    fn initialize(&self, params: Option<&RawJson>) -> Result<RawJson, Error> {
        let params: InitializeRequestParams = params
            .ok_or_else(|| Error::invalid_params("initialize needs params"))?
            .parse()?;
        // The client's version if we speak it; otherwise ours, and the client decides.
        let version = PROTOCOL_VERSIONS
            .iter()
            .find(|v| **v == params.protocol_version)
            .unwrap_or(&PROTOCOL_VERSIONS[0]);
        lock(&self.state).client = Some(params.capabilities);
        let capabilities =
            ServerCapabilities::new().tools(ServerCapabilitiesTools::new().list_changed(false));
        let info = Implementation::new(self.tools.server_name(), self.tools.server_version());
        RawJson::to_raw(&InitializeResult::new(capabilities, *version, info))
    }

    fn list(&self, params: Option<&RawJson>) -> Result<RawJson, Error> {
        let cursor = match params {
            Some(p) => p.parse::<PaginatedRequestParams>()?.cursor,
            None => None,
        };
        let start = match cursor {
            None => 0,
            Some(c) => c
                .parse::<usize>()
                .ok()
                .filter(|&at| at <= self.list.len())
                .ok_or_else(|| Error::invalid_params(format!("unknown cursor {c:?}")))?,
        };
        let end = (start + PAGE).min(self.list.len());
        let mut page = ListToolsResult::new(self.list[start..end].to_vec());
        if end < self.list.len() {
            page = page.next_cursor(end.to_string());
        }
        RawJson::to_raw(&page)
    }
}

/// A `tools/call` on its way.
struct Call<T: ToolSet> {
    tools: Arc<T>,
    link: ClientLink,
    state: Arc<Mutex<State>>,
}

impl<T: ToolSet> Call<T> {
    async fn run(self, params: Option<RawJson>, id: Option<Value>) -> Result<RawJson, Error> {
        let params: CallToolRequestParams = params
            .ok_or_else(|| Error::invalid_params("tools/call needs params"))?
            .parse()?;
        let token = CancellationToken::new();
        let key = id.as_ref().map(key_of);
        let client = {
            let mut state = lock(&self.state);
            if let Some(key) = &key {
                state.calls.insert(key.clone(), token.clone());
            }
            state.client.clone()
        };
        let _done = CallDone {
            state: &self.state,
            key,
        };
        let cx = ToolCx {
            link: self.link.clone(),
            request_id: id,
            progress_token: params.meta.as_ref().and_then(|m| m.progress_token.clone()),
            cancelled: token.clone(),
            client,
        };
        let result = tokio::select! {
            biased;
            () = token.cancelled() => return Err(Error::request_cancelled()),
            result = self.tools.call_tool(&params.name, params.arguments, &cx) => result,
        };
        match result {
            Some(result) => RawJson::to_raw(&result?),
            // MCP asks for invalid params on an unknown tool.
            None => Err(Error::invalid_params(format!(
                "unknown tool: {}",
                params.name
            ))),
        }
    }
}

/// Forgets a finished call.
struct CallDone<'a> {
    state: &'a Mutex<State>,
    key: Option<String>,
}

impl Drop for CallDone<'_> {
    fn drop(&mut self) {
        if let Some(key) = &self.key {
            lock(self.state).calls.remove(key);
        }
    }
}

/// A request id as a key: its JSON text.
fn key_of(id: &Value) -> String {
    id.to_string()
}

/// What a tool gets besides its input: the session, the proxy, progress, and the client.
#[derive(Debug, Clone)]
pub struct ToolCx {
    link: ClientLink,
    request_id: Option<Value>,
    progress_token: Option<ProgressToken>,
    cancelled: CancellationToken,
    client: Option<ClientCapabilities>,
}

impl ToolCx {
    /// The ACP session the call belongs to, once known (agents may call before they answer
    /// `session/new`; the runtime learns the id from `_mcp/connect` or from that answer).
    pub fn session_id(&self) -> Option<crate::acp::SessionId> {
        self.link.session_id()
    }

    /// The proxy's context: its client and its successor, for a tool that needs them.
    pub fn proxy(&self) -> &crate::proxy::Cx {
        self.link.proxy()
    }

    /// What the client declared in `initialize` (`None` before it did).
    pub fn client_capabilities(&self) -> Option<&ClientCapabilities> {
        self.client.as_ref()
    }

    /// Reports progress, when the caller asked for it (a `progressToken`); does nothing
    /// otherwise.
    pub async fn progress(
        &self,
        progress: f64,
        total: Option<f64>,
        message: Option<&str>,
    ) -> Result<(), Error> {
        let Some(token) = &self.progress_token else {
            return Ok(());
        };
        let mut params = serde_json::json!({ "progressToken": token, "progress": progress });
        if let Some(total) = total {
            params["total"] = total.into();
        }
        if let Some(message) = message {
            params["message"] = message.into();
        }
        self.notify_client("notifications/progress", Some(RawJson::to_raw(&params)?))
            .await
    }

    /// Sends an MCP request to the client on this call's behalf.
    pub fn request_client(
        &self,
        method: impl Into<String>,
        params: Option<RawJson>,
    ) -> PendingResponse<RawJson> {
        self.link.request(method, params, self.request_id.clone())
    }

    /// Sends an MCP notification to the client on this call's behalf.
    pub async fn notify_client(
        &self,
        method: impl Into<String>,
        params: Option<RawJson>,
    ) -> Result<(), Error> {
        self.link
            .notify(method, params, self.request_id.clone())
            .await
    }

    /// `ping`s the client.
    pub async fn ping(&self) -> Result<(), Error> {
        self.request_client("ping", None).await.map(drop)
    }

    /// Asks the client's model for a message (`sampling/createMessage`); an error if the client
    /// did not declare sampling.
    pub async fn create_message(
        &self,
        params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, Error> {
        if self
            .client
            .as_ref()
            .and_then(|c| c.sampling.as_ref())
            .is_none()
        {
            return Err(Error::new(
                crate::jsonrpc::code::METHOD_NOT_FOUND,
                "the MCP client did not declare sampling",
            ));
        }
        self.typed("sampling/createMessage", &params).await
    }

    /// Asks the user something through the client (`elicitation/create`); an error if the
    /// client did not declare elicitation.
    pub async fn elicit(&self, params: ElicitRequestParams) -> Result<ElicitResult, Error> {
        if self
            .client
            .as_ref()
            .and_then(|c| c.elicitation.as_ref())
            .is_none()
        {
            return Err(Error::new(
                crate::jsonrpc::code::METHOD_NOT_FOUND,
                "the MCP client did not declare elicitation",
            ));
        }
        self.typed("elicitation/create", &params).await
    }

    async fn typed<P: serde::Serialize, R: serde::de::DeserializeOwned>(
        &self,
        method: &str,
        params: &P,
    ) -> Result<R, Error> {
        let answer = self
            .request_client(method, Some(RawJson::to_raw(params)?))
            .await?;
        crate::jsonrpc::decode_typed(answer)
    }

    /// Whether the client cancelled the call (`notifications/cancelled`).
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.is_cancelled()
    }

    /// Completes when the client cancels the call. (The call is stopped anyway: this is for
    /// work the tool started on the side.)
    pub async fn cancelled(&self) {
        self.cancelled.cancelled().await
    }
}
