//! A deterministic ACP agent for tests and benchmarks (the `test-agent` binary).
//!
//! Sessions are named `session-1`, `session-2`, … in the order they are created. A prompt's
//! first text block may start with a keyword; otherwise every text block is echoed back as an
//! `agent_message_chunk` and the turn ends with `end_turn`.
//!
//! | prompt | what the agent does |
//! |---|---|
//! | `stream N` | streams `N` chunks `chunk 1` … `chunk N`, then ends the turn |
//! | `stream N SIZE` | the same, each chunk padded with `.` to `SIZE` bytes of text |
//! | `permission` | asks the client `session/request_permission` and says what it chose |
//! | `read PATH` | reads `PATH` through the client's `fs/read_text_file` and echoes it |
//! | `sleep MS` | waits `MS` milliseconds (a `session/cancel` ends it early), then echoes |
//! | `wait` | streams `waiting`, then waits for `session/cancel` and ends with `cancelled` (saying so on stderr) |
//! | `crash [CODE] [N]` | streams `N` chunks (default 0), then `crashing`, then exits at once with `CODE` (default 3) |
//! | `noise N` | writes `N` lines to stderr, then echoes |
//! | `setup` | says what the session was created with: `cwd=… servers=[…]` (its `mcpServers` as JSON) |
//! | `then N` | ends the turn at once, then streams `N` chunks `after 1` … `after N` right behind the answer |
//! | `future` | sends what a newer agent would: a chunk `future` with fields this schema lacks (`futureAnno`, `futureUpd`, `futureParam`), a `tool_call_update` with explicit `null`s, an update of a kind this schema lacks, and an answer with `futureRes` (see [`FUTURE`]) |
//!
//! It lists its sessions (`session/list`) and forgets one on `session/close`.
//!
//! It is also an MCP client (see the `mcp` module). It connects to the stdio and `http` MCP
//! servers each session is given while it handles `session/new`, with `rmcp`, as agents people
//! run do; with `--mcp-http` it declares `mcpCapabilities.http` (so a conductor bridges over
//! HTTP); with `--mcp-acp` (see [`TestAgent::speaking_mcp_over_acp`]) it says in `initialize`
//! that it speaks MCP over ACP itself (`_meta.mcp_acp_transport: true`) and uses the `acp:`
//! servers directly. Three more keywords:
//!
//! | prompt | what the agent does |
//! |---|---|
//! | `tools` | lists the tools of each MCP server of the session: `NAME: tool, tool` |
//! | `call NAME TOOL JSON` | calls `TOOL` of server `NAME` with the arguments `JSON`, shows it as a `tool_call` of the session and says the result (for stdio and HTTP servers also the transport and the progress notifications it got: `[over stdio; 3 progress]`) |
//! | `connect URL` | opens an MCP connection over ACP to `URL`, says whether it could |
//! | … Call the \`TOOL\` tool of the \`SERVER\` MCP server … | follows the instruction, as a model would: `call SERVER TOOL {}` |
//! | `mcp-request ID METHOD` | sends `_mcp/request` for connection `ID` (which may not exist) to its client, says the answer |
//!
//! Handlers run concurrently: a session that waits or sleeps never holds up another.

mod mcp;
mod v2;

pub use self::v2::{FUTURE_V2, TestAgentV2};

use sacp::acp::{
    AgentCapabilities, CloseSessionRequest, CloseSessionResponse, ContentBlock, ContentChunk,
    InitializeRequest, InitializeResponse, ListSessionsRequest, ListSessionsResponse,
    McpCapabilities, NewSessionRequest, NewSessionResponse, PermissionOption, PermissionOptionKind,
    PromptRequest, PromptResponse, ProtocolVersion, ReadTextFileRequest, RequestPermissionOutcome,
    RequestPermissionRequest, SessionInfo, SessionNotification, SessionUpdate, StopReason,
    TextContent, ToolCallUpdate,
};
use sacp::agent::Cx;

