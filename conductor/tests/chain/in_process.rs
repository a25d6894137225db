//! Chains with proxies in the conductor's own process (`Chain::proxy`) and the test agent as a
//! process: the same ordering, handshake, failures and end as process chains.

use std::sync::{Arc, Mutex};

use sacp::acp::{
    ContentBlock, InitializeRequest, NewSessionRequest, PromptRequest, SessionNotification,
    SessionUpdate, StopReason, TextContent,
};
use sacp::jsonrpc::{ByteStream, Connection, Methods};
use sacp_conductor::{Chain, Component, Exit, Failure, Options};
use sacp_examples::prefix::Prefixer;

use crate::common::*;

/// What the editor heard: `(session, text)` of each agent message chunk, in order.
type Heard = Arc<Mutex<Vec<(String, String)>>>;

struct Running {
    editor: Connection,
    heard: Heard,
    /// How many chunks the editor heard.
    chunks: Arc<sacp::testing::Tally>,
    exit: tokio::task::JoinHandle<Exit>,
    tag: String,
}

/// The test agent as a process component, tagged to find it in the process table.
fn agent_component(tag: &str) -> Component {
    let mut agent = Component::parse(&quoted(&agent()), 1).unwrap();
    agent.env.insert("SACP_TEST_TAG".into(), tag.to_owned());
    agent
}

fn start(chain: Chain, tag: String) -> Running {
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    let exit = tokio::spawn(sacp_conductor::run(
        chain,
        Options::default(),
        ByteStream::duplex(theirs),
    ));
    let heard = Heard::default();
    let chunks = Arc::new(sacp::testing::Tally::default());
    let (record, count) = (heard.clone(), chunks.clone());
    let handler = Methods::new().on_notification(move |n: SessionNotification, _| {
        let (record, count) = (record.clone(), count.clone());
        async move {
            if let SessionUpdate::AgentMessageChunk(chunk) = n.update
                && let ContentBlock::Text(text) = chunk.content
            {
                record.lock().unwrap().push((n.session_id.0, text.text));
                count.add();
            }
            Ok(())
        }
    });
    let editor = Connection::builder()
        .request_timeout(PATIENCE)
        .spawn(ByteStream::duplex(ours), handler);
    Running {
        editor,
        heard,
        chunks,
        exit,
        tag,
    }
}

fn tag(name: &str) -> String {
    format!("in-process-{}-{name}", std::process::id())
}

async fn prompt(editor: &Connection, session: &str, text: &str) -> sacp::Result<StopReason> {
    let prompt = vec![ContentBlock::Text(TextContent::new(text))];
    let answer = editor
        .request(PromptRequest::new(session.to_owned(), prompt))
        .await?;
    Ok(answer.stop_reason)
}

async fn ended(running: Running) -> Exit {
    ended_with(running.exit, &running.tag).await
}

/// Waits for the conductor's end, then for its processes (those tagged `tag`) to be gone.
async fn ended_with(exit: tokio::task::JoinHandle<Exit>, tag: &str) -> Exit {
    let exit = tokio::time::timeout(PATIENCE, exit)
        .await
        .expect("the conductor ends")
        .unwrap();
    // Nothing of the chain is left.
    eventually("no process of the chain left", || {
        processes_tagged(tag).is_empty()
    })
    .await;
    exit
}

#[tokio::test]
async fn in_process_proxies_keep_every_sessions_updates_in_order() {
    let tag = tag("order");
    let mut chain = Chain::new()
        .proxy(Prefixer::new("a "))
        .proxy(Prefixer::new("b "));
    chain.components.push(agent_component(&tag));
    let running = start(chain, tag);
    let editor = running.editor.clone();
    editor.request(InitializeRequest::new(1)).await.unwrap();
    let mut sessions = Vec::new();
    for _ in 0..3 {
        let session = editor
            .request(NewSessionRequest::new("/tmp", vec![]))
            .await
            .unwrap();
        sessions.push(session.session_id.0);
    }
    let turns = sessions
        .iter()
        .map(|session| prompt(&editor, session, "stream 50"));
    for stop in futures_util::future::join_all(turns).await {
        assert_eq!(stop.unwrap(), StopReason::EndTurn);
    }
    let heard = running.heard.lock().unwrap().clone();
    for session in &sessions {
        let texts: Vec<String> = heard
            .iter()
            .filter(|(s, _)| s == session)
            .map(|(_, t)| t.clone())
            .collect();
        let expected: Vec<String> = (1..=50).map(|i| format!("a b chunk {i}")).collect();
        assert_eq!(
            texts, expected,
            "{session}: transformed twice, in order, all of them"
        );
    }
    running.editor.close();
    assert_eq!(ended(running).await, Exit::Clean);
}

