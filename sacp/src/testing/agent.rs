//! [`ScriptedAgent`]: an ACP agent that plays a script per prompt and records what it met.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Map, Value};

use crate::acp::{
    AgentCapabilities, CancelNotification, ContentBlock, ContentChunk, InitializeRequest,
    InitializeResponse, McpServer, NewSessionRequest, NewSessionResponse, PermissionOption,
    PermissionOptionKind, PromptRequest, PromptResponse, ProtocolVersion, ReadTextFileRequest,
    RequestPermissionOutcome, RequestPermissionRequest, SessionId, SessionNotification,
    SessionUpdate, Side, StopReason, TextContent, ToolCall, ToolCallStatus, ToolCallUpdate,
};
use crate::agent::{Agent, Cx, Incoming, McpClient};
use crate::jsonrpc::{BoxFuture, Error, RawJson};
use crate::lock::lock;
use crate::schema::mcp::CallToolResult;

type Custom = Arc<dyn Fn(Cx, SessionId) -> BoxFuture<Result<(), Error>> + Send + Sync>;
type Chooser = Arc<dyn Fn(&str) -> Vec<Step> + Send + Sync>;

/// One thing a [`ScriptedAgent`] does in a turn. A turn plays its steps in order, then ends
/// with `end_turn` unless a step ended it; a `session/cancel` ends it at once with
/// `cancelled`, whatever step it is in.
#[derive(Clone)]
pub struct Step(Do);

#[derive(Clone)]
enum Do {
    Say(String),
    Think(String),
    ToolCall(String, String),
    ToolDone(String, ToolCallStatus),
    AskPermission(String),
    ReadFile(String),
    ListTools,
    CallTool(String, Map<String, Value>),
    Sleep(Duration),
    WaitForCancel,
    Fail(Error),
    Crash,
    End(StopReason),
    AfterAnswer(Vec<Step>),
    Custom(Custom),
}

impl std::fmt::Debug for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Do::Say(text) => write!(f, "say({text:?})"),
            Do::Think(text) => write!(f, "think({text:?})"),
            Do::ToolCall(id, title) => write!(f, "tool_call({id:?}, {title:?})"),
            Do::ToolDone(id, status) => write!(f, "tool_done({id:?}, {status})"),
            Do::AskPermission(title) => write!(f, "ask_permission({title:?})"),
            Do::ReadFile(path) => write!(f, "read_file({path:?})"),
            Do::ListTools => f.write_str("list_tools"),
            Do::CallTool(name, args) => write!(f, "call_tool({name:?}, {args:?})"),
            Do::Sleep(d) => write!(f, "sleep({d:?})"),
            Do::WaitForCancel => f.write_str("wait_for_cancel"),
            Do::Fail(e) => write!(f, "fail({e})"),
            Do::Crash => f.write_str("crash"),
            Do::End(reason) => write!(f, "end({reason:?})"),
            Do::AfterAnswer(steps) => write!(f, "after_answer({steps:?})"),
            Do::Custom(_) => f.write_str("run(..)"),
        }
    }
}

impl Step {
    /// Streams `text` as an `agent_message_chunk`.
    pub fn say(text: impl Into<String>) -> Step {
        Step(Do::Say(text.into()))
    }

    /// Streams `text` as an `agent_thought_chunk`.
    pub fn think(text: impl Into<String>) -> Step {
        Step(Do::Think(text.into()))
    }

    /// Reports a tool call (`tool_call`, `pending`) with this id and title.
    pub fn tool_call(id: impl Into<String>, title: impl Into<String>) -> Step {
        Step(Do::ToolCall(id.into(), title.into()))
    }

    /// Reports the tool call `id` ended (`tool_call_update` with `status`).
    pub fn tool_done(id: impl Into<String>, status: ToolCallStatus) -> Step {
        Step(Do::ToolDone(id.into(), status))
    }