use crate::lock::lock;
use std::sync::atomic::{AtomicU64, Ordering};

/// The test agent; see the module docs for what it does.
#[derive(Debug, Default)]
pub struct TestAgent {
    sessions: AtomicU64,
    /// The MCP servers of each session.
    mcp: mcp::Servers,
    /// Whether it declares `mcpCapabilities.http`.
    mcp_http: bool,
    /// What each session was set up with: `cwd=… servers=…`.
    setups: std::sync::Mutex<std::collections::HashMap<String, String>>,
}

impl TestAgent {
    /// The agent that speaks MCP over ACP itself (`test-agent --mcp-acp`).
    pub fn speaking_mcp_over_acp() -> Self {
        TestAgent {
            mcp: mcp::Servers::over_acp(),
            ..TestAgent::default()
        }
    }

    /// The agent that speaks the MCP over ACP of ACP's RFD (`test-agent --mcp-rfd`): it
    /// declares `mcpCapabilities.acp` and calls `{"type": "acp"}` servers with `mcp/message`.
    pub fn speaking_rfd_mcp_over_acp() -> Self {
        TestAgent {
            mcp: mcp::Servers::rfd(),
            ..TestAgent::default()
        }
    }

    /// The agent that declares `mcpCapabilities.http` (`test-agent --mcp-http`).
    pub fn with_mcp_over_http() -> Self {
        TestAgent {
            mcp_http: true,
            ..TestAgent::default()
        }
    }
}

#[sacp::agent]
impl TestAgent {
    #[on_request]
    async fn initialize(
        &self,
        req: InitializeRequest,
        _cx: &Cx,
    ) -> sacp::Result<InitializeResponse> {
        let mut capabilities = AgentCapabilities::default();
        if self.mcp_http {
            capabilities = capabilities.mcp_capabilities(McpCapabilities::default().http(true));
        }
        // ACP v1 is what it speaks, whatever the client asked for: the client decides whether
        // it can go on with that.
        let _ = req;
        let answer =
            InitializeResponse::new(ProtocolVersion::from(1)).agent_capabilities(capabilities);
        if self.mcp.rfd {
            // `mcpCapabilities.acp` is the RFD's, newer than the pinned schema: written into
            // the answer's JSON, which a typed value keeps when read back (typed is lossless).
            let mut json = serde_json::to_value(&answer)?;
            json["agentCapabilities"]["mcpCapabilities"]["acp"] = true.into();
            return sacp::jsonrpc::lossless::read(&sacp::jsonrpc::RawJson::to_raw(&json)?);
        }
        Ok(if self.mcp.over_acp {
            answer.meta(sacp::protocol::mcp::capability_meta())
        } else {
            answer
        })
    }

    #[on_request]
    async fn new_session(
        &self,
        req: NewSessionRequest,
        _cx: &Cx,
    ) -> sacp::Result<NewSessionResponse> {
        let n = self.sessions.fetch_add(1, Ordering::Relaxed) + 1;
        let session = format!("session-{n}");
        let servers = serde_json::to_string(&req.mcp_servers).unwrap_or_default();
        let setup = format!("cwd={} servers={servers}", req.cwd);
        lock(&self.setups).insert(session.clone(), setup);
        self.mcp.keep(&session, &req.mcp_servers).await;
        Ok(NewSessionResponse::new(session))
    }

    /// Lists the sessions it has (with the `cwd` each was created in).
    #[on_request]
    async fn list_sessions(
        &self,
        _req: ListSessionsRequest,
        _cx: &Cx,
    ) -> sacp::Result<ListSessionsResponse> {
        let setups = lock(&self.setups);
        let mut sessions: Vec<SessionInfo> = setups
            .iter()
            .map(|(id, setup)| {
                let cwd = setup
                    .strip_prefix("cwd=")
                    .and_then(|s| s.split(" servers=").next())
                    .unwrap_or_default();
                SessionInfo::new(id.clone(), cwd)
            })
            .collect();
        sessions.sort_by(|a, b| a.session_id.0.cmp(&b.session_id.0));
        Ok(ListSessionsResponse::new(sessions))
    }

