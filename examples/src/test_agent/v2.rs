//! The test agent's ACP v2 side (`test-agent --protocol 2`, or `--protocol 1,2` for both).
//!
//! Sessions are named as on the v1 side. A prompt is acknowledged at once with the id of the
//! user message it inserted; the turn then runs in updates (see [`sacp::agent::Cx::run_turn`]):
//! the user message, `running`, what the keyword does, and idle with the stop reason.
//!
//! | prompt | what the turn does |
//! |---|---|
//! | `stream N` | streams `N` agent message chunks `chunk 1` … `chunk N` |
//! | `full` | every kind of update a turn has: a chunk, a plan update, a tool call update (pending), a permission request for it with title and subject, the tool call in progress with a content chunk, completed, then a chunk saying what was chosen |
//! | `wait` | streams `waiting`, then waits for `session/cancel` (ends `cancelled`) |
//! | `fail` | ends with stop reason `error` |
//! | `then N` | ends the turn at once (user message, `running`, idle), then streams `N` chunks `after 1` … `after N` right behind the idle update, with no state of its own around them |
//! | `tools` | lists the tools of each MCP server of the session: `NAME: tool, tool` |
//! | `setup` | says the session's `mcpServers` as it got them (JSON) |
//! | `future` | sends what a newer v2 agent would ([`FUTURE_V2`]: a chunk with fields this schema lacks, a `tool_call_update` with explicit `null`s — v2's "clear this field" — and an update of a kind this schema lacks), and acknowledges with `futureRes` |
//! | anything else | echoes every text block as a chunk |
//!
//! It is an MCP client as the v1 side is: it declares `capabilities.session.mcp.stdio`, or
//! `.http` alone with `--mcp-http`, and connects to the servers of each session with rmcp.

use std::sync::atomic::{AtomicU64, Ordering};

use std::sync::Arc;

use sacp::acp::v2::{
    self, ContentBlock, IdleStateUpdateKind, InitializeRequest, InitializeResponse,
    NewSessionRequest, NewSessionResponse, PromptRequest, PromptResponse, RequestPermissionRequest,
    SessionUpdate,
};
use sacp::agent::{Cx, V2Turn};

use super::mcp_client;

/// The test agent as an ACP v2 agent.
#[derive(Debug, Default)]
pub struct TestAgentV2 {
    sessions: AtomicU64,
    /// The MCP servers of each session.
    mcp: Arc<mcp_client::Servers>,
    /// Whether it declares `session.mcp.http` (and not `stdio`).
    mcp_http: bool,
    /// Each session's `mcpServers`, as JSON.
    setups: std::sync::Mutex<std::collections::HashMap<String, String>>,
}

impl TestAgentV2 {
    /// The agent that runs HTTP MCP servers only (`test-agent --protocol 2 --mcp-http`).
    pub fn with_mcp_over_http() -> Self {
        TestAgentV2 {
            mcp_http: true,
            ..TestAgentV2::default()
        }
    }
}

#[sacp::agent(protocol = 2)]
impl TestAgentV2 {
    #[on_request]
    async fn initialize(
        &self,
        _req: InitializeRequest,
        _cx: &Cx,
    ) -> sacp::Result<InitializeResponse> {
        let transport = if self.mcp_http { "http" } else { "stdio" };
        let answer = serde_json::json!({
            "protocolVersion": 2,
            "info": {"name": "test-agent", "version": env!("CARGO_PKG_VERSION")},
            "capabilities": {"session": {"mcp": {transport: {}}}},
        });
        Ok(serde_json::from_value(answer)?)
    }

    #[on_request]
    async fn new_session(
        &self,
        req: NewSessionRequest,
        _cx: &Cx,
    ) -> sacp::Result<NewSessionResponse> {
        let n = self.sessions.fetch_add(1, Ordering::Relaxed) + 1;
        let session = format!("session-{n}");
        let servers = serde_json::to_string(&req.mcp_servers.clone().unwrap_or_default())?;
        crate::lock::lock(&self.setups).insert(session.clone(), servers);
        self.mcp.keep(&session, &v1_entries(&req)?).await;
        Ok(NewSessionResponse::new(session))
    }

