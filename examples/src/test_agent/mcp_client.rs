//! The test agent's MCP side: it keeps the MCP servers each session is given, and lists and
//! calls their tools.
//!
//! - `acp:` servers (with `--mcp-acp`, when it speaks MCP over ACP itself) through
//!   `sacp::mcp::McpClient`; with `--mcp-rfd`, the RFD's `{"type": "acp", "serverId"}` servers,
//!   statelessly (`McpClient::stateless`, one `mcp/message` per request);
//! - stdio and `http` servers — what the conductor's bridges give an agent that does not —
//!   the way agents people run do it: with a published MCP client, `rmcp` (its child-process
//!   and streamable-HTTP transports), connected while `session/new` is handled, before it is
//!   answered.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::lock::lock;
use rmcp::model::{
    CallToolRequestParams, NumberOrString, ProgressNotificationParam, ProgressToken,
    RequestMetaObject,
};
use rmcp::service::{NotificationContext, RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, ServiceExt};
use sacp::acp::{
    McpServer, SessionId, SessionNotification, SessionUpdate, ToolCall, ToolCallStatus,
    ToolCallUpdate,
};
use sacp::agent::Cx;
use sacp::mcp::McpClient;
use sacp::schema::mcp::ContentBlock;
use serde_json::{Map, Value};

/// What the agent's `rmcp` client does with what servers send it: counts progress
/// notifications, and answers `ping` (rmcp's own answer).
#[derive(Debug, Clone, Default)]
struct Client {
    progress: Arc<AtomicU64>,
}

impl ClientHandler for Client {
    async fn on_progress(
        &self,
        _params: ProgressNotificationParam,
        _cx: NotificationContext<RoleClient>,
    ) {
        self.progress.fetch_add(1, Ordering::SeqCst);
    }
}

/// One MCP server of a session.
#[derive(Clone)]
enum Server {
    /// Over ACP (`--mcp-acp`).
    Acp(String),
    /// Over ACP the RFD's way, by server id (`--mcp-rfd`).
    Rfd(String),
    /// Connected with rmcp, over `via` (`stdio` or `http`).
    Rmcp {
        via: &'static str,
        client: Arc<RunningService<RoleClient, Client>>,
        progress: Arc<AtomicU64>,
    },
    /// A server it could not connect to, and why.
    Failed(String),
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Server::Acp(url) => write!(f, "Acp({url})"),
            Server::Rfd(id) => write!(f, "Rfd({id})"),
            Server::Rmcp { via, .. } => write!(f, "Rmcp({via})"),
            Server::Failed(why) => write!(f, "Failed({why})"),
        }
    }
}

/// The MCP servers of each session, by name.
#[derive(Debug, Default)]
pub(super) struct Servers {
    /// Whether it speaks MCP over ACP itself (`--mcp-acp`).
    pub(super) over_acp: bool,
    /// Whether it speaks the RFD's MCP over ACP (`--mcp-rfd`).
    pub(super) rfd: bool,
    by_session: Mutex<HashMap<String, Vec<(String, Server)>>>,
    /// Tool calls made, to name them.
    calls: AtomicU64,
}

/// The tool named by an instruction "Call the `TOOL` tool of the `SERVER` MCP server" in a
/// prompt — what a model would follow: `(SERVER, TOOL)`.
pub(super) fn instruction(text: &str) -> Option<(String, String)> {
    let (_, rest) = text.split_once("Call the `")?;
    let (tool, rest) = rest.split_once('`')?;
    let rest = rest.strip_prefix(" tool of the `")?;
    let (server, rest) = rest.split_once('`')?;
    rest.starts_with(" MCP server")
        .then(|| (server.to_owned(), tool.to_owned()))
}

async fn tell(cx: &Cx, session: &SessionId, update: SessionUpdate) {
    let _ = cx
        .client()
        .notify(SessionNotification::new(session.clone(), update))
        .await;
}

impl Servers {
    /// The servers of an agent that speaks MCP over ACP itself.
    pub(super) fn over_acp() -> Servers {
        Servers {
            over_acp: true,
            ..Servers::default()
        }
    }

    /// The servers of an agent that speaks the RFD's MCP over ACP.
    pub(super) fn rfd() -> Servers {
        Servers {
            rfd: true,
            ..Servers::default()
        }
    }

