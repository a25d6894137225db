//! Sessions that outlive their connection (see `sessions.rs`), taken back by the editor itself:
//! `sacp`'s WebSocket client with `Remote::rejoin` reconnecting and resuming from the last
//! position it got, a session created with a history, and a second connection's chain started
//! only when it needs one.

use serde_json::Value;

use crate::common::*;
use crate::remote::TOKEN;
use crate::sessions::*;

/// An editor on `url` through `sacp`'s WebSocket client with `Remote::rejoin`, initialized,
/// and a new session of it.
async fn rejoining(url: &str) -> (sacp::testing::ScriptedEditor, sacp::testing::Session) {
    let remote = sacp::remote::Remote::new(url)
        .header("Authorization", &format!("Bearer {TOKEN}"))
        .unwrap()
        .rejoin(true)
        .connect();
    let transport = within("a WebSocket", remote).await.unwrap();
    let editor = sacp::testing::ScriptedEditor::new().connect(transport);
    within("initialize", editor.initialize()).await.unwrap();
    let session = within("session/new", editor.new_session()).await.unwrap();
    (editor, session)
}

/// `sacp`'s WebSocket client with `Remote::rejoin`: its socket cut while a turn waits, it
/// connects again by itself and takes its session back from the last position it got. The
/// caller's connection goes on: the prompt that was waiting fails with `-32603`, nothing it
/// had comes again, and the same session, in the same agent process, takes a cancel and the
/// next prompt.
#[tokio::test]
async fn a_rejoining_websocket_takes_its_sessions_back_by_itself() {
    let server = conductor_listening(&[], &[agent()]).await;
    let cutter = Cutter::before(&server.ws()).await;
    let (_editor, session) = rejoining(&cutter.url).await;
    let first = within("the first turn", session.prompt("stream 3"))
        .await
        .unwrap();
    assert_eq!(first.text(), "chunk 1chunk 2chunk 3");
    let agents = agents_of(&server);

    let waiting = session.prompt("wait");
    session
        .until_update("waiting", |u| sacp::testing::line(u) == "message: waiting")
        .await;
    cutter.cut();
    let lost = within("the prompt the cut lost", waiting)
        .await
        .expect_err("its answer was lost with the socket");
    assert_eq!(lost.code, -32603, "{lost:?}");
    assert!(lost.message.contains("took its sessions back"), "{lost:?}");
    assert_eq!(cutter.cuts.load(std::sync::atomic::Ordering::Relaxed), 1);

    within("the cancel", session.cancel()).await.unwrap();
    let next = within("the next turn", session.prompt("stream 2"))
        .await
        .unwrap();
    assert_eq!(next.text(), "chunk 1chunk 2");
    // Taken back from the last position it got: nothing it had came again (the first turn's
    // chunks and the `waiting` once each; the next turn's chunk 1 is the second chunk 1).
    let count = |line: &str| {
        session
            .updates()
            .iter()
            .filter(|u| sacp::testing::line(u) == line)
            .count()
    };
    assert_eq!(count("message: chunk 1"), 2, "{:?}", session.updates());
    assert_eq!(count("message: chunk 3"), 1);
    assert_eq!(count("message: waiting"), 1);
    // The same agent process, and no other: the connection that came back was answered
    // `initialize` as the first one was, and started no chain of its own.
    let now = agents_of(&server);
    assert_eq!(agents, now, "the same agent process, and no other");
}

