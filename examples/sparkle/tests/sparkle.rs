//! The seed's scenario with real processes: an editor runs `conductor agent sparkle test-agent`
//! (the agent calling Sparkle's tools through the conductor's stdio bridge with its rmcp client)
//! and `conductor agent sparkle "test-agent --mcp-acp"` (MCP over ACP, no bridge).

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use sacp::acp::{
    ContentBlock, InitializeRequest, NewSessionRequest, PromptRequest, SessionNotification,
    SessionUpdate, StopReason, TextContent,
};
use sacp::jsonrpc::{ByteStream, Connection, Methods};
use serde_json::Value;

use sacp::testing::PATIENCE;
const EMBODIMENT: &str = "You are Sparkle, configured for this test.";

/// What the editor saw: `(session, kind, text)` per update, in order.
type Seen = Arc<Mutex<Vec<(String, String, String)>>>;

struct Chain {
    editor: Connection,
    conductor: tokio::process::Child,
    seen: Seen,
    trace: PathBuf,
}

fn bins() -> PathBuf {
    sacp_examples::bins::built_like_tests().expect("build the binaries")
}

impl Chain {
    async fn start(agent_flags: &str, name: &str) -> Chain {
        Chain::start_with("", agent_flags, name).await
    }

    async fn start_with(sparkle_args: &str, agent_flags: &str, name: &str) -> Chain {
        let dir = bins();
        let trace =
            std::env::temp_dir().join(format!("sparkle-{}-{name}.jsonl", std::process::id()));
        let args = vec![
            "agent".to_owned(),
            "--trace".to_owned(),
            trace.to_string_lossy().into_owned(),
            "--trace-payloads".to_owned(),
            format!("{} {sparkle_args}", env!("CARGO_BIN_EXE_sparkle")),
            format!("{} {agent_flags}", dir.join("test-agent").display()),
        ];
        Chain::launch(dir.join("conductor"), args, trace).await
    }

    /// `sparkle-chain "test-agent <agent_flags>"`: Sparkle in-process, one binary.
    async fn one_binary(agent_flags: &str) -> Chain {
        let agent = format!("{} {agent_flags}", bins().join("test-agent").display());
        let program = PathBuf::from(env!("CARGO_BIN_EXE_sparkle-chain"));
        Chain::launch(program, vec![agent], PathBuf::new()).await
    }

    async fn launch(program: PathBuf, args: Vec<String>, trace: PathBuf) -> Chain {
        let mut conductor = tokio::process::Command::new(program)
            .args(args)
            .env("SPARKLE_EMBODIMENT", EMBODIMENT)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("start the conductor");
        let seen: Seen = Arc::default();
        let record = seen.clone();
        let handler = Methods::new().on_notification(move |n: SessionNotification, _| {
            let record = record.clone();
            async move {
                let (kind, text) = match n.update {
                    SessionUpdate::AgentMessageChunk(c) => ("message", text_of(&c.content)),
                    SessionUpdate::AgentThoughtChunk(c) => ("thought", text_of(&c.content)),
                    SessionUpdate::ToolCall(call) => ("tool_call", call.title),
                    SessionUpdate::ToolCallUpdate(update) => {
                        ("tool_call_update", format!("{:?}", update.status))
                    }
                    other => ("other", format!("{other:?}")),
                };
                record
                    .lock()
                    .unwrap()
                    .push((n.session_id.0, kind.to_owned(), text));
                Ok(())
            }
        });
        let pipes = ByteStream::new(
            conductor.stdout.take().unwrap(),
            conductor.stdin.take().unwrap(),
        );
        let editor = Connection::builder()
            .name("conductor")
            .request_timeout(PATIENCE)
            .spawn(pipes, handler);
        editor
            .request(InitializeRequest::new(1))
            .await
            .expect("initialize");
        Chain {
            editor,
            conductor,
            seen,
            trace,
        }
    }