    /// Keeps the servers of a new session: `acp:` ones when it speaks MCP over ACP; stdio and
    /// `http` ones connected with rmcp at once (and their tools listed), as agents do.
    pub(super) async fn keep(&self, session: &str, servers: &[McpServer]) {
        let mut kept = Vec::new();
        for server in servers {
            let (name, connected) = match server {
                McpServer::Http(http) if sacp::protocol::mcp::is_acp_url(&http.url) => {
                    if !self.over_acp {
                        continue;
                    }
                    (http.name.clone(), Server::Acp(http.url.clone()))
                }
                McpServer::Http(http) => {
                    let mut config =
                        StreamableHttpClientTransportConfig::with_uri(http.url.clone());
                    for header in &http.headers {
                        if header.name.eq_ignore_ascii_case("authorization")
                            && let Some(token) = header.value.strip_prefix("Bearer ")
                        {
                            config = config.auth_header(token);
                        }
                    }
                    let transport = StreamableHttpClientTransport::from_config(config);
                    (http.name.clone(), start("http", transport).await)
                }
                McpServer::Stdio(stdio) => {
                    let mut command = tokio::process::Command::new(&stdio.command);
                    command.args(&stdio.args);
                    for var in &stdio.env {
                        command.env(&var.name, &var.value);
                    }
                    let server = match TokioChildProcess::new(command) {
                        Ok(transport) => start("stdio", transport).await,
                        Err(e) => Server::Failed(format!("cannot start {}: {e}", stdio.command)),
                    };
                    (stdio.name.clone(), server)
                }
                McpServer::Acp(entry) if self.rfd => {
                    (entry.name.clone(), Server::Rfd(entry.server_id.0.clone()))
                }
                _ => continue,
            };
            kept.push((name, connected));
        }
        lock(&self.by_session).insert(session.to_owned(), kept);
    }

    /// Runs one of the MCP keywords; returns what to say.
    pub(super) async fn run(&self, cx: &Cx, session: &SessionId, prompt: &str) -> Vec<String> {
        let servers = lock(&self.by_session)
            .get(&session.0)
            .cloned()
            .unwrap_or_default();
        let words: Vec<&str> = prompt.splitn(4, ' ').collect();
        match words.as_slice() {
            ["tools"] => {
                let mut lines = Vec::new();
                for (name, server) in &servers {
                    lines.push(match list(cx, session, server).await {
                        Ok(tools) => format!("{name}: {}", tools.join(", ")),
                        Err(e) => format!("{name}: cannot list its tools: {e}"),
                    });
                }
                if lines.is_empty() {
                    lines.push("no MCP servers".to_owned());
                }
                lines
            }
            ["call", name, tool, arguments] => {
                let Some((_, server)) = servers.iter().find(|(n, _)| n == name) else {
                    return vec![format!("no MCP server named {name}")];
                };
                let arguments = match serde_json::from_str::<Value>(arguments) {
                    Ok(Value::Object(map)) => map,
                    _ => return vec![format!("the arguments must be a JSON object: {arguments}")],
                };
                // The call shows in the session as a tool call, as agents show theirs.
                let id = format!("mcp-{}", self.calls.fetch_add(1, Ordering::Relaxed) + 1);
                let title = format!("{name}.{tool}");
                let started = ToolCall::new(id.clone(), title)
                    .status(ToolCallStatus::InProgress)
                    .raw_input(Value::Object(arguments.clone()));
                tell(cx, session, SessionUpdate::ToolCall(started)).await;
                let result = call(cx, session, server, tool, arguments).await;
                let status = match &result {
                    Ok(_) => ToolCallStatus::Completed,
                    Err(_) => ToolCallStatus::Failed,
                };
                let ended = ToolCallUpdate::new(id).status(status);
                tell(cx, session, SessionUpdate::ToolCallUpdate(ended)).await;
                vec![match result {
                    Ok(said) => format!("{name}.{tool}: {said}"),
                    Err(e) => format!("{name}.{tool} failed: {e}"),
                }]
            }
            ["mcp-request", connection, method] => {
                let params = serde_json::json!({"connection_id": connection, "method": method});
                let asked = sacp::jsonrpc::RawJson::to_raw(&params).map(|params| {
                    cx.client()
                        .request_raw(sacp::protocol::mcp::REQUEST, Some(params))
                });
                vec![match asked {
                    Ok(pending) => match pending.await {
                        Ok(answer) => format!("{method} on {connection}: {}", answer.as_str()),
                        Err(e) => format!("{method} on {connection} failed: {}", e.message),
                    },
                    Err(e) => format!("cannot ask: {}", e.message),
                }]
            }
            ["connect", url] => vec![match McpClient::connect(cx, url, Some(session)).await {
                Ok(client) => {
                    client.close().await;
                    format!("connected to {url}")
                }
                Err(e) => format!("cannot connect to {url}: {}", e.message),
            }],
            _ => vec!["expected `tools`, `call NAME TOOL JSON` or `connect URL`".to_owned()],
        }
    }
}

