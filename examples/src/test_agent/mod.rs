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
//! | `plan` | streams a plan of two steps and a tool call `think it over` (in progress, then completed), the plan done, then says `planned` |
//! | `read PATH` | reads `PATH` through the client's `fs/read_text_file` and echoes it |
//! | `sleep MS` | waits `MS` milliseconds (a `session/cancel` ends it early), then echoes |
//! | `wait` | streams `waiting`, then waits for `session/cancel` and ends with `cancelled` (saying so on stderr) |
//! | `crash [CODE] [N]` | streams `N` chunks (default 0), then `crashing`, then exits at once with `CODE` (default 3); in a chain in one process (`TestAgent::in_process`) it waits to be ended instead |
//! | `noise N` | writes `N` lines to stderr, then echoes |
//! | `setup` | says what the session was created with: `cwd=… servers=[…]` (its `mcpServers` as JSON) |
//! | `then N` | ends the turn at once, then streams `N` chunks `after 1` … `after N` right behind the answer |
//! | `future` | sends what a newer agent would: a chunk `future` with fields this schema lacks (`futureAnno`, `futureUpd`, `futureParam`), a `tool_call_update` with explicit `null`s, an update of a kind this schema lacks, and an answer with `futureRes` (see [`crate::test_agent::FUTURE`]) |
//! | `subagent [TITLE]` | starts a subagent: announces a child session `c1`, `c2`, … (numbered per process) with a `subagent_update` on the prompt's session (its `title` TITLE, cancellable; see [`crate::test_agent::SUBAGENT`]), streams `child cN working` in the child, says `started cN`; the child then waits, and a `session/cancel` of the child makes it stream `child cN cancelled` (saying so on stderr) |
//! | `elicit` | asks the client `elicitation/create` (a form with one `name` field, scoped to the session) and says what came back: `elicitation: accept {"name":…}`, `elicitation: decline`, `elicitation: cancel` |
//!
//! It says who it is in `initialize` (`agentInfo`: `test-agent` and the crate's version).
//! Sessions: it lists them (`session/list`, only those of the request's `cwd` when it gives
//! one), forgets one on `session/close` (which answers a prompt of it still in flight
//! `cancelled`), and implements
//! `session/load` (the session's history replayed as `session/update`s before the answer),
//! `session/resume` (no replay) and `session/fork` (a new session with the history of the
//! one forked), and says so in `initialize` (`loadSession`, `sessionCapabilities.list`,
//! `close`, `resume`, `fork`). A history is what its turns said, the prompts included (its first
//! 1,000 updates: a long stream does not grow the agent's memory). With
//! `--sessions DIR` (see [`TestAgent::keeping_sessions_in`]) sessions are kept in `DIR` too,
//! so a later process loads them; new ids then skip the ones kept there.
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

mod history;
mod mcp_client;
mod v2;

pub use self::v2::{FUTURE_V2, TestAgentV2};

use sacp::acp::{
    AgentCapabilities, AuthMethod, AuthMethodAgent, AuthMethodTerminal, AuthenticateRequest,
    AuthenticateResponse, CloseSessionRequest, CloseSessionResponse, ContentBlock, ContentChunk,
    CreateElicitationRequest, CreateElicitationResponseKind, ForkSessionRequest,
    ForkSessionResponse, Implementation, InitializeRequest, InitializeResponse,
    ListSessionsRequest, ListSessionsResponse, LoadSessionRequest, LoadSessionResponse,
    McpCapabilities, McpServer, NewSessionRequest, NewSessionResponse, PermissionOption,
    PermissionOptionKind, Plan, PlanEntry, PlanEntryPriority, PlanEntryStatus, PromptCapabilities,
    PromptRequest, PromptResponse, ProtocolVersion, ReadTextFileRequest, RequestPermissionOutcome,
    RequestPermissionRequest, ResumeSessionRequest, ResumeSessionResponse, SessionCapabilities,
    SessionCloseCapabilities, SessionForkCapabilities, SessionId, SessionInfo,
    SessionListCapabilities, SessionNotification, SessionResumeCapabilities, SessionUpdate,
    StopReason, TextContent, ToolCall, ToolCallStatus, ToolCallUpdate,
};
use sacp::agent::Cx;
use sacp::jsonrpc::RawJson;