    /// Asks the client `session/request_permission` for a tool call titled `title`, with the
    /// options `allow` (allow once) and `reject` (reject once); records the outcome
    /// ([`ScriptedAgent::permission_outcomes`]) and says `permission: OPTION` (or
    /// `permission: cancelled`).
    pub fn ask_permission(title: impl Into<String>) -> Step {
        Step(Do::AskPermission(title.into()))
    }

    /// Reads `path` through the client (`fs/read_text_file`); records it
    /// ([`ScriptedAgent::files_read`]) and says `read: CONTENT`.
    pub fn read_file(path: impl Into<String>) -> Step {
        Step(Do::ReadFile(path.into()))
    }

    /// Lists the tools of every `acp:` MCP server the session was created with (over MCP over
    /// ACP, as a conductor hands them to an agent that speaks it); records them
    /// ([`ScriptedAgent::tools_listed`]) and says `tools of NAME: a, b`.
    pub fn list_tools() -> Step {
        Step(Do::ListTools)
    }

    /// Calls the tool `name` on whichever of the session's `acp:` MCP servers has it, shown
    /// as a tool call (`tool_call` in progress, then `tool_call_update` completed or failed);
    /// records the result ([`ScriptedAgent::tool_results`]) and says `NAME: TEXT` (the
    /// result's text content).
    pub fn call_tool(name: impl Into<String>, arguments: Value) -> Step {
        let arguments = match arguments {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        Step(Do::CallTool(name.into(), arguments))
    }

    /// Waits `duration` (a cancel ends it early). Under `tokio::time::pause()` time jumps.
    pub fn sleep(duration: Duration) -> Step {
        Step(Do::Sleep(duration))
    }

    /// Waits for the client's `session/cancel`, then ends the turn `cancelled`.
    pub fn wait_for_cancel() -> Step {
        Step(Do::WaitForCancel)
    }

    /// Answers the prompt with `error`.
    pub fn fail(error: Error) -> Step {
        Step(Do::Fail(error))
    }

    /// Ends the agent as a crash would: what it sent before is delivered, then its connection
    /// ends without another word (no answer to the prompt, as a process that dies gives none;
    /// see [`RunningChain::kill`](super::RunningChain::kill)), and the chain ends.
    pub fn crash() -> Step {
        Step(Do::Crash)
    }

    /// Ends the turn with `reason`.
    pub fn end(reason: StopReason) -> Step {
        Step(Do::End(reason))
    }

    /// Plays `steps` right after the turn's answer was sent (updates an agent sends behind
    /// its answer: usage, commands, a title).
    pub fn after_answer(steps: impl IntoIterator<Item = Step>) -> Step {
        Step(Do::AfterAnswer(steps.into_iter().collect()))
    }

    /// Runs `work` with the agent's context and the session: anything a step above does not
    /// cover.
    pub fn run<F, Fut>(work: F) -> Step
    where
        F: Fn(Cx, SessionId) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), Error>> + Send + 'static,
    {
        Step(Do::Custom(Arc::new(move |cx, session| {
            Box::pin(work(cx, session))
        })))
    }
}

/// What a [`ScriptedAgent`] met, shared by its clones.
#[derive(Default)]
struct Records {
    initialize: Mutex<Vec<InitializeRequest>>,
    sessions: Mutex<Vec<NewSessionRequest>>,
    servers: Mutex<HashMap<String, Vec<McpServer>>>,
    prompts: Mutex<Vec<(SessionId, String)>>,
    cancels: Mutex<Vec<SessionId>>,
    permissions: Mutex<Vec<RequestPermissionOutcome>>,
    files: Mutex<Vec<(String, String)>>,
    tools: Mutex<Vec<(String, Vec<String>)>>,
    results: Mutex<Vec<(String, Result<CallToolResult, Error>)>>,
}

struct Inner {
    mcp_over_acp: AtomicBool,
    queue: Mutex<VecDeque<Vec<Step>>>,
    choose: Mutex<Option<Chooser>>,
    sessions: AtomicU64,
    /// Tool calls so far, by session: their ids are `call-1`, `call-2`, … in each session.
    calls: Mutex<HashMap<String, u64>>,
    records: Records,
    /// In a [`TestChain`](super::TestChain): the kit's way to end it as a crash would.
    kill: std::sync::OnceLock<tokio_util::sync::CancellationToken>,
}