/// With `Remote::rejoin`, a conductor killed and started again on the same address and
/// journal: the position the caller last got names the session's life before the restart, so
/// the new conductor refuses it (`-32602`), and the transport loads the session again whole —
/// the session comes back from the journal with its history, and goes on.
#[tokio::test]
async fn a_rejoining_websocket_takes_a_session_back_whole_from_a_restarted_conductor() {
    let base = std::env::temp_dir().join(format!("sacp-rejoin-restart-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    std::fs::create_dir_all(&base).unwrap();
    let db = base.join("journal.db");
    let args = ["--journal", db.to_str().unwrap()];
    let mut first = conductor_listening(&args, &[agent()]).await;
    let addr = first
        .url
        .split("://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .unwrap()
        .to_owned();
    let (_editor, session) = rejoining(&first.ws()).await;
    let turn = within("the first turn", session.prompt("stream 3"))
        .await
        .unwrap();
    assert_eq!(turn.text(), "chunk 1chunk 2chunk 3");
    crate::restart::until_journaled(db.to_str().unwrap(), &session.id().to_string(), "chunk 3")
        .await;
    first.kill().await;
    let _second = crate::restart::conductor_on(&addr, &args, &[agent()]).await;
    // The history again, from the journal: the first turn's chunks a second time.
    within("the replay", async {
        while session
            .updates()
            .iter()
            .filter(|u| sacp::testing::line(u) == "message: chunk 3")
            .count()
            < 2
        {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await;
    let next = within("the next turn", session.prompt("stream 2"))
        .await
        .unwrap();
    assert_eq!(next.text(), "chunk 1chunk 2");
    let _ = std::fs::remove_dir_all(&base);
}

/// With `Remote::rejoin`, a server gone for good ends the caller's connection once the tries
/// are spent — no hang: the prompt that was waiting fails, and so does the next request.
#[tokio::test]
async fn a_rejoining_websocket_whose_server_is_gone_ends_after_its_tries() {
    let mut server = conductor_listening(&[], &[agent()]).await;
    let (_editor, session) = rejoining(&server.ws()).await;
    let waiting = session.prompt("wait");
    session
        .until_update("waiting", |u| sacp::testing::line(u) == "message: waiting")
        .await;
    server.child.start_kill().unwrap();
    within("the conductor's end", server.child.wait())
        .await
        .unwrap();
    within("the waiting prompt", waiting)
        .await
        .expect_err("the server is gone");
    within("a prompt after the end", session.prompt("stream 1"))
        .await
        .expect_err("the connection ended");
}

/// A session created with a history over the network: the layer's record starts with the
/// history, so a later connection's `session/load` replays it (and the editor's turns), never
/// the prompt that told the agent.
#[tokio::test]
async fn a_session_created_with_a_history_replays_it_to_the_next_connection() {
    let server = conductor_listening(&[], &[passthrough(), agent()]).await;
    let said = |kind: &str, text: &str| serde_json::json!({"sessionUpdate": kind, "content": {"type": "text", "text": text}});
    let history = vec![
        said("user_message_chunk", "What does the cache key on?"),
        serde_json::json!({"sessionUpdate": "tool_call", "toolCallId": "read-1",
            "title": "Read cache.rs", "kind": "read", "status": "completed",
            "rawInput": {"path": "src/cache.rs"}}),
        said(
            "agent_message_chunk",
            "On the request's path and its query.",
        ),
    ];
    let updates: Vec<sacp::acp::SessionUpdate> =
        serde_json::from_value(Value::Array(history.clone())).unwrap();
    let mut request = sacp::acp::NewSessionRequest::new("/", Vec::new());
    sacp::protocol::history::History::new(updates)
        .put(&mut request)
        .unwrap();

    let jar = sacp::remote::CookieJar::new();
    let first = through(&server.ws(), &jar).await;
    let session = within("session/new", first.new_session_with(request))
        .await
        .unwrap();
    let turn = within("a turn", session.prompt("hello")).await.unwrap();
    assert_eq!(turn.text(), "hello");
    let lines: Vec<String> = session.updates().iter().map(sacp::testing::line).collect();
    assert_eq!(
        lines,
        ["message: hello"],
        "the creator gets its turn, not its own history back"
    );
    let id = session.id().0.to_string();
    first.connection().close();

    let second = through(&server.ws(), &jar).await;
    let loaded = within("session/load", second.load_session(id))
        .await
        .unwrap();
    loaded
        .until_update("the replayed turn", |u| {
            sacp::testing::line(u) == "message: hello"
        })
        .await;
    let replayed: Vec<Value> = loaded
        .updates()
        .iter()
        .map(|u| serde_json::to_value(u).unwrap())
        .collect();
    assert_eq!(replayed[..history.len()], history[..], "{replayed:#?}");
    let all = serde_json::to_string(&replayed).unwrap();
    assert!(!all.contains("[sacp: "), "{all}");
}

/// An editor on `url` through `sacp`'s WebSocket client, initialized.
async fn initialized(url: &str) -> sacp::testing::ScriptedEditor {
    let remote = sacp::remote::Remote::new(url)
        .header("Authorization", &format!("Bearer {TOKEN}"))
        .unwrap()
        .connect();
    let transport = within("a WebSocket", remote).await.unwrap();
    let editor = sacp::testing::ScriptedEditor::new().connect(transport);
    within("initialize", editor.initialize()).await.unwrap();
    editor
}

/// A connection whose `initialize` asks what a live chain's did is answered without a chain of
/// its own: no agent starts for it until it needs one. Its first `session/new` starts its
/// chain (the `initialize` replayed to it first), whose session works like any other.
#[tokio::test]
async fn a_second_connection_starts_its_chain_only_when_it_needs_one() {
    let server = conductor_listening(&[], &[agent()]).await;
    let first = initialized(&server.ws()).await;
    let one = within("session/new", first.new_session()).await.unwrap();
    let turn = within("a turn", one.prompt("stream 2")).await.unwrap();
    assert_eq!(turn.text(), "chunk 1chunk 2");
    let agents = agents_of(&server);
    assert_eq!(agents.len(), 1, "{agents:?}");

    let second = initialized(&server.ws()).await;
    // Answered, and nothing started: the agents are those of the first connection.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(
        agents_of(&server),
        agents,
        "no chain for an initialize alone"
    );

    let two = within("session/new", second.new_session()).await.unwrap();
    let turn = within("a turn", two.prompt("stream 3")).await.unwrap();
    assert_eq!(turn.text(), "chunk 1chunk 2chunk 3");
    let now = agents_of(&server);
    assert_eq!(now.len(), 2, "its own chain now: {now:?}");
    assert!(
        agents.iter().all(|pid| now.contains(pid)),
        "{agents:?} then {now:?}"
    );
    assert_ne!(one.id(), two.id());
}

/// A connection whose `initialize` asks something else (here: no file access offered) is not
/// given another chain's answer, which could depend on it: its own chain starts at once.
#[tokio::test]
async fn a_connection_asking_something_else_gets_its_own_chain_at_initialize() {
    let server = conductor_listening(&[], &[agent()]).await;
    let _first = initialized(&server.ws()).await;
    within("the first agent", async {
        while agents_of(&server).is_empty() {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await;

    let remote = sacp::remote::Remote::new(server.ws())
        .header("Authorization", &format!("Bearer {TOKEN}"))
        .unwrap()
        .connect();
    let transport = within("a WebSocket", remote).await.unwrap();
    let other = sacp::testing::ScriptedEditor::new().connect(transport);
    let asked = sacp::acp::InitializeRequest::new(sacp::acp::ProtocolVersion::from(1));
    within("initialize", other.initialize_with(asked))
        .await
        .unwrap();
    within("its own agent", async {
        while agents_of(&server).len() < 2 {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await;
}