    /// Forgets the session.
    #[on_request]
    async fn close_session(
        &self,
        req: CloseSessionRequest,
        _cx: &Cx,
    ) -> sacp::Result<CloseSessionResponse> {
        lock(&self.setups).remove(&req.session_id.0);
        Ok(CloseSessionResponse::new())
    }

    #[on_request]
    async fn prompt(&self, req: PromptRequest, cx: &Cx) -> sacp::Result<PromptResponse> {
        let session = req.session_id.clone();
        let client = cx.client();
        let say = |text: String| {
            let chunk = ContentChunk::new(ContentBlock::Text(TextContent::new(text)));
            client.notify(SessionNotification::new(
                session.clone(),
                SessionUpdate::AgentMessageChunk(chunk),
            ))
        };
        let first = req.prompt.iter().find_map(|block| match block {
            ContentBlock::Text(text) => Some(text.text.as_str()),
            _ => None,
        });
        let words: Vec<&str> = first.unwrap_or_default().split_whitespace().collect();
        match words.as_slice() {
            ["stream", count, rest @ ..] => {
                let count: u64 = count.parse().map_err(|_| bad_prompt("stream N [SIZE]"))?;
                let size: usize = match rest {
                    [] => 0,
                    [size] => size.parse().map_err(|_| bad_prompt("stream N [SIZE]"))?,
                    _ => return Err(bad_prompt("stream N [SIZE]")),
                };
                for i in 1..=count {
                    let mut text = format!("chunk {i}");
                    if text.len() < size {
                        text.extend(std::iter::repeat_n('.', size - text.len()));
                    }
                    say(text).await?;
                }
            }
            ["then", count] => {
                let count: u64 = count.parse().map_err(|_| bad_prompt("then N"))?;
                let (client, session) = (cx.client(), session.clone());
                cx.after_answer(async move {
                    for i in 1..=count {
                        let chunk = ContentChunk::new(ContentBlock::Text(TextContent::new(
                            format!("after {i}"),
                        )));
                        let update = SessionNotification::new(
                            session.clone(),
                            SessionUpdate::AgentMessageChunk(chunk),
                        );
                        if client.notify(update).await.is_err() {
                            return;
                        }
                    }
                });
                return Ok(PromptResponse::new(StopReason::EndTurn));
            }
            ["future"] => {
                for update in FUTURE {
                    let raw = update.replace("SESSION", &session.0);
                    let raw = sacp::jsonrpc::RawJson::from_string(raw)?;
                    client.notify_raw("session/update", Some(raw)).await?;
                }
                // A typed answer that keeps the JSON it was read from: `futureRes` goes out.
                let answer = sacp::jsonrpc::RawJson::from_string(FUTURE_ANSWER)?;
                return sacp::jsonrpc::lossless::read(&answer);
            }
            ["noise", lines] => {
                let lines: u64 = lines.parse().map_err(|_| bad_prompt("noise N"))?;
                {
                    let mut stderr = std::io::stderr().lock();
                    for i in 1..=lines {
                        let _ = std::io::Write::write_all(
                            &mut stderr,
                            format!("noise line {i} of {lines}, written to stderr on purpose\n")
                                .as_bytes(),
                        );
                    }
                }
                say(format!("made {lines} lines of noise")).await?;
            }
            ["tools", ..] | ["call", ..] | ["connect", ..] | ["mcp-request", ..] => {
                for line in self.mcp.run(cx, &session, first.unwrap_or_default()).await {
                    say(line).await?;
                }
            }
            ["setup"] => {
                let setup = lock(&self.setups).get(&session.0).cloned();
                say(setup.unwrap_or_else(|| "unknown session".to_owned())).await?;
            }
            ["sleep", ms] => {
                let ms: u64 = ms.parse().map_err(|_| bad_prompt("sleep MS"))?;
                let turn = cx.turn(&session);
                tokio::select! {
                    () = turn.cancelled() => return Ok(PromptResponse::new(StopReason::Cancelled)),
                    () = tokio::time::sleep(std::time::Duration::from_millis(ms)) => {}
                }
                say(format!("slept {ms} ms")).await?;
            }
            ["permission"] => {
                let tool = ToolCallUpdate::new("call-1".to_owned()).title("write a file");
                let options = vec![
                    PermissionOption::new(
                        "allow".to_owned(),
                        "Allow",
                        PermissionOptionKind::AllowOnce,
                    ),
                    PermissionOption::new(
                        "reject".to_owned(),
                        "Reject",
                        PermissionOptionKind::RejectOnce,
                    ),
                ];
                let request = RequestPermissionRequest::new(session.clone(), tool, options);
                let answer = cx.client().request(request).await?;
                say(match answer.outcome {
                    RequestPermissionOutcome::Selected(selected) => {
                        format!("permission: {}", selected.option_id.0)
                    }
                    RequestPermissionOutcome::Cancelled => "permission: cancelled".to_owned(),
                    RequestPermissionOutcome::Other(other) => format!("permission: {other:?}"),
                })
                .await?;
            }
            ["read", path] => {
                let request = ReadTextFileRequest::new(session.clone(), *path);
                let file = cx.client().request(request).await?;
                say(format!("read: {}", file.content)).await?;
            }
            ["wait"] => {
                let turn = cx.turn(&session);
                say("waiting".to_owned()).await?;
                turn.cancelled().await;
                // For tests that watch its stderr: the cancel reached it.
                eprintln!("test-agent: the turn of {} was cancelled", session.0);
                return Ok(PromptResponse::new(StopReason::Cancelled));
            }
            ["crash", rest @ ..] => {
                let code = rest.first().and_then(|c| c.parse().ok()).unwrap_or(3);
                let chunks: u64 = rest.get(1).and_then(|n| n.parse().ok()).unwrap_or(0);
                for i in 1..=chunks {
                    say(format!("chunk {i} before the crash")).await?;
                }
                say("crashing".to_owned()).await?;
                // Its last words reach the client before the process ends.
                cx.connection().flush().await;
                tracing::error!(code, "crashing on purpose");
                std::process::exit(code);
            }
            _ => {
                if let Some((server, tool)) = first.and_then(mcp::instruction) {
                    let call = format!("call {server} {tool} {{}}");
                    for line in self.mcp.run(cx, &session, &call).await {
                        say(line).await?;
                    }
                    return Ok(PromptResponse::new(StopReason::EndTurn));
                }
                for block in req.prompt {
                    if let ContentBlock::Text(text) = block {
                        say(text.text).await?;
                    }
                }
            }
        }
        Ok(PromptResponse::new(StopReason::EndTurn))
    }
}

/// What the `future` keyword streams (`SESSION` is the session's id): the messages of a newer
/// agent than this schema knows, for tests of what proxies keep.
pub const FUTURE: [&str; 3] = [
    r#"{"sessionId":"SESSION","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"future","futureAnno":{"x":1}},"futureUpd":true},"futureParam":[1,null]}"#,
    r#"{"sessionId":"SESSION","update":{"sessionUpdate":"tool_call_update","toolCallId":"t1","title":null,"locations":null,"status":"completed"}}"#,
    r#"{"sessionId":"SESSION","update":{"sessionUpdate":"future_kind","futureData":{"a":[1,2]}}}"#,
];

/// The answer of the `future` keyword.
pub const FUTURE_ANSWER: &str = r#"{"stopReason":"end_turn","futureRes":3}"#;

fn bad_prompt(usage: &str) -> sacp::Error {
    sacp::Error::invalid_params(format!("the test agent expects `{usage}`"))
}