/// An ACP agent for tests: it answers `initialize` (protocol version 1, and MCP over ACP) and
/// `session/new` (`session-1`, `session-2`, …), and plays a script of [`Step`]s for each
/// prompt — the next one queued with [`ScriptedAgent::script`], else what
/// [`ScriptedAgent::on_prompt`] chooses, else an echo of the prompt's text. It records what it
/// was sent and what its steps got back. Clones share it.
///
/// ```no_run
/// use sacp::testing::{ScriptedAgent, Step};
///
/// let agent = ScriptedAgent::new()
///     .script([Step::say("first turn")])
///     .on_prompt(|text| match text {
///         "tools" => vec![Step::list_tools()],
///         _ => vec![Step::say(format!("you said {text}"))],
///     });
/// # let _ = agent;
/// ```
#[derive(Clone)]
pub struct ScriptedAgent(Arc<Inner>);

impl std::fmt::Debug for ScriptedAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptedAgent")
            .field("queued", &lock(&self.0.queue).len())
            .finish_non_exhaustive()
    }
}

impl Default for ScriptedAgent {
    fn default() -> Self {
        ScriptedAgent::new()
    }
}

impl ScriptedAgent {
    /// Lets the kit's chain end it (see [`Step::crash`]).
    pub(super) fn killed_by(&self, kill: tokio_util::sync::CancellationToken) {
        let _ = self.0.kill.set(kill);
    }

    /// An agent that echoes every prompt's text, and speaks MCP over ACP.
    pub fn new() -> ScriptedAgent {
        ScriptedAgent(Arc::new(Inner {
            mcp_over_acp: AtomicBool::new(true),
            queue: Mutex::default(),
            choose: Mutex::new(None),
            sessions: AtomicU64::new(0),
            calls: Mutex::default(),
            records: Records::default(),
            kill: std::sync::OnceLock::new(),
        }))
    }

    /// Queues a script for the next prompt without one (prompts take queued scripts in
    /// order).
    pub fn script(self, steps: impl IntoIterator<Item = Step>) -> ScriptedAgent {
        lock(&self.0.queue).push_back(steps.into_iter().collect());
        self
    }

    /// What to play for a prompt when no script is queued, from the prompt's text (its text
    /// blocks, joined).
    pub fn on_prompt(self, choose: impl Fn(&str) -> Vec<Step> + Send + Sync + 'static) -> Self {
        *lock(&self.0.choose) = Some(Arc::new(choose));
        self
    }

    /// Whether it says it speaks MCP over ACP (`_meta.mcp_acp_transport`; on by default).
    pub fn mcp_over_acp(self, speaks: bool) -> ScriptedAgent {
        self.0.mcp_over_acp.store(speaks, Ordering::SeqCst);
        self
    }

    /// The `initialize` requests it got.
    pub fn initializations(&self) -> Vec<InitializeRequest> {
        lock(&self.0.records.initialize).clone()
    }

    /// The `session/new` requests it got.
    pub fn sessions(&self) -> Vec<NewSessionRequest> {
        lock(&self.0.records.sessions).clone()
    }

    /// The prompts it got: their session and text, in arrival order.
    pub fn prompts(&self) -> Vec<(SessionId, String)> {
        lock(&self.0.records.prompts).clone()
    }

    /// The sessions it got a `session/cancel` for, in arrival order.
    pub fn cancels(&self) -> Vec<SessionId> {
        lock(&self.0.records.cancels).clone()
    }

    /// What the client answered its permission requests.
    pub fn permission_outcomes(&self) -> Vec<RequestPermissionOutcome> {
        lock(&self.0.records.permissions).clone()
    }

    /// The files it read: path and content.
    pub fn files_read(&self) -> Vec<(String, String)> {
        lock(&self.0.records.files).clone()
    }

