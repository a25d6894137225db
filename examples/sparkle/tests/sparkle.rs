//! The seed's scenario with real processes: an editor runs `conductor agent sparkle test-agent`
//! (the agent calling Sparkle's tools through the conductor's stdio bridge with its rmcp client)
//! and `conductor agent sparkle "test-agent --mcp-acp"` (MCP over ACP, no bridge).

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use sacp::acp::StopReason;
use sacp::jsonrpc::ByteStream;
use sacp::testing::{PATIENCE, ScriptedEditor, Session};
use serde_json::Value;

const EMBODIMENT: &str = "You are Sparkle, configured for this test.";

/// The conductor (or `sparkle-chain`) as a process, with `sacp::testing`'s editor on its stdio.
struct Chain {
    editor: ScriptedEditor,
    conductor: tokio::process::Child,
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
        let pipes = ByteStream::new(
            conductor.stdout.take().unwrap(),
            conductor.stdin.take().unwrap(),
        );
        let editor = ScriptedEditor::new().connect(pipes);
        editor.initialize().await.expect("initialize");
        Chain {
            editor,
            conductor,
            trace,
        }
    }

    async fn new_session(&self) -> Session {
        self.editor.new_session().await.expect("session/new")
    }

    /// The `count` messages of `method` Sparkle sent the agent, from the trace (which reaches
    /// its file within 20 ms: waited for): their payloads.
    async fn to_agent(&self, method: &str, count: usize) -> Vec<Value> {
        let deadline = tokio::time::Instant::now() + PATIENCE;
        loop {
            let sent: Vec<Value> = std::fs::read_to_string(&self.trace)
                .unwrap_or_default()
                .lines()
                // The last line may be half written: the next read has it whole.
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .filter(|l| l["to"] == "2:test-agent" && l["method"] == method)
                .filter(|l| l["kind"] == "request")
                .map(|l| l["payload"].clone())
                .collect();
            if sent.len() >= count || tokio::time::Instant::now() >= deadline {
                return sent;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    async fn end(mut self) {
        self.editor.connection().close();
        let status = tokio::time::timeout(PATIENCE, self.conductor.wait())
            .await
            .expect("the conductor exits")
            .unwrap();
        assert!(status.success(), "{status}");
        let _ = std::fs::remove_file(&self.trace);
    }
}

/// What the editor sees of the embodiment turn, then the answer to `said`: the test agent's
/// tool call through the bridge (its suffix names the transport), the result as a thought.
fn embodied(embodiment: &str, suffix: &str, said: &str) -> Vec<String> {
    vec![
        "tool_call mcp-1 \"sparkle.embody_sparkle\" in_progress".to_owned(),
        "tool_call_update mcp-1 completed".to_owned(),
        format!("thought: [sparkle] sparkle.embody_sparkle: {embodiment}{suffix}"),
        format!("message: {said}"),
    ]
}

/// The seed's scenario, the bridge named by `via` (`None` for MCP over ACP).
async fn scenario(agent_flags: &str, via: Option<&str>, name: &str) {
    let chain = Chain::start(agent_flags, name).await;
    let first = chain.new_session().await;

    // The agent got Sparkle's server in session/new: bridged, or as `acp:`.
    let setups = chain.to_agent("session/new", 1).await;
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

    // The first prompt: the embodiment turn, whose tool call crosses the bridge, then the
    // user's prompt, whose answer is the editor's. (Sparkle's logic in full, sessions at
    // once included, is `kit.rs`, in process.)
    let turn = first.prompt("Hello, who are you?").await.expect("prompt");
    let suffix = via.map_or_else(String::new, |via| format!(" [over {via}; 0 progress]"));
    turn.assert_lines(embodied(EMBODIMENT, &suffix, "Hello, who are you?"));
    let prompts: Vec<String> = chain
        .to_agent("session/prompt", 2)
        .await
        .iter()
        .map(|p| p["prompt"][0]["text"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(prompts, [sparkle::EMBODIMENT_PROMPT, "Hello, who are you?"]);

    // The notebook, through the same bridge, is the session's own.
    let insight = r#"call sparkle save_insight {"topic":"tests","insight":"they run real processes","tags":["sacp"]}"#;
    first.prompt(insight).await.expect("prompt");
    let listed = first
        .prompt("call sparkle list_insights {}")
        .await
        .expect("prompt");
    assert!(
        listed.text().contains("they run real processes"),
        "{listed:?}"
    );
    let second = chain.new_session().await;
    let listed = second
        .prompt("call sparkle list_insights {}")
        .await
        .expect("prompt");
    assert!(listed.text().contains(r#"{"insights":[]}"#), "{listed:?}");
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
    let turn = session.prompt("hi").await.expect("prompt");
    turn.assert_lines(embodied("You are Sparkle, read from a file.", "", "hi"));
    chain.end().await;
    let _ = std::fs::remove_file(file);
}

#[tokio::test]
async fn sparkle_and_the_conductor_in_one_binary() {
    // The agent's MCP client runs `sparkle-chain mcp PORT`: the binary is its own bridge.
    let chain = Chain::one_binary("").await;
    let session = chain.new_session().await;
    let turn = session.prompt("Hello").await.expect("prompt");
    assert_eq!(turn.stop_reason(), &StopReason::EndTurn);
    turn.assert_lines(embodied(EMBODIMENT, " [over stdio; 0 progress]", "Hello"));
    chain.end().await;
}
