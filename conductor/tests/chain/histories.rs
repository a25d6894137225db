//! Sessions created with a history (`_meta.sacp.history` on `session/new`): told to an agent
//! that cannot take it in a prompt of the conductor's own that no one upstream sees, given
//! with `session/new` to one that can, and a refused telling fails the creation with nothing
//! left half-made.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::common::*;

/// Six messages of a conversation, one of them a tool call and its result.
fn conversation() -> Value {
    let said = |kind: &str, text: &str| json!({"sessionUpdate": kind, "content": {"type": "text", "text": text}});
    json!([
        said("user_message_chunk", "Where is the retry limit set?"),
        said("agent_thought_chunk", "It should be in the client's config."),
        {"sessionUpdate": "tool_call", "toolCallId": "grep-1", "title": "Search for retry_limit",
         "kind": "search", "status": "pending", "rawInput": {"pattern": "retry_limit"}},
        {"sessionUpdate": "tool_call_update", "toolCallId": "grep-1", "status": "completed",
         "content": [{"type": "content", "content": {"type": "text",
                      "text": "src/client.rs:42: const RETRY_LIMIT: u32 = 5;"}}]},
        said("agent_message_chunk", "It is `RETRY_LIMIT` in src/client.rs, set to 5."),
        said("user_message_chunk", "Make it configurable later; keep 5 as the default."),
    ])
}

/// `session/new` params in `cwd` with the six messages as the history.
fn with_history(cwd: &str) -> Value {
    json!({"cwd": cwd, "mcpServers": [], "_meta": {"sacp": {"history": conversation()}}})
}

/// A directory of its own for a test, removed first.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sacp-histories-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// What the test agent keeps of a session (`--sessions DIR`): its updates, in order.
fn agents_record(dir: &Path, session: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(dir.join(format!("{session}.jsonl"))).unwrap_or_default();
    text.lines()
        .skip(1)
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The session updates the editor saw since its last request of `method`.
fn updates_since(editor: &Editor, method: &str) -> Vec<Value> {
    let start = editor
        .transcript
        .iter()
        .rposition(|l| l.starts_with(&format!("request {method} ")))
        .unwrap_or(0);
    editor.transcript[start..]
        .iter()
        .filter_map(|l| l.strip_prefix("notification session/update "))
        .map(|u| serde_json::from_str::<Value>(u).unwrap()["update"].clone())
        .collect()
}

async fn initialize(editor: &mut Editor) -> Value {
    let init = editor
        .request(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {}}),
        )
        .await;
    assert!(init.get("result").is_some(), "{init}");
    init
}