    /// The tools it listed: server name and tool names.
    pub fn tools_listed(&self) -> Vec<(String, Vec<String>)> {
        lock(&self.0.records.tools).clone()
    }

    /// The tools it called: name and result.
    pub fn tool_results(&self) -> Vec<(String, Result<CallToolResult, Error>)> {
        lock(&self.0.records.results).clone()
    }

    fn script_for(&self, text: &str) -> Vec<Step> {
        if let Some(steps) = lock(&self.0.queue).pop_front() {
            return steps;
        }
        let choose = lock(&self.0.choose).clone();
        match choose {
            Some(choose) => choose(text),
            None => vec![Step::say(text)],
        }
    }

    fn initialize(&self, req: InitializeRequest) -> InitializeResponse {
        lock(&self.0.records.initialize).push(req);
        // ACP v1 is what it speaks, whatever the client asked for.
        let answer = InitializeResponse::new(ProtocolVersion::from(1))
            .agent_capabilities(AgentCapabilities::default());
        if self.0.mcp_over_acp.load(Ordering::SeqCst) {
            answer.meta(crate::protocol::mcp::capability_meta())
        } else {
            answer
        }
    }

    fn new_session(&self, req: NewSessionRequest) -> NewSessionResponse {
        let n = self.0.sessions.fetch_add(1, Ordering::SeqCst) + 1;
        let id = format!("session-{n}");
        lock(&self.0.records.servers).insert(id.clone(), req.mcp_servers.clone());
        lock(&self.0.records.sessions).push(req);
        NewSessionResponse::new(id)
    }

