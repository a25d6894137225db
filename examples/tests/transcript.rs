//! The logging and context proxies in a real chain: `conductor agent "logging-proxy FILE"
//! "context-proxy TEXT" test-agent`.

use std::process::Stdio;
use std::sync::{Arc, Mutex};

use sacp::acp::{
    ContentBlock, InitializeRequest, NewSessionRequest, PromptRequest, SessionNotification,
    SessionUpdate, StopReason, TextContent,
};
use sacp::jsonrpc::{ByteStream, Connection, Methods};
use serde_json::Value;

use sacp::testing::PATIENCE;

#[tokio::test]
async fn the_logger_writes_down_every_message_and_the_context_comes_first() {
    let dir = sacp_examples::bins::built_like_tests().unwrap();
    let log = std::env::temp_dir().join(format!("sacp-transcript-{}.jsonl", std::process::id()));
    let _ = std::fs::remove_file(&log);
    let mut conductor = tokio::process::Command::new(dir.join("conductor"))
        .args([
            "agent".to_owned(),
            format!("{} {}", dir.join("logging-proxy").display(), log.display()),
            format!(
                "{} 'Follow AGENTS.md.'",
                dir.join("context-proxy").display()
            ),
            dir.join("test-agent").display().to_string(),
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let said = Arc::new(Mutex::new(Vec::new()));
    let record = said.clone();
    let handler = Methods::new().on_notification(move |n: SessionNotification, _| {
        let record = record.clone();
        async move {
            if let SessionUpdate::AgentMessageChunk(chunk) = n.update
                && let ContentBlock::Text(text) = chunk.content
            {
                record.lock().unwrap().push(text.text);
            }
            Ok(())
        }
    });
    let pipes = ByteStream::new(
        conductor.stdout.take().unwrap(),
        conductor.stdin.take().unwrap(),
    );
    let editor = Connection::builder()
        .request_timeout(PATIENCE)
        .spawn(pipes, handler);
    editor.request(InitializeRequest::new(1)).await.unwrap();
    let session = editor
        .request(NewSessionRequest::new("/tmp", vec![]))
        .await
        .unwrap()
        .session_id;
    let prompt = vec![ContentBlock::Text(TextContent::new("hello"))];
    let done = editor
        .request(PromptRequest::new(session, prompt))
        .await
        .unwrap();
    assert_eq!(done.stop_reason, StopReason::EndTurn);
    // The agent echoes each block: the context came first.
    assert_eq!(*said.lock().unwrap(), ["Follow AGENTS.md.", "hello"]);
    editor.close();
    let status = tokio::time::timeout(PATIENCE, conductor.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success());

    let lines: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let shape: Vec<String> = lines
        .iter()
        .map(|l| format!("{} {} {}", l["dir"], l["kind"], l["method"]).replace('"', ""))
        .collect();
    assert_eq!(
        shape,
        [
            "down request initialize",
            "up response initialize",
            "down request session/new",
            "up response session/new",
            "down request session/prompt",
            "up notification session/update",
            "up notification session/update",
            "up response session/prompt",
        ]
    );
    // What the logger saw is the editor's prompt, before the context proxy behind it.
    assert_eq!(lines[4]["params"]["prompt"][0]["text"], "hello");
    assert_eq!(lines[7]["result"]["stopReason"], "end_turn");
    let _ = std::fs::remove_file(log);
}