use self::history::{History, Session};
use std::sync::atomic::{AtomicU64, Ordering};

/// The test agent; see the module docs for what it does.
#[derive(Debug, Default)]
pub struct TestAgent {
    /// The last `session-N` handed out.
    sessions: AtomicU64,
    /// The last subagent `cN` started.
    children: AtomicU64,
    /// The MCP servers of each session.
    mcp: mcp_client::Servers,
    /// Whether it declares `mcpCapabilities.http`.
    mcp_http: bool,
    /// Every session: its setup and what was said in it.
    history: History,
    /// How long `initialize` waits before it is answered (`--initialize-delay`): an agent slow
    /// to start, whose client sends its first `session/new` meanwhile.
    initialize_delay: Option<std::time::Duration>,
    /// It shares its process (see [`TestAgent::in_process`]).
    in_process: bool,
    /// Each session with a turn in flight, told when it is closed.
    closing: Closing,
    /// It takes a history with `session/new` (`--history`).
    takes_histories: bool,
    /// It refuses prompts longer than this many bytes of text (`--max-prompt`).
    max_prompt: Option<usize>,
    /// What it leaves out of its offer to take sessions back (`--offers`): `resume`, `load`.
    withheld: (bool, bool),
    /// It neither offers nor serves `session/close` (`--no-close`).
    no_close: bool,
    /// It offers authentication methods (`--auth`).
    auth: bool,
    /// It takes images in prompts, and says so (`--image`).
    takes_images: bool,
}

/// Tells the turns of a session that it was closed.
#[derive(Debug, Default)]
struct Closing(
    std::sync::Mutex<std::collections::HashMap<String, tokio::sync::watch::Sender<bool>>>,
);

impl Closing {
    fn watch(&self, session: &str) -> tokio::sync::watch::Receiver<bool> {
        let mut open = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        open.entry(session.to_owned())
            .or_insert_with(|| tokio::sync::watch::channel(false).0)
            .subscribe()
    }

    fn close(&self, session: &str) {
        let mut open = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(closed) = open.remove(session) {
            closed.send_replace(true);
        }
    }
}

impl TestAgent {
    /// Keeps its sessions in `dir` too (`test-agent --sessions DIR`), so that a later process
    /// can load or resume them.
    pub fn keeping_sessions_in(self, dir: std::path::PathBuf) -> Self {
        TestAgent {
            history: History::on_disk(dir),
            ..self
        }
    }

    /// Answers `initialize` only after `delay` (`test-agent --initialize-delay 500ms`).
    pub fn answering_initialize_after(self, delay: std::time::Duration) -> Self {
        TestAgent {
            initialize_delay: Some(delay),
            ..self
        }
    }

    /// The agent that speaks MCP over ACP itself (`test-agent --mcp-acp`).
    pub fn speaking_mcp_over_acp() -> Self {
        TestAgent {
            mcp: mcp_client::Servers::over_acp(),
            ..TestAgent::default()
        }
    }

    /// The agent that speaks the MCP over ACP of ACP's RFD (`test-agent --mcp-rfd`): it
    /// declares `mcpCapabilities.acp` and calls `{"type": "acp"}` servers with `mcp/message`.
    pub fn speaking_rfd_mcp_over_acp() -> Self {
        TestAgent {
            mcp: mcp_client::Servers::rfd(),
            ..TestAgent::default()
        }
    }