    async fn prompt(&self, req: PromptRequest, cx: &Cx) -> Result<PromptResponse, Error> {
        let text: String = req
            .prompt
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Text(t) => Some(t.text.as_str()),
                _ => None,
            })
            .collect();
        lock(&self.0.records.prompts).push((req.session_id.clone(), text.clone()));
        let steps = self.script_for(&text);
        let session = req.session_id;
        let turn = cx.turn(&session);
        let play = self.play(steps, &session, cx);
        tokio::select! {
            biased;
            () = turn.cancelled() => Ok(PromptResponse::new(StopReason::Cancelled)),
            played = play => played.map(PromptResponse::new),
        }
    }

    /// Plays `steps`; the stop reason, or the error to answer.
    fn play<'a>(
        &'a self,
        steps: Vec<Step>,
        session: &'a SessionId,
        cx: &'a Cx,
    ) -> std::pin::Pin<Box<dyn Future<Output = Result<StopReason, Error>> + Send + 'a>> {
        Box::pin(self.play_steps(steps, session, cx))
    }

    async fn play_steps(
        &self,
        steps: Vec<Step>,
        session: &SessionId,
        cx: &Cx,
    ) -> Result<StopReason, Error> {
        let client = cx.client();
        let tell = |update: SessionUpdate| {
            let client = client.clone();
            let notification = SessionNotification::new(session.clone(), update);
            async move { client.notify(notification).await }
        };
        let chunk = |text: String| ContentChunk::new(ContentBlock::Text(TextContent::new(text)));
        for Step(step) in steps {
            match step {
                Do::Say(text) => tell(SessionUpdate::AgentMessageChunk(chunk(text))).await?,
                Do::Think(text) => tell(SessionUpdate::AgentThoughtChunk(chunk(text))).await?,
                Do::ToolCall(id, title) => {
                    tell(SessionUpdate::ToolCall(ToolCall::new(id, title))).await?
                }
                Do::ToolDone(id, status) => {
                    tell(SessionUpdate::ToolCallUpdate(
                        ToolCallUpdate::new(id).status(status),
                    ))
                    .await?
                }
                Do::AskPermission(title) => {
                    let said = self.ask_permission(session, cx, title).await?;
                    tell(SessionUpdate::AgentMessageChunk(chunk(said))).await?;
                }
                Do::ReadFile(path) => {
                    let file = client
                        .request(ReadTextFileRequest::new(session.clone(), path.clone()))
                        .await?;
                    lock(&self.0.records.files).push((path, file.content.clone()));
                    tell(SessionUpdate::AgentMessageChunk(chunk(format!(
                        "read: {}",
                        file.content
                    ))))
                    .await?;
                }
                Do::ListTools => {
                    for said in self.list_tools(session, cx).await? {
                        tell(SessionUpdate::AgentMessageChunk(chunk(said))).await?;
                    }
                }
                Do::CallTool(tool, arguments) => {
                    let said = self.call_tool(session, cx, &tool, arguments).await?;
                    tell(SessionUpdate::AgentMessageChunk(chunk(said))).await?;
                }
                Do::Sleep(duration) => tokio::time::sleep(duration).await,
                Do::WaitForCancel => std::future::pending::<()>().await,
                Do::Fail(error) => return Err(error),
                Do::Crash => {
                    match self.0.kill.get() {
                        // Its connection vanishes without another word, as a process's pipes
                        // do when it dies.
                        Some(kill) => kill.cancel(),
                        // Outside a test chain, the nearest it can do: close the connection.
                        None => cx.connection().close(),
                    }
                    std::future::pending::<()>().await;
                }
                Do::End(reason) => return Ok(reason),
                Do::AfterAnswer(later) => {
                    let agent = self.clone();
                    let (session, cx2) = (session.clone(), cx.clone());
                    cx.after_answer(async move {
                        if let Err(e) = agent.play(later, &session, &cx2).await {
                            tracing::warn!(error = %e, "a step after the answer failed");
                        }
                    })?;
                }
                Do::Custom(work) => work(cx.clone(), session.clone()).await?,
            }
        }
        Ok(StopReason::EndTurn)
    }

    /// Asks the client's permission for a tool call titled `title`, and records its answer;
    /// what the agent says of it.
    async fn ask_permission(
        &self,
        session: &SessionId,
        cx: &Cx,
        title: String,
    ) -> Result<String, Error> {
        let id = self.next_call(session);
        let options = vec![
            PermissionOption::new("allow".to_owned(), "Allow", PermissionOptionKind::AllowOnce),
            PermissionOption::new(
                "reject".to_owned(),
                "Reject",
                PermissionOptionKind::RejectOnce,
            ),
        ];
        let tool = ToolCallUpdate::new(id).title(title);
        let request = RequestPermissionRequest::new(session.clone(), tool, options);
        let outcome = cx.client().request(request).await?.outcome;
        lock(&self.0.records.permissions).push(outcome.clone());
        Ok(match outcome {
            RequestPermissionOutcome::Selected(s) => format!("permission: {}", s.option_id.0),
            RequestPermissionOutcome::Cancelled => "permission: cancelled".to_owned(),
            RequestPermissionOutcome::Other(other) => format!("permission: {other:?}"),
        })
    }

    /// Lists the tools of each of `session`'s `acp:` MCP servers, and records them; what the
    /// agent says of each.
    async fn list_tools(&self, session: &SessionId, cx: &Cx) -> Result<Vec<String>, Error> {
        let mut said = Vec::new();
        for (name, client) in self.connect(session, cx).await? {
            let tools = client.list_tools().await;
            client.close().await;
            let names: Vec<String> = tools?.into_iter().map(|t| t.name).collect();
            lock(&self.0.records.tools).push((name.clone(), names.clone()));
            said.push(format!("tools of {name}: {}", names.join(", ")));
        }
        Ok(said)
    }

    /// The id of `session`'s next tool call.
    fn next_call(&self, session: &SessionId) -> String {
        let mut calls = lock(&self.0.calls);
        let n = calls.entry(session.0.clone()).or_default();
        *n += 1;
        format!("call-{n}")
    }

    /// Connects to every `acp:` MCP server of `session`.
    async fn connect(
        &self,
        session: &SessionId,
        cx: &Cx,
    ) -> Result<Vec<(String, McpClient)>, Error> {
        let servers = lock(&self.0.records.servers)
            .get(&session.0)
            .cloned()
            .unwrap_or_default();
        let mut clients = Vec::new();
        for server in servers {
            let (name, url) = match server {
                McpServer::Http(http) => (http.name, http.url),
                McpServer::Sse(sse) => (sse.name, sse.url),
                _ => continue,
            };
            if url.starts_with("acp:") {
                clients.push((name, McpClient::connect(cx, &url, Some(session)).await?));
            }
        }
        Ok(clients)
    }

    /// Calls `tool` on the server of `session` that has it, shown as a tool call; what to say.
    async fn call_tool(
        &self,
        session: &SessionId,
        cx: &Cx,
        tool: &str,
        arguments: Map<String, Value>,
    ) -> Result<String, Error> {
        let mut found = None;
        for (name, client) in self.connect(session, cx).await? {
            let has = found.is_none() && client.list_tools().await?.iter().any(|t| t.name == tool);
            if has {
                found = Some((name, client));
            } else {
                client.close().await;
            }
        }
        let Some((server, client)) = found else {
            return Err(Error::invalid_params(format!(
                "no MCP server of session {} has a tool named {tool}",
                session.0
            )));
        };
        let tell = |update| {
            let notification = SessionNotification::new(session.clone(), update);
            let client = cx.client();
            async move { client.notify(notification).await }
        };
        let id = self.next_call(session);
        let started = ToolCall::new(id.clone(), format!("{server}.{tool}"))
            .status(ToolCallStatus::InProgress)
            .raw_input(Value::Object(arguments.clone()));
        tell(SessionUpdate::ToolCall(started)).await?;
        let result = client.call_tool(tool, Some(arguments)).await;
        client.close().await;
        let failed = result.as_ref().map_or(true, |r| r.is_error == Some(true));
        let status = if failed {
            ToolCallStatus::Failed
        } else {
            ToolCallStatus::Completed
        };
        tell(SessionUpdate::ToolCallUpdate(
            ToolCallUpdate::new(id).status(status),
        ))
        .await?;
        let said = match &result {
            Ok(result) => format!("{tool}: {}", text_of(result)),
            Err(e) => format!("{tool} failed: {}", e.message),
        };
        lock(&self.0.records.results).push((tool.to_owned(), result));
        Ok(said)
    }
}