/// Connects rmcp's client over `transport` and lists the server's tools, as agents do when a
/// session starts.
async fn start<T, E, A>(via: &'static str, transport: T) -> Server
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let handler = Client::default();
    let progress = handler.progress.clone();
    match handler.serve(transport).await {
        Ok(client) => match client.list_all_tools().await {
            Ok(_) => Server::Rmcp {
                via,
                client: Arc::new(client),
                progress,
            },
            Err(e) => Server::Failed(format!("cannot list the tools over {via}: {e}")),
        },
        Err(e) => Server::Failed(format!("cannot connect over {via}: {e}")),
    }
}

/// The MCP client of a server over ACP: connected (`_mcp/*`), or the RFD's stateless one.
async fn acp_client(cx: &Cx, session: &SessionId, server: &Server) -> Result<McpClient, String> {
    match server {
        Server::Rfd(id) => Ok(McpClient::stateless(cx, id.clone())),
        Server::Acp(url) => McpClient::connect(cx, url, Some(session))
            .await
            .map_err(|e| e.message),
        _ => Err("not a server over ACP".to_owned()),
    }
}

async fn list(cx: &Cx, session: &SessionId, server: &Server) -> Result<Vec<String>, String> {
    match server {
        Server::Acp(_) | Server::Rfd(_) => {
            let client = acp_client(cx, session, server).await?;
            let tools = client.list_tools().await;
            client.close().await;
            Ok(tools
                .map_err(|e| e.message)?
                .into_iter()
                .map(|t| t.name)
                .collect())
        }
        Server::Rmcp { via, client, .. } => {
            let tools = client.list_all_tools().await.map_err(|e| e.to_string())?;
            let names: Vec<String> = tools.into_iter().map(|t| t.name.into_owned()).collect();
            Ok(vec![format!("{} (over {via})", names.join(", "))])
        }
        Server::Failed(why) => Err(why.clone()),
    }
}

async fn call(
    cx: &Cx,
    session: &SessionId,
    server: &Server,
    tool: &str,
    arguments: Map<String, Value>,
) -> Result<String, String> {
    match server {
        Server::Acp(_) | Server::Rfd(_) => {
            let client = acp_client(cx, session, server).await?;
            let result = client.call_tool(tool, Some(arguments)).await;
            client.close().await;
            let result = result.map_err(|e| e.message)?;
            let text: Vec<String> = result
                .content
                .iter()
                .map(|block| match block {
                    ContentBlock::TextContent(t) => t.text.clone(),
                    other => format!("{other:?}"),
                })
                .collect();
            let mut said = text.join(" ");
            if result.is_error == Some(true) {
                said.push_str(" (error)");
            }
            Ok(said)
        }
        Server::Rmcp {
            via,
            client,
            progress,
        } => {
            let before = progress.load(Ordering::SeqCst);
            let mut params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
            params.meta = Some(RequestMetaObject::with_progress_token(ProgressToken(
                NumberOrString::Number(1),
            )));
            let result = client.call_tool(params).await.map_err(|e| e.to_string())?;
            let text: Vec<String> = result
                .content
                .iter()
                .map(|block| match block.as_text() {
                    Some(t) => t.text.clone(),
                    None => format!("{block:?}"),
                })
                .collect();
            let mut said = text.join(" ");
            if result.is_error == Some(true) {
                said.push_str(" (error)");
            }
            let progress = progress.load(Ordering::SeqCst) - before;
            Ok(format!("{said} [over {via}; {progress} progress]"))
        }
        Server::Failed(why) => Err(why.clone()),
    }
}