#[tokio::test]
async fn updates_sent_after_an_answer_never_overtake_it_through_in_process_proxies() {
    const AFTER: usize = 30;
    let tag = tag("answer-order");
    let mut chain = Chain::new()
        .proxy(Prefixer::new("a "))
        .proxy(Prefixer::new("b "));
    chain.components.push(agent_component(&tag));
    let running = start(chain, tag);
    let editor = running.editor.clone();
    editor.request(InitializeRequest::new(1)).await.unwrap();
    let session = editor
        .request(NewSessionRequest::new("/tmp", vec![]))
        .await
        .unwrap()
        .session_id
        .0;
    for turn in 0..10 {
        // Awaited in a task of the editor's connection: its lane holds what came after the
        // answer until the task has counted what came before it.
        let (seen, when_answered) = tokio::sync::oneshot::channel();
        editor.spawn({
            let (editor, heard, session) = (editor.clone(), running.heard.clone(), session.clone());
            async move {
                let stop = prompt(&editor, &session, &format!("then {AFTER}")).await;
                let before = heard.lock().unwrap().len();
                let _ = seen.send((stop, before));
            }
        });
        let (stop, before) = tokio::time::timeout(PATIENCE, when_answered)
            .await
            .expect("the prompt's answer")
            .unwrap();
        assert_eq!(stop.unwrap(), StopReason::EndTurn);
        assert_eq!(
            before,
            turn * AFTER,
            "turn {turn}: updates sent after the answer overtook it"
        );
        running
            .chunks
            .reaches((turn + 1) * AFTER, "the turn's updates")
            .await;
        let heard = running.heard.lock().unwrap().clone();
        for (i, (_, text)) in heard[turn * AFTER..].iter().enumerate() {
            assert_eq!(text, &format!("a b after {}", i + 1), "turn {turn}");
        }
    }
    running.editor.close();
    assert_eq!(ended(running).await, Exit::Clean);
}

#[tokio::test]
async fn a_process_that_refuses_the_proxy_capability_is_named() {
    let tag = tag("refusal");
    let mut chain = Chain::new().proxy(Prefixer::new("a "));
    chain.components.push(agent_component(&tag));
    chain.components.push(agent_component(&tag));
    let running = start(chain, tag);
    let refused = running
        .editor
        .request(InitializeRequest::new(1))
        .await
        .unwrap_err();
    assert!(
        refused
            .message
            .contains("component 2 (\"test-agent\") did not accept the proxy capability"),
        "{refused}"
    );
    // The conductor's exit names the cause, a variant to match, with the component's place.
    assert!(matches!(
        ended(running).await,
        Exit::Failed(Failure::Refused { position: 2, .. })
    ));
}

#[tokio::test]
async fn a_crashed_process_agent_fails_the_prompt_by_name_and_ends_the_chain() {
    let tag = tag("crash");
    let mut chain = Chain::new().proxy(Prefixer::new("a "));
    chain.components.push(agent_component(&tag));
    let running = start(chain, tag);
    let editor = running.editor.clone();
    editor.request(InitializeRequest::new(1)).await.unwrap();
    let session = editor
        .request(NewSessionRequest::new("/tmp", vec![]))
        .await
        .unwrap()
        .session_id
        .0;
    let failed = prompt(&editor, &session, "crash 7 3").await.unwrap_err();
    assert!(
        failed
            .message
            .contains("component 2 (\"test-agent\") exited with status 7"),
        "{failed}"
    );
    // What it said before it crashed came first.
    let heard: Vec<String> = running
        .heard
        .lock()
        .unwrap()
        .iter()
        .map(|(_, t)| t.clone())
        .collect();
    assert_eq!(
        heard,
        [
            "a chunk 1 before the crash",
            "a chunk 2 before the crash",
            "a chunk 3 before the crash",
            "a crashing"
        ]
    );
    match ended(running).await {
        Exit::Ended { status, .. } => assert_eq!(status, 7),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn requests_written_before_the_editor_closes_its_end_are_answered() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let tag = tag("eof");
    let mut chain = Chain::new().proxy(Prefixer::new("a "));
    chain.components.push(agent_component(&tag));
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    let exit = tokio::spawn(sacp_conductor::run(
        chain,
        Options::default(),
        ByteStream::duplex(theirs),
    ));
    let (reading, mut writing) = tokio::io::split(ours);
    // `printf '<initialize>\n<session/new>\n' | my-one-binary-chain`
    writing
        .write_all(
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":1}}\n\
              {\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"session/new\",\"params\":{\"cwd\":\"/tmp\",\"mcpServers\":[]}}\n",
        )
        .await
        .unwrap();
    writing.shutdown().await.unwrap();
    drop(writing);
    let mut lines = tokio::io::BufReader::new(reading).lines();
    let mut answers = std::collections::BTreeMap::new();
    while answers.len() < 2 {
        let line = tokio::time::timeout(PATIENCE, lines.next_line())
            .await
            .expect("the answers come")
            .unwrap()
            .expect("the conductor answers before it ends");
        let message: serde_json::Value = serde_json::from_str(&line).unwrap();
        if let Some(id) = message["id"].as_i64() {
            answers.insert(id, message);
        }
    }
    assert_eq!(answers[&1]["result"]["protocolVersion"], 1, "{answers:?}");
    assert_eq!(
        answers[&2]["result"]["sessionId"], "session-1",
        "{answers:?}"
    );
    assert_eq!(ended_with(exit, &tag).await, Exit::Clean);
}