    #[on_request]
    async fn prompt(&self, req: PromptRequest, cx: &Cx) -> sacp::Result<PromptResponse> {
        let texts: Vec<String> = req
            .prompt
            .iter()
            .filter_map(|block| match block {
                ContentBlock::Text(text) => Some(text.text.clone()),
                _ => None,
            })
            .collect();
        let future = texts.first().is_some_and(|t| t == "future");
        if let Some(["then", count]) = texts
            .first()
            .map(|t| t.split_whitespace().collect::<Vec<_>>())
            .as_deref()
        {
            let count: u64 = count.parse().map_err(|_| bad_prompt("then N"))?;
            return then(req, cx, count);
        }
        let servers = self.mcp.clone();
        let setup = crate::lock::lock(&self.setups)
            .get(&req.session_id.0)
            .cloned()
            .unwrap_or_default();
        let ack = cx.run_turn(req, move |turn| async move {
            let first = texts.first().cloned().unwrap_or_default();
            let words: Vec<&str> = first.split_whitespace().collect();
            match words.as_slice() {
                ["setup"] => turn.say(setup).await?,
                ["future"] => {
                    for update in FUTURE_V2 {
                        let raw = update.replace("SESSION", &turn.session_id().0);
                        let raw = sacp::jsonrpc::RawJson::from_string(raw)?;
                        turn.cx()
                            .client()
                            .notify_raw("session/update", Some(raw))
                            .await?;
                    }
                }
                ["tools"] => {
                    let session = sacp::acp::SessionId(turn.session_id().0.clone());
                    for line in servers.run(turn.cx(), &session, "tools").await {
                        turn.say(line).await?;
                    }
                }
                ["stream", count] => {
                    let count: u64 = count.parse().map_err(|_| bad_prompt("stream N"))?;
                    for i in 1..=count {
                        turn.say(format!("chunk {i}")).await?;
                    }
                }
                ["full"] => return full(&turn).await,
                ["wait"] => {
                    turn.say("waiting").await?;
                    turn.cancelled().await;
                    eprintln!("test-agent: the v2 turn was cancelled");
                }
                ["fail"] => return Err(sacp::Error::internal_error("asked to fail")),
                _ => {
                    for text in texts {
                        turn.say(text).await?;
                    }
                }
            }
            Ok(IdleStateUpdateKind::EndTurn)
        })?;
        if !future {
            return Ok(ack);
        }
        // An acknowledgement with a field this schema lacks: typed, it keeps it.
        let mut json = serde_json::to_value(&ack)?;
        json["futureRes"] = 3.into();
        sacp::jsonrpc::lossless::read(&sacp::jsonrpc::RawJson::to_raw(&json)?)
    }
}

/// The v2 `then N` turn: acknowledged, its user message, `running` and idle at once; then
/// `N` chunks `after 1` … `after N` of a message of its own, right behind the idle update, as
/// an agent that goes on speaking after its turn would (no state of its own around them).
fn then(req: PromptRequest, cx: &Cx, count: u64) -> sacp::Result<PromptResponse> {
    use sacp::acp::v2::{
        ContentChunk, IdleStateUpdate, IdleStateUpdateCommon, MessageId, RunningStateUpdate,
        StateUpdate, TextContent, UpdateSessionNotification, UserMessage,
    };
    let user = MessageId(format!("then-user-{}", self_id()));
    let after = MessageId(format!("then-after-{}", self_id()));
    let (session, content, client) = (req.session_id, req.prompt, cx.client());
    let ack = PromptResponse::new(user.clone());
    cx.after_answer(async move {
        let idle = IdleStateUpdate::new(IdleStateUpdateCommon::new(), IdleStateUpdateKind::EndTurn);
        let mut updates = vec![
            SessionUpdate::UserMessage(UserMessage::new(user).content(content)),
            SessionUpdate::StateUpdate(StateUpdate::Running(RunningStateUpdate::new())),
            SessionUpdate::StateUpdate(StateUpdate::Idle(idle)),
        ];
        for i in 1..=count {
            let text = ContentBlock::Text(TextContent::new(format!("after {i}")));
            updates.push(SessionUpdate::AgentMessageChunk(ContentChunk::new(
                after.clone(),
                text,
            )));
        }
        for update in updates {
            let notification = UpdateSessionNotification::new(session.clone(), update);
            if client.notify(notification).await.is_err() {
                return;
            }
        }
    })?;
    Ok(ack)
}