    async fn new_session(&self) -> String {
        let session = self
            .editor
            .request(NewSessionRequest::new("/tmp", vec![]))
            .await
            .expect("session/new");
        session.session_id.0
    }

    async fn prompt(&self, session: &str, text: &str) -> StopReason {
        let prompt = vec![ContentBlock::Text(TextContent::new(text))];
        let request = PromptRequest::new(session.to_owned(), prompt);
        self.editor
            .request(request)
            .await
            .expect("session/prompt")
            .stop_reason
    }

    /// What the editor saw in `session` since `from` (an index into everything it saw).
    fn seen_in(&self, session: &str, from: usize) -> Vec<(String, String)> {
        self.seen.lock().unwrap()[from..]
            .iter()
            .filter(|(s, _, _)| s == session)
            .map(|(_, kind, text)| (kind.clone(), text.clone()))
            .collect()
    }

    fn mark(&self) -> usize {
        self.seen.lock().unwrap().len()
    }

    /// The messages Sparkle sent the agent, from the trace: `(method, payload)`.
    fn to_agent(&self, method: &str) -> Vec<Value> {
        std::fs::read_to_string(&self.trace)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|l| l["to"] == "2:test-agent" && l["method"] == method)
            .filter(|l| l["kind"] == "request")
            .map(|l| l["payload"].clone())
            .collect()
    }

    async fn end(mut self) {
        self.editor.close();
        let status = tokio::time::timeout(PATIENCE, self.conductor.wait())
            .await
            .expect("the conductor exits")
            .unwrap();
        assert!(status.success(), "{status}");
        let _ = std::fs::remove_file(&self.trace);
    }
}

fn text_of(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(t) => t.text.clone(),
        other => format!("{other:?}"),
    }
}

fn pair(kind: &str, text: &str) -> (String, String) {
    (kind.to_owned(), text.to_owned())
}

