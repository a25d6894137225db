//! The test agent's MCP side (`--mcp-acp`): it keeps the `acp:` servers each session is given,
//! and lists and calls their tools with `sacp::mcp::McpClient`.

use std::collections::HashMap;
use std::sync::Mutex;

use sacp::acp::{McpServer, SessionId};
use sacp::agent::AgentCx;
use sacp::mcp::McpClient;
use sacp::schema::mcp::ContentBlock;
use serde_json::{Map, Value};

/// The `_meta` of an `initialize` answer that says the agent speaks MCP over ACP.
pub(super) fn capability() -> Map<String, Value> {
    let mut meta = Map::new();
    meta.insert(
        sacp::protocol::mcp::TRANSPORT_CAPABILITY.to_owned(),
        Value::Bool(true),
    );
    meta
}

/// The MCP servers of each session: `(name, url)`.
#[derive(Debug, Default)]
pub(super) struct Servers {
    by_session: Mutex<HashMap<String, Vec<(String, String)>>>,
}

impl Servers {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Vec<(String, String)>>> {
        self.by_session.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Keeps the `http` servers of a new session (the ones over ACP have `acp:` URLs).
    pub(super) fn keep(&self, session: &str, servers: &[McpServer]) {
        let kept = servers
            .iter()
            .filter_map(|s| match s {
                McpServer::Http(http) => Some((http.name.clone(), http.url.clone())),
                _ => None,
            })
            .collect();
        self.lock().insert(session.to_owned(), kept);
    }

    /// Runs one of the MCP keywords; returns what to say.
    pub(super) async fn run(&self, cx: &AgentCx, session: &SessionId, prompt: &str) -> Vec<String> {
        let servers = self.lock().get(&session.0).cloned().unwrap_or_default();
        let words: Vec<&str> = prompt.splitn(4, ' ').collect();
        match words.as_slice() {
            ["tools"] => {
                let mut lines = Vec::new();
                for (name, url) in servers.iter().filter(|(_, url)| url.starts_with("acp:")) {
                    lines.push(match list(cx, session, url).await {
                        Ok(tools) => format!("{name}: {}", tools.join(", ")),
                        Err(e) => format!("{name}: cannot list its tools: {}", e.message),
                    });
                }
                if lines.is_empty() {
                    lines.push("no MCP servers over ACP".to_owned());
                }
                lines
            }
            ["call", server, tool, arguments] => {
                let Some((_, url)) = servers.iter().find(|(name, _)| name == server) else {
                    return vec![format!("no MCP server named {server}")];
                };
                let arguments = match serde_json::from_str::<Value>(arguments) {
                    Ok(Value::Object(map)) => map,
                    _ => return vec![format!("the arguments must be a JSON object: {arguments}")],
                };
                vec![match call(cx, session, url, tool, arguments).await {
                    Ok(said) => format!("{server}.{tool}: {said}"),
                    Err(e) => format!("{server}.{tool} failed: {}", e.message),
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

async fn list(cx: &AgentCx, session: &SessionId, url: &str) -> sacp::Result<Vec<String>> {
    let client = McpClient::connect(cx, url, Some(session)).await?;
    let tools = client.list_tools().await;
    client.close().await;
    Ok(tools?.into_iter().map(|t| t.name).collect())
}

async fn call(
    cx: &AgentCx,
    session: &SessionId,
    url: &str,
    tool: &str,
    arguments: Map<String, Value>,
) -> sacp::Result<String> {
    let client = McpClient::connect(cx, url, Some(session)).await?;
    let result = client.call_tool(tool, Some(arguments)).await;
    client.close().await;
    let result = result?;
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