/// The text content of a tool result, joined.
fn text_of(result: &CallToolResult) -> String {
    let value = serde_json::to_value(&result.content).unwrap_or_default();
    value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|block| block.get("text").and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join("")
}

impl Agent for ScriptedAgent {
    fn takes(method: &str, from: Side) -> bool {
        from == Side::Client
            && [
                InitializeRequest::METHOD,
                NewSessionRequest::METHOD,
                PromptRequest::METHOD,
                CancelNotification::METHOD,
            ]
            .contains(&method)
    }

    async fn dispatch(&self, message: Incoming, cx: &Cx) {
        let (method, params, reply) = message.into_parts();
        fn parse<T: serde::de::DeserializeOwned>(params: Option<RawJson>) -> Result<T, Error> {
            params.unwrap_or_else(RawJson::empty_object).parse()
        }
        match (method.as_str(), reply) {
            (m, Some(reply)) if m == InitializeRequest::METHOD => {
                reply.answer(parse(params).map(|req| self.initialize(req)))
            }
            (m, Some(reply)) if m == NewSessionRequest::METHOD => {
                reply.answer(parse(params).map(|req| self.new_session(req)))
            }
            (m, Some(reply)) if m == PromptRequest::METHOD => match parse(params) {
                Ok(req) => reply.answer(self.prompt(req, cx).await),
                Err(e) => reply.answer::<PromptResponse, _>(Err(e)),
            },
            (m, None) if m == CancelNotification::METHOD => {
                if let Ok(cancel) = parse::<CancelNotification>(params) {
                    lock(&self.0.records.cancels).push(cancel.session_id);
                }
            }
            (_, Some(reply)) => reply.answer::<(), _>(Err(Error::method_not_found(&method))),
            (_, None) => {}
        }
    }
}