    /// For a chain in one process (`sacp::testing::TestChain`): `crash` cannot end a process
    /// it shares, so after its last words it waits, unanswered, for the test to end it as a
    /// crash would (`RunningChain::kill`).
    pub fn in_process(self) -> Self {
        TestAgent {
            in_process: true,
            ..self
        }
    }

    /// Says in `initialize` that it takes a history with `session/new`
    /// (`_meta.sacp.history`, see [`sacp::protocol::history`]) and starts such a session with
    /// it, as if its turns had been run here (`test-agent --history`).
    pub fn taking_histories(self) -> Self {
        TestAgent {
            takes_histories: true,
            ..self
        }
    }

    /// Says in `initialize` that it takes images in prompts (`promptCapabilities.image`), and
    /// takes them: an image block of a prompt is answered `image MIME DATA`, its media type and
    /// its base64 data as they came (`test-agent --image`).
    pub fn taking_images(self) -> Self {
        TestAgent {
            takes_images: true,
            ..self
        }
    }

    /// Refuses a prompt whose text is longer than `bytes` with an invalid-params error, as an
    /// agent whose model's context is too small for it would (`test-agent --max-prompt
    /// BYTES`).
    pub fn refusing_prompts_over(self, bytes: usize) -> Self {
        TestAgent {
            max_prompt: Some(bytes),
            ..self
        }
    }

    /// Offers in `initialize` to take sessions back with `session/resume` only if `resume`,
    /// with `session/load` only if `load` (`test-agent --offers resume,load|resume|load|none`;
    /// both by default): an agent that cannot, for the tests of restoring a session.
    pub fn offering(self, resume: bool, load: bool) -> Self {
        TestAgent {
            withheld: (!resume, !load),
            ..self
        }
    }

    /// Neither offers `session/close` in `initialize` nor serves it (`test-agent --no-close`):
    /// an agent of the many that cannot close a session.
    pub fn not_closing(self) -> Self {
        TestAgent {
            no_close: true,
            ..self
        }
    }