#[tokio::test]
async fn an_agent_that_cannot_take_a_history_is_told_it_and_the_editor_sees_none_of_it() {
    let dir = scratch("synthesized");
    let template = dir.join("conversation.json");
    std::fs::write(&template, conversation().to_string()).unwrap();
    let sessions = dir.join("sessions");
    let args = vec![
        "agent".to_owned(),
        format!("{} {}", example("seed-proxy"), template.display()),
        example("sparkle"),
        passthrough(),
        format!("{} --sessions {}", agent(), sessions.display()),
    ];
    let mut editor = Editor::start(conductor(), &args);
    let init = initialize(&mut editor).await;
    assert_eq!(
        init["result"]["agentCapabilities"]["_meta"]["sacp"]["history"], true,
        "the conductor offers histories to its editor: {init}"
    );
    let created = editor
        .request("session/new", json!({"cwd": "/tmp", "mcpServers": []}))
        .await;
    let session = created["result"]["sessionId"]
        .as_str()
        .unwrap_or_else(|| panic!("session/new: {created}"))
        .to_owned();
    assert_eq!(
        updates_since(&editor, "session/new"),
        Vec::<Value>::new(),
        "nothing of the conductor's history prompt reaches the editor"
    );

    // The agent's own record: the conductor's prompt holding every message, and its answer.
    let record = agents_record(&sessions, &session);
    assert_eq!(
        record[0]["sessionUpdate"], "user_message_chunk",
        "{record:#?}"
    );
    let told = record[0]["content"]["text"].as_str().unwrap();
    assert!(told.starts_with(sacp::protocol::history::MARK), "{told}");
    for needle in [
        "Where is the retry limit set?",
        "It should be in the client's config.",
        "Search for retry_limit",
        "{\"pattern\":\"retry_limit\"}",
        "src/client.rs:42: const RETRY_LIMIT: u32 = 5;",
        "It is `RETRY_LIMIT` in src/client.rs, set to 5.",
        "Make it configurable later; keep 5 as the default.",
    ] {
        assert!(told.contains(needle), "{needle:?} is not in {told}");
    }

    // The next real prompt works (Sparkle's embodiment turn first, as for any first prompt).
    let answer = editor.prompt(&session, "hello").await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    assert_eq!(said(&editor).last().map(String::as_str), Some("hello"));

    // A load replays the given history, then the editor's turns; never the conductor's prompt.
    let loaded = editor
        .request(
            "session/load",
            json!({"sessionId": session, "cwd": "/tmp", "mcpServers": []}),
        )
        .await;
    assert!(loaded.get("result").is_some(), "{loaded}");
    let replay = updates_since(&editor, "session/load");
    let given = conversation().as_array().unwrap().clone();
    assert_eq!(replay[..given.len()], given[..], "{replay:#?}");
    let rest = serde_json::to_string(&replay[given.len()..]).unwrap();
    assert!(!rest.contains("[sacp: "), "{rest}");
    assert!(
        rest.contains("\"hello\""),
        "the editor's own turn is replayed: {rest}"
    );
    editor.close_and_expect_a_clean_exit().await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn an_agent_that_takes_histories_gets_it_with_session_new_and_no_prompt() {
    let dir = scratch("native");
    let trace = dir.join("trace.jsonl");
    let args = vec![
        "agent".to_owned(),
        "--trace".to_owned(),
        trace.display().to_string(),
        passthrough(),
        format!("{} --history --sessions {}", agent(), dir.display()),
    ];
    let mut editor = Editor::start(conductor(), &args);
    initialize(&mut editor).await;
    // A client creating a session with a history: the chain passes it to the agent.
    let created = editor.request("session/new", with_history("/tmp")).await;
    let session = created["result"]["sessionId"]
        .as_str()
        .unwrap_or_else(|| panic!("session/new: {created}"))
        .to_owned();
    assert_eq!(
        agents_record(&dir, &session),
        conversation().as_array().unwrap().clone(),
        "the agent starts the session with the history it was given"
    );
    let answer = editor.prompt(&session, "hello").await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    editor.close_and_expect_a_clean_exit().await;
    let prompts = std::fs::read_to_string(&trace)
        .unwrap()
        .lines()
        .filter(|l| l.contains("\"session/prompt\"") && l.contains("\"request\""))
        .count();
    assert_eq!(
        prompts, 2,
        "the editor's prompt alone, on each of its two hops"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_refused_history_prompt_fails_the_session_new_and_leaves_no_session() {
    let args = vec![
        "agent".to_owned(),
        passthrough(),
        format!("{} --max-prompt 300", agent()),
    ];
    let mut editor = Editor::start(conductor(), &args);
    initialize(&mut editor).await;
    let created = editor
        .request("session/new", with_history("/tmp/refused"))
        .await;
    let message = created["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("could not be given the session's history")
            && message.contains("more than the 300 this agent takes")
            && message.contains("closed"),
        "{created}"
    );
    let listed = editor
        .request("session/list", json!({"cwd": "/tmp/refused"}))
        .await;
    assert_eq!(
        listed["result"]["sessions"],
        json!([]),
        "the half-made session was closed: {listed}"
    );
    // The chain goes on: a session without a history works.
    let session = editor.new_session().await;
    let answer = editor.prompt(&session, "hello").await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    editor.close_and_expect_a_clean_exit().await;
}

/// ACP v2: the conductor's history prompt is acknowledged and its turn ends with an idle
/// `state_update`; none of it (the acknowledgement, the user message, `running`, the chunks,
/// `idle`) reaches the editor, and the editor's own turn follows as any first turn.
#[tokio::test]
async fn a_v2_agent_is_told_the_history_in_a_turn_the_editor_never_sees() {
    let dir = scratch("v2");
    let trace = dir.join("trace.jsonl");
    let args = vec![
        "agent".to_owned(),
        "--trace".to_owned(),
        trace.display().to_string(),
        "--trace-payloads".to_owned(),
        passthrough(),
        format!("{} --protocol 2", agent()),
    ];
    let mut editor = Editor::start(conductor(), &args);
    let init = editor.initialize_v2().await;
    assert_eq!(
        init["result"]["capabilities"]["_meta"]["sacp"]["history"], true,
        "{init}"
    );
    let history = json!([
        {"sessionUpdate": "user_message", "messageId": "m1",
         "content": [{"type": "text", "text": "Rename the crate to sacp-sdk."}]},
        {"sessionUpdate": "agent_message", "messageId": "m2",
         "content": [{"type": "text", "text": "Renamed in Cargo.toml and the docs."}]},
    ]);
    let created = editor
        .request(
            "session/new",
            json!({"cwd": "/tmp", "_meta": {"sacp": {"history": history}}}),
        )
        .await;
    let session = created["result"]["sessionId"]
        .as_str()
        .unwrap_or_else(|| panic!("session/new: {created}"))
        .to_owned();
    assert_eq!(updates_since(&editor, "session/new"), Vec::<Value>::new());
    // The editor's own turn: acknowledged, then its updates up to idle, nothing else.
    let id = editor.send_prompt(&session, "hello").await;
    let mut seen = Vec::new();
    loop {
        let message = editor.next_message().await.expect("the turn");
        if message.get("method").is_none() {
            assert_eq!(message["id"], id, "{message}");
            seen.push("ack".to_owned());
            continue;
        }
        let update = &message["params"]["update"];
        let kind = update["sessionUpdate"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let idle = kind == "state_update" && update["state"] == "idle";
        seen.push(format!(
            "{kind} {}",
            update["state"].as_str().unwrap_or_default()
        ));
        if idle {
            assert_eq!(update["stopReason"], "end_turn", "{message}");
            break;
        }
    }
    assert!(seen.contains(&"ack".to_owned()), "{seen:?}");
    assert_eq!(
        seen.iter()
            .filter(|s| s.starts_with("state_update"))
            .count(),
        2,
        "one running and one idle, the editor's turn's own: {seen:?}"
    );
    editor.close_and_expect_a_clean_exit().await;
    let told = std::fs::read_to_string(&trace)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|l| l["method"] == "session/prompt" && l["from"] == "conductor")
        .map(|l| {
            l["payload"]["prompt"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect::<Vec<_>>();
    assert_eq!(told.len(), 1, "one prompt of the conductor's own");
    assert!(
        told[0].starts_with(sacp::protocol::history::MARK)
            && told[0].contains("Rename the crate to sacp-sdk.")
            && told[0].contains("Renamed in Cargo.toml and the docs."),
        "{}",
        told[0]
    );
    let _ = std::fs::remove_dir_all(&dir);
}