/// The seed's scenario, the bridge named by `via` (`None` for MCP over ACP).
async fn scenario(agent_flags: &str, via: Option<&str>, name: &str) {
    let chain = Chain::start(agent_flags, name).await;
    let first = chain.new_session().await;

    // The agent got Sparkle's server in session/new: bridged, or as `acp:`.
    let setups = chain.to_agent("session/new");
    let server = &setups[0]["mcpServers"][0];
    assert_eq!(server["name"], "sparkle", "{server}");
    match via {
        Some("stdio") => assert_eq!(server["args"][0], "mcp", "{server}"),
        Some(_) => assert!(
            server["url"]
                .as_str()
                .unwrap()
                .starts_with("http://127.0.0.1:")
        ),
        None => assert!(
            server["url"].as_str().unwrap().starts_with("acp:"),
            "{server}"
        ),
    }

    // The first prompt: exactly one embodiment turn, which calls `embody_sparkle`, then the
    // user's prompt, whose answer is the editor's.
    let at = chain.mark();
    assert_eq!(
        chain.prompt(&first, "Hello, who are you?").await,
        StopReason::EndTurn
    );
    let prompts: Vec<String> = chain
        .to_agent("session/prompt")
        .iter()
        .map(|p| p["prompt"][0]["text"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(prompts, [sparkle::EMBODIMENT_PROMPT, "Hello, who are you?"]);
    let suffix = via.map_or_else(String::new, |via| format!(" [over {via}; 0 progress]"));
    assert_eq!(
        chain.seen_in(&first, at),
        [
            pair("tool_call", "sparkle.embody_sparkle"),
            pair("tool_call_update", "Some(Completed)"),
            pair(
                "thought",
                &format!("[sparkle] sparkle.embody_sparkle: {EMBODIMENT}{suffix}")
            ),
            pair("message", "Hello, who are you?"),
        ],
        "the embodiment turn shows as Sparkle's thoughts, the answer as the answer"
    );

    // The second prompt passes unchanged.
    let at = chain.mark();
    assert_eq!(chain.prompt(&first, "And now?").await, StopReason::EndTurn);
    assert_eq!(chain.seen_in(&first, at), [pair("message", "And now?")]);
    assert_eq!(chain.to_agent("session/prompt").len(), 3);

    // A second session, prompted while the first one is too: its own embodiment.
    let second = chain.new_session().await;
    let at = chain.mark();
    let (a, b) = tokio::join!(
        chain.prompt(&second, "Hi from the second thread"),
        chain.prompt(&first, "Still there?")
    );
    assert_eq!((a, b), (StopReason::EndTurn, StopReason::EndTurn));
    let thoughts: Vec<_> = chain
        .seen_in(&second, at)
        .into_iter()
        .filter(|(kind, _)| kind == "thought")
        .collect();
    assert_eq!(thoughts.len(), 1, "one embodiment for the second session");
    assert_eq!(
        chain.seen_in(&first, at),
        [pair("message", "Still there?")],
        "no second embodiment for the first"
    );

    // The notebook is per session.
    let insight = r#"call sparkle save_insight {"topic":"tests","insight":"they run real processes","tags":["sacp"]}"#;
    chain.prompt(&first, insight).await;
    let at = chain.mark();
    chain.prompt(&first, "call sparkle list_insights {}").await;
    let listed = chain.seen_in(&first, at);
    assert!(
        listed
            .iter()
            .any(|(k, t)| k == "message" && t.contains("they run real processes")),
        "{listed:?}"
    );
    let at = chain.mark();
    chain.prompt(&second, "call sparkle list_insights {}").await;
    let listed = chain.seen_in(&second, at);
    assert!(
        listed
            .iter()
            .any(|(k, t)| k == "message" && t.contains(r#"{"insights":[]}"#)),
        "{listed:?}"
    );
    chain.end().await;
}

#[tokio::test]
async fn sparkle_embodies_each_session_through_the_stdio_bridge() {
    scenario("", Some("stdio"), "stdio").await;
}

#[tokio::test]
async fn sparkle_embodies_each_session_through_the_http_bridge() {
    scenario("--mcp-http", Some("http"), "http").await;
}

#[tokio::test]
async fn sparkle_embodies_each_session_over_acp_without_a_bridge() {
    scenario("--mcp-acp", None, "native").await;
}

#[tokio::test]
async fn the_embodiment_can_come_from_a_file() {
    let file = std::env::temp_dir().join(format!("sparkle-{}.md", std::process::id()));
    std::fs::write(&file, "You are Sparkle, read from a file.\n").unwrap();
    let args = format!("--embodiment-file {}", file.display());
    let chain = Chain::start_with(&args, "--mcp-acp", "file").await;
    let session = chain.new_session().await;
    chain.prompt(&session, "hi").await;
    let thoughts: Vec<_> = chain
        .seen_in(&session, 0)
        .into_iter()
        .filter(|(kind, _)| kind == "thought")
        .collect();
    assert_eq!(
        thoughts,
        [pair(
            "thought",
            "[sparkle] sparkle.embody_sparkle: You are Sparkle, read from a file."
        )]
    );
    chain.end().await;
    let _ = std::fs::remove_file(file);
}

#[tokio::test]
async fn sparkle_and_the_conductor_in_one_binary() {
    // The agent's MCP client runs `sparkle-chain mcp PORT`: the binary is its own bridge.
    let chain = Chain::one_binary("").await;
    let session = chain.new_session().await;
    assert_eq!(chain.prompt(&session, "Hello").await, StopReason::EndTurn);
    assert_eq!(
        chain.seen_in(&session, 0),
        [
            pair("tool_call", "sparkle.embody_sparkle"),
            pair("tool_call_update", "Some(Completed)"),
            pair(
                "thought",
                &format!("[sparkle] sparkle.embody_sparkle: {EMBODIMENT} [over stdio; 0 progress]")
            ),
            pair("message", "Hello"),
        ]
    );
    chain.end().await;
}