    /// Offers authentication in `initialize` (`test-agent --auth`), as a registry's agent must:
    /// `login` (an `agent` method, which `authenticate` takes) and, to a client that takes
    /// terminal methods, `setup` (run as `test-agent --setup` with `TEST_AGENT_SETUP=1`).
    pub fn authenticating(self) -> Self {
        TestAgent { auth: true, ..self }
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
        if let Some(delay) = self.initialize_delay {
            tokio::time::sleep(delay).await;
        }
        let mut sessions = SessionCapabilities::new()
            .list(SessionListCapabilities::new())
            .fork(SessionForkCapabilities::new());
        if !self.no_close {
            sessions = sessions.close(SessionCloseCapabilities::new());
        }
        if !self.withheld.0 {
            sessions = sessions.resume(SessionResumeCapabilities::new());
        }
        let mut capabilities = AgentCapabilities::default()
            .load_session(!self.withheld.1)
            .session_capabilities(sessions);
        if self.mcp_http {
            capabilities = capabilities.mcp_capabilities(McpCapabilities::default().http(true));
        }
        if self.takes_histories {
            sacp::protocol::history::History::offer(&mut capabilities);
        }
        if self.takes_images {
            capabilities = capabilities.prompt_capabilities(PromptCapabilities::new().image(true));
        }
        let terminal = req
            .client_capabilities
            .as_ref()
            .and_then(|c| c.auth.as_ref())
            .and_then(|a| a.terminal)
            .unwrap_or(false);
        // ACP v1 is what it speaks, whatever the client asked for: the client decides whether
        // it can go on with that.
        let mut answer = InitializeResponse::new(ProtocolVersion::from(1))
            .agent_capabilities(capabilities)
            .agent_info(Implementation::new("test-agent", env!("CARGO_PKG_VERSION")));
        if self.auth {
            let mut methods = vec![AuthMethod::Agent(AuthMethodAgent::new(
                "login".to_owned(),
                "Log in",
            ))];
            if terminal {
                let setup = AuthMethodTerminal::new("setup".to_owned(), "Set up in a terminal")
                    .args(vec!["--setup".to_owned()])
                    .env(indexmap::IndexMap::from([(
                        "TEST_AGENT_SETUP".to_owned(),
                        "1".to_owned(),
                    )]));
                methods.push(AuthMethod::Terminal(setup));
            }
            answer = answer.auth_methods(methods);
        }
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

    /// `authenticate` with a method it offered: said on stderr (for the tests that watch it).
    #[on_request]
    async fn authenticate(
        &self,
        req: AuthenticateRequest,
        _cx: &Cx,
    ) -> sacp::Result<AuthenticateResponse> {
        if !self.auth || req.method_id.0.as_str() != "login" {
            return Err(sacp::Error::invalid_params(format!(
                "no authentication method {:?}",
                req.method_id.0
            )));
        }
        eprintln!("test-agent: authenticated with login");
        Ok(AuthenticateResponse::new())
    }

    #[on_request]
    async fn new_session(
        &self,
        mut req: NewSessionRequest,
        _cx: &Cx,
    ) -> sacp::Result<NewSessionResponse> {
        let given = match self.takes_histories {
            true => sacp::protocol::history::History::take(&mut req)?,
            false => None,
        };
        let session = self.history.fresh_id("session-", &self.sessions);
        let given = given.map(|h| h.into_updates()).unwrap_or_default();
        self.start(&session, &req.cwd, &req.mcp_servers, given)
            .await;
        Ok(NewSessionResponse::new(session))
    }

    /// Loads a session of this process or, with `--sessions`, of an earlier one: its history
    /// is replayed before the answer.
    #[on_request]
    async fn load_session(
        &self,
        req: LoadSessionRequest,
        cx: &Cx,
    ) -> sacp::Result<LoadSessionResponse> {
        let kept = self
            .reopen(&req.session_id, &req.cwd, &req.mcp_servers)
            .await?;
        for update in kept.updates {
            let update = SessionNotification::new(req.session_id.clone(), update);
            cx.client().notify(update).await?;
        }
        Ok(LoadSessionResponse::new())
    }

    /// Resumes a session as `session/load` does, without the replay.
    #[on_request]
    async fn resume_session(
        &self,
        req: ResumeSessionRequest,
        _cx: &Cx,
    ) -> sacp::Result<ResumeSessionResponse> {
        let servers = req.mcp_servers.clone().unwrap_or_default();
        self.reopen(&req.session_id, &req.cwd, &servers).await?;
        Ok(ResumeSessionResponse::new())
    }

    /// A new session with the history of the one forked.
    #[on_request]
    async fn fork_session(
        &self,
        req: ForkSessionRequest,
        _cx: &Cx,
    ) -> sacp::Result<ForkSessionResponse> {
        let parent = self
            .history
            .get(&req.session_id.0)
            .ok_or_else(|| unknown_session(&req.session_id))?;
        let servers = req.mcp_servers.clone().unwrap_or_default();
        let fork = self.history.fresh_id("session-", &self.sessions);
        self.start(&fork, &req.cwd, &servers, parent.updates).await;
        Ok(ForkSessionResponse::new(fork))
    }

    /// Lists the sessions it has (with the `cwd` each was created in), those of the request's
    /// `cwd` only when it names one.
    #[on_request]
    async fn list_sessions(
        &self,
        req: ListSessionsRequest,
        _cx: &Cx,
    ) -> sacp::Result<ListSessionsResponse> {
        let sessions: Vec<SessionInfo> = self
            .history
            .all()
            .into_iter()
            .filter(|(_, session)| req.cwd.as_ref().is_none_or(|cwd| *cwd == session.cwd))
            .map(|(id, session)| SessionInfo::new(id, session.cwd))
            .collect();
        Ok(ListSessionsResponse::new(sessions))
    }

    /// Forgets the session; a prompt of it still in flight is answered `cancelled` (the
    /// runtime has cancelled its turn, as the schema asks of `session/close`).
    #[on_request]
    async fn close_session(
        &self,
        req: CloseSessionRequest,
        _cx: &Cx,
    ) -> sacp::Result<CloseSessionResponse> {
        if self.no_close {
            return Err(sacp::Error::method_not_found("session/close"));
        }
        self.history.forget(&req.session_id.0);
        self.closing.close(&req.session_id.0);
        Ok(CloseSessionResponse::new())
    }

    /// A turn, which the session's `session/close` ends `cancelled` whatever it is doing.
    #[on_request]
    async fn prompt(&self, req: PromptRequest, cx: &Cx) -> sacp::Result<PromptResponse> {
        let mut closed = self.closing.watch(&req.session_id.0);
        tokio::select! {
            // A turn that ends as the close arrives (`wait`, `sleep`) says so itself.
            biased;
            answer = self.turn(req, cx) => answer,
            _ = closed.wait_for(|closed| *closed) => Ok(PromptResponse::new(StopReason::Cancelled)),
        }
    }
}

impl TestAgent {
    /// What a prompt does (the module docs' table).
    async fn turn(&self, req: PromptRequest, cx: &Cx) -> sacp::Result<PromptResponse> {
        let session = req.session_id.clone();
        if let Some(max) = self.max_prompt {
            let size: usize = req
                .prompt
                .iter()
                .map(|block| match block {
                    ContentBlock::Text(text) => text.text.len(),
                    _ => 0,
                })
                .sum();
            if size > max {
                return Err(sacp::Error::invalid_params(format!(
                    "the prompt is {size} bytes of text, more than the {max} this agent takes"
                )));
            }
        }
        for block in &req.prompt {
            let update = SessionUpdate::UserMessageChunk(ContentChunk::new(block.clone()));
            self.history.said(&session.0, &update);
        }
        let client = cx.client();
        let say = |text: String| self.say(&client, &session, text);
        let first = req.prompt.iter().find_map(|block| match block {
            ContentBlock::Text(text) => Some(text.text.as_str()),
            _ => None,
        });
        let words: Vec<&str> = first.unwrap_or_default().split_whitespace().collect();
        match words.as_slice() {
            ["stream", count, rest @ ..] => self.stream(cx, &session, count, rest).await?,
            ["then", count] => {
                then(cx, &session, count)?;
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
            ["noise", lines] => say(noise(lines)?).await?,
            ["tools", ..] | ["call", ..] | ["connect", ..] | ["mcp-request", ..] => {
                for line in self.mcp.run(cx, &session, first.unwrap_or_default()).await {
                    say(line).await?;
                }
            }
            ["setup"] => {
                let setup = self.history.get(&session.0).map(|s| s.setup);
                say(setup.unwrap_or_else(|| "unknown session".to_owned())).await?;
            }
            ["subagent", title @ ..] => {
                let child = self.subagent(cx, &session, &title.join(" ")).await?;
                say(format!("started {child}")).await?;
            }
            ["elicit"] => say(elicit(cx, &session).await?).await?,
            ["sleep", ms] => {
                let ms: u64 = ms.parse().map_err(|_| bad_prompt("sleep MS"))?;
                let turn = cx.turn(&session);
                tokio::select! {
                    () = turn.cancelled() => return Ok(PromptResponse::new(StopReason::Cancelled)),
                    () = tokio::time::sleep(std::time::Duration::from_millis(ms)) => {}
                }
                say(format!("slept {ms} ms")).await?;
            }
            ["permission"] => say(permission(cx, &session).await?).await?,
            ["plan"] => {
                self.plan(&client, &session).await?;
                say("planned".to_owned()).await?;
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
            ["crash", rest @ ..] => return self.crash(cx, &session, rest).await,
            _ => {
                if let Some((server, tool)) = first.and_then(mcp_client::instruction) {
                    let call = format!("call {server} {tool} {{}}");
                    for line in self.mcp.run(cx, &session, &call).await {
                        say(line).await?;
                    }
                    return Ok(PromptResponse::new(StopReason::EndTurn));
                }
                for echo in req.prompt.into_iter().filter_map(|b| self.echo(b)) {
                    say(echo).await?;
                }
            }
        }
        Ok(PromptResponse::new(StopReason::EndTurn))
    }

    /// What it says back of a block of a prompt without a keyword: a text as it came, an image
    /// (`--image`) as `image MIME DATA`, nothing of anything else.
    fn echo(&self, block: ContentBlock) -> Option<String> {
        match block {
            ContentBlock::Text(text) => Some(text.text),
            ContentBlock::Image(image) if self.takes_images => {
                Some(format!("image {} {}", image.mime_type, image.data))
            }
            _ => None,
        }
    }

    /// `plan`: a plan of two steps, and a tool call `think it over` for the first, each told
    /// as it goes (the plan pending, the tool call in progress, then both done).
    async fn plan(&self, client: &sacp::agent::Neighbour, session: &SessionId) -> sacp::Result<()> {
        let plan = |first: PlanEntryStatus, second: PlanEntryStatus| {
            SessionUpdate::Plan(Plan::new(vec![
                PlanEntry::new("think it over", PlanEntryPriority::High, first),
                PlanEntry::new("say so", PlanEntryPriority::Medium, second),
            ]))
        };
        let call =
            ToolCall::new("think-1".to_owned(), "think it over").status(ToolCallStatus::InProgress);
        let done = ToolCallUpdate::new("think-1".to_owned()).status(ToolCallStatus::Completed);
        for update in [
            plan(PlanEntryStatus::InProgress, PlanEntryStatus::Pending),
            SessionUpdate::ToolCall(call),
            SessionUpdate::ToolCallUpdate(done),
            plan(PlanEntryStatus::Completed, PlanEntryStatus::Completed),
        ] {
            self.history.said(&session.0, &update);
            client
                .notify(SessionNotification::new(session.clone(), update))
                .await?;
        }
        Ok(())
    }

    /// Says `text` to `client` in `session`, as an agent message chunk it remembers.
    async fn say(
        &self,
        client: &sacp::agent::Neighbour,
        session: &SessionId,
        text: String,
    ) -> sacp::Result<()> {
        let chunk = ContentChunk::new(ContentBlock::Text(TextContent::new(text)));
        let update = SessionUpdate::AgentMessageChunk(chunk);
        self.history.said(&session.0, &update);
        client
            .notify(SessionNotification::new(session.clone(), update))
            .await
    }

    /// `stream N [SIZE]`: N chunks, each padded to SIZE bytes.
    async fn stream(
        &self,
        cx: &Cx,
        session: &SessionId,
        count: &str,
        rest: &[&str],
    ) -> sacp::Result<()> {
        let count: u64 = count.parse().map_err(|_| bad_prompt("stream N [SIZE]"))?;
        let size: usize = match rest {
            [] => 0,
            [size] => size.parse().map_err(|_| bad_prompt("stream N [SIZE]"))?,
            _ => return Err(bad_prompt("stream N [SIZE]")),
        };
        let client = cx.client();
        for i in 1..=count {
            let mut text = format!("chunk {i}");
            if text.len() < size {
                text.extend(std::iter::repeat_n('.', size - text.len()));
            }
            self.say(&client, session, text).await?;
        }
        Ok(())
    }

    /// `crash [CODE [N]]`: N chunks, a last word, then the process exits with CODE.
    async fn crash(
        &self,
        cx: &Cx,
        session: &SessionId,
        rest: &[&str],
    ) -> sacp::Result<PromptResponse> {
        let code = rest.first().and_then(|c| c.parse().ok()).unwrap_or(3);
        let chunks: u64 = rest.get(1).and_then(|n| n.parse().ok()).unwrap_or(0);
        let client = cx.client();
        for i in 1..=chunks {
            self.say(&client, session, format!("chunk {i} before the crash"))
                .await?;
        }
        self.say(&client, session, "crashing".to_owned()).await?;
        // Its last words reach the client before the process ends.
        cx.connection().flush().await;
        tracing::error!(code, "crashing on purpose");
        if self.in_process {
            // The test ends it (`RunningChain::kill`).
            return std::future::pending().await;
        }
        std::process::exit(code);
    }

    /// Starts session `id`: its setup, its MCP servers, the history it begins with.
    async fn start(&self, id: &str, cwd: &str, servers: &[McpServer], updates: Vec<SessionUpdate>) {
        let listed = serde_json::to_string(servers).unwrap_or_default();
        let session = Session {
            setup: format!("cwd={cwd} servers={listed}"),
            cwd: cwd.to_owned(),
            updates,
        };
        self.history.open(id, session);
        self.mcp.keep(id, servers).await;
    }

    /// A session of this process or one kept on disk, opened again in `cwd` with `servers`.
    async fn reopen(
        &self,
        id: &SessionId,
        cwd: &str,
        servers: &[McpServer],
    ) -> sacp::Result<Session> {
        let kept = self.history.get(&id.0).ok_or_else(|| unknown_session(id))?;
        self.start(&id.0, cwd, servers, kept.updates.clone()).await;
        Ok(kept)
    }

    /// Announces a subagent of `parent` and leaves it working until it is cancelled. The
    /// announcement carries what a newer agent would send too — `description: null` and a
    /// field this schema lacks (see [`SUBAGENT`]) — for tests of what proxies keep.
    async fn subagent(&self, cx: &Cx, parent: &SessionId, title: &str) -> sacp::Result<String> {
        let n = self.children.fetch_add(1, Ordering::Relaxed) + 1;
        let child = SessionId::from(format!("c{n}"));
        let title = if title.is_empty() { "subagent" } else { title };
        let announced = SUBAGENT
            .replace("PARENT", &parent.0)
            .replace("CHILD", &child.0)
            .replace("TITLE", title);
        let client = cx.client();
        client
            .notify_raw("session/update", Some(RawJson::from_string(announced)?))
            .await?;
        let say = move |text: String| {
            let chunk = ContentChunk::new(ContentBlock::Text(TextContent::new(text)));
            SessionNotification::new(child.clone(), SessionUpdate::AgentMessageChunk(chunk))
        };
        client.notify(say(format!("child c{n} working"))).await?;
        // The child's work: until the client cancels it.
        let turn = cx.turn(&SessionId::from(format!("c{n}")));
        cx.spawn(async move {
            turn.cancelled().await;
            eprintln!("test-agent: the subagent c{n} was cancelled");
            let _ = client.notify(say(format!("child c{n} cancelled"))).await;
        });
        Ok(format!("c{n}"))
    }
}

fn unknown_session(id: &SessionId) -> sacp::Error {
    sacp::Error::invalid_params(format!("the test agent has no session {:?}", id.0))
}

/// What the `future` keyword streams (`SESSION` is the session's id): the messages of a newer
/// agent than this schema knows, for tests of what proxies keep.
pub const FUTURE: [&str; 3] = [
    r#"{"sessionId":"SESSION","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"future","futureAnno":{"x":1}},"futureUpd":true},"futureParam":[1,null]}"#,
    r#"{"sessionId":"SESSION","update":{"sessionUpdate":"tool_call_update","toolCallId":"t1","title":null,"locations":null,"status":"completed"}}"#,
    r#"{"sessionId":"SESSION","update":{"sessionUpdate":"future_kind","futureData":{"a":[1,2]}}}"#,
];

/// The announcement of a subagent (`subagent` keyword; `PARENT`, `CHILD` and `TITLE` filled
/// in): a `subagent_update` that may be cancelled, with an explicit `null` and a field this
/// schema lacks.
pub const SUBAGENT: &str = r#"{"sessionId":"PARENT","update":{"sessionUpdate":"subagent_update","sessionId":"CHILD","title":"TITLE","description":null,"capabilities":{"cancel":{}},"futureSub":{"depth":1}}}"#;

/// The answer of the `future` keyword.
pub const FUTURE_ANSWER: &str = r#"{"stopReason":"end_turn","futureRes":3}"#;

fn bad_prompt(usage: &str) -> sacp::Error {
    sacp::Error::invalid_params(format!("the test agent expects `{usage}`"))
}

/// `then N`: the turn ends at once, and N chunks follow its answer.
fn then(cx: &Cx, session: &SessionId, count: &str) -> sacp::Result<()> {
    let count: u64 = count.parse().map_err(|_| bad_prompt("then N"))?;
    let (client, session) = (cx.client(), session.clone());
    cx.after_answer(async move {
        for i in 1..=count {
            let chunk =
                ContentChunk::new(ContentBlock::Text(TextContent::new(format!("after {i}"))));
            let update =
                SessionNotification::new(session.clone(), SessionUpdate::AgentMessageChunk(chunk));
            if client.notify(update).await.is_err() {
                return;
            }
        }
    })
}

/// `noise N`: N lines on stderr; what it says of them.
fn noise(lines: &str) -> sacp::Result<String> {
    let lines: u64 = lines.parse().map_err(|_| bad_prompt("noise N"))?;
    let mut stderr = std::io::stderr().lock();
    for i in 1..=lines {
        let _ = std::io::Write::write_all(
            &mut stderr,
            format!("noise line {i} of {lines}, written to stderr on purpose\n").as_bytes(),
        );
    }
    Ok(format!("made {lines} lines of noise"))
}

/// `elicit`: a form asking the client for a name; what it says of the answer.
async fn elicit(cx: &Cx, session: &SessionId) -> sacp::Result<String> {
    let request: CreateElicitationRequest = serde_json::from_value(serde_json::json!({
        "mode": "form",
        "message": "What is your name?",
        "sessionId": session.0,
        "requestedSchema": {
            "type": "object",
            "properties": {"name": {"type": "string", "title": "Name"}},
            "required": ["name"]
        }
    }))?;
    let answer = cx.client().request(request).await?;
    Ok(match answer.kind {
        CreateElicitationResponseKind::Accept(accept) => format!(
            "elicitation: accept {}",
            serde_json::to_string(&accept.content).unwrap_or_default()
        ),
        CreateElicitationResponseKind::Decline => "elicitation: decline".to_owned(),
        CreateElicitationResponseKind::Cancel => "elicitation: cancel".to_owned(),
        CreateElicitationResponseKind::Other(other) => {
            format!("elicitation: {}", serde_json::Value::Object(other))
        }
    })
}

/// `permission`: asks the client to allow a write; what it says of the answer.
async fn permission(cx: &Cx, session: &SessionId) -> sacp::Result<String> {
    let tool = ToolCallUpdate::new("call-1".to_owned()).title("write a file");
    let options = vec![
        PermissionOption::new("allow".to_owned(), "Allow", PermissionOptionKind::AllowOnce),
        PermissionOption::new(
            "reject".to_owned(),
            "Reject",
            PermissionOptionKind::RejectOnce,
        ),
    ];
    let request = RequestPermissionRequest::new(session.clone(), tool, options);
    let answer = cx.client().request(request).await?;
    Ok(match answer.outcome {
        RequestPermissionOutcome::Selected(selected) => {
            format!("permission: {}", selected.option_id.0)
        }
        RequestPermissionOutcome::Cancelled => "permission: cancelled".to_owned(),
        RequestPermissionOutcome::Other(other) => format!("permission: {other:?}"),
    })
}