/// A number no two `then` turns of this process share.
fn self_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// The updates of the v2 `future` keyword, `SESSION` standing for the session id.
pub const FUTURE_V2: [&str; 3] = [
    r#"{"sessionId":"SESSION","update":{"sessionUpdate":"agent_message_chunk","messageId":"m-future","content":{"type":"text","text":"future","futureAnno":{"x":1}},"futureUpd":true},"futureParam":[1,null]}"#,
    r#"{"sessionId":"SESSION","update":{"sessionUpdate":"tool_call_update","toolCallId":"t1","title":null,"locations":null,"status":"completed"}}"#,
    r#"{"sessionId":"SESSION","update":{"sessionUpdate":"future_kind","futureData":{"a":[1,2]}}}"#,
];

/// The `full` turn: every kind of update, and a permission asked with its title and subject.
async fn full(turn: &V2Turn) -> sacp::Result<IdleStateUpdateKind> {
    let update = |json: serde_json::Value| -> sacp::Result<SessionUpdate> {
        Ok(serde_json::from_value(json)?)
    };
    turn.say("looking").await?;
    turn.send(update(serde_json::json!({
        "sessionUpdate": "plan_update",
        "plan": {"type": "items", "planId": "plan-1", "entries": [
            {"content": "read the file", "priority": "high", "status": "in_progress"},
            {"content": "edit it", "priority": "medium", "status": "pending"},
        ]},
    }))?)
    .await?;
    turn.send(update(serde_json::json!({
        "sessionUpdate": "tool_call_update", "toolCallId": "call-1",
        "title": "Edit src/main.rs", "kind": "edit", "status": "pending",
    }))?)
    .await?;
    let ask: RequestPermissionRequest = serde_json::from_value(serde_json::json!({
        "sessionId": turn.session_id(),
        "title": "Edit src/main.rs?",
        "subject": {"type": "tool_call", "toolCall": {"toolCallId": "call-1"}},
        "options": [
            {"optionId": "allow", "name": "Allow once", "kind": "allow_once"},
            {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
        ],
    }))?;
    let answer = turn.cx().client().request(ask).await?;
    let chosen = match answer.outcome {
        v2::RequestPermissionOutcome::Selected(selected) => selected.option_id.0,
        v2::RequestPermissionOutcome::Cancelled(_) => "cancelled".to_owned(),
        v2::RequestPermissionOutcome::Other(other) => serde_json::to_string(&other)?,
    };
    turn.send(update(serde_json::json!({
        "sessionUpdate": "tool_call_update", "toolCallId": "call-1", "status": "in_progress",
    }))?)
    .await?;
    turn.send(update(serde_json::json!({
        "sessionUpdate": "tool_call_content_chunk", "toolCallId": "call-1",
        "content": {"type": "content", "content": {"type": "text", "text": "edited"}},
    }))?)
    .await?;
    turn.send(update(serde_json::json!({
        "sessionUpdate": "tool_call_update", "toolCallId": "call-1", "status": "completed",
    }))?)
    .await?;
    turn.say(format!("chose {chosen}")).await?;
    Ok(IdleStateUpdateKind::EndTurn)
}

/// A session's MCP servers as v1 writes them (the v1 side's MCP client reads those): v2 tags
/// a stdio entry `"type": "stdio"`, v1 does not.
fn v1_entries(req: &NewSessionRequest) -> sacp::Result<Vec<sacp::acp::McpServer>> {
    let mut entries = serde_json::to_value(req.mcp_servers.clone().unwrap_or_default())?;
    for entry in entries.as_array_mut().into_iter().flatten() {
        if let Some(entry) = entry.as_object_mut()
            && entry.get("type").and_then(|t| t.as_str()) == Some("stdio")
        {
            entry.remove("type");
        }
    }
    Ok(serde_json::from_value(entries)?)
}

fn bad_prompt(expected: &str) -> sacp::Error {
    sacp::Error::invalid_params(format!("expected `{expected}`"))
}
