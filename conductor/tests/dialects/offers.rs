//! The conductor offers what it serves: under `--listen` its `initialize` answer says it loads,
//! resumes and closes sessions and takes attachments, whatever its agent offers — here an
//! agent that offers none of it — and each thing it adds works through the answer; over stdio
//! without `--listen` the answer is the agent's.

use std::future::Future;
use std::pin::Pin;

use serde_json::{Value, json};

use crate::common::*;
use crate::raw::Raw;
use crate::remote::{Listening, remote};
use crate::restart::{editor, prompt};

/// An agent that can take no session back and close none.
fn bare_agent() -> String {
    format!("{} --offers none --no-close", quoted(&agent()))
}

const INIT: &str = r#"{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":false}}}"#;

/// The `initialize` answer of `command` run as an ACP agent on stdio, as it wrote it.
async fn stdio_answer(command: &[&str]) -> String {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let mut child = tokio::process::Command::new(command[0])
        .args(&command[1..])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let line =
        format!("{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{INIT}}}\n");
    stdin.write_all(line.as_bytes()).await.unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap()).lines();
    let answer = within("the initialize answer", out.next_line())
        .await
        .unwrap()
        .expect("an answer");
    drop(stdin);
    let _ = child.kill().await;
    let answer: Value = serde_json::from_str(&answer).unwrap();
    serde_json::to_string(&answer["result"]).unwrap()
}

/// The paths (`a.b.c`) at which `after` differs from `before`: added, changed or removed.
fn changed(before: &Value, after: &Value, at: &str, out: &mut Vec<String>) {
    match (before, after) {
        (Value::Object(b), Value::Object(a)) => {
            let keys: std::collections::BTreeSet<&String> = b.keys().chain(a.keys()).collect();
            for key in keys {
                let path = if at.is_empty() {
                    key.clone()
                } else {
                    format!("{at}.{key}")
                };
                let null = Value::Null;
                let (b, a) = (b.get(key).unwrap_or(&null), a.get(key).unwrap_or(&null));
                changed(b, a, &path, out);
            }
        }
        (b, a) if b != a => out.push(at.to_owned()),
        _ => {}
    }
}

/// Over stdio, without `--listen` or `--share`, the conductor's answer is its agent's, byte for
/// byte but for the conductor's own `_meta.sacp` members.
#[tokio::test]
async fn over_stdio_the_answer_is_the_agents_but_for_the_conductors_meta() {
    let agent = agent();
    let bare = [agent.as_str(), "--offers", "none", "--no-close"];
    let direct = stdio_answer(&bare).await;
    let mut through = vec![conductor(), "agent", "--"];
    through.extend(bare);
    let conducted = stdio_answer(&through).await;
    let (mut direct_value, mut conducted_value): (Value, Value) = (
        serde_json::from_str(&direct).unwrap(),
        serde_json::from_str(&conducted).unwrap(),
    );
    // The conductor's own members, documented: it takes a history with `session/new` for any
    // agent (`_meta.sacp.history`).
    let sacp = |v: &mut Value| {
        v.pointer_mut("/agentCapabilities/_meta")
            .and_then(Value::as_object_mut)
            .and_then(|m| m.remove("sacp"))
    };
    let taken = sacp(&mut conducted_value);
    assert_eq!(taken, Some(json!({"history": true})), "{conducted}");
    sacp(&mut direct_value);
    if conducted_value.pointer("/agentCapabilities/_meta") == Some(&json!({})) {
        conducted_value["agentCapabilities"]
            .as_object_mut()
            .unwrap()
            .remove("_meta");
    }
    assert_eq!(conducted_value, direct_value);
    // Byte for byte: the conductor's answer, without its member, is the agent's text.
    let without = conducted.replace(r#","_meta":{"sacp":{"history":true}}"#, "");
    assert_eq!(without, direct, "the agent's answer as it wrote it");
}

/// A check that one capability the answer adds works, through a conductor at a URL.
type Exercise = fn(String) -> Pin<Box<dyn Future<Output = ()>>>;

/// Every capability the layer adds to the answer, and the check that it works: the answer must
/// add exactly these, so that a new one cannot be added untested.
const ADDED: &[(&str, Exercise)] = &[
    ("agentCapabilities.loadSession", |url| Box::pin(loads(url))),
    ("agentCapabilities.sessionCapabilities.resume", |url| {
        Box::pin(resumes(url))
    }),
    ("agentCapabilities.sessionCapabilities.close", |url| {
        Box::pin(closes(url))
    }),
    ("agentCapabilities._meta.sacp.attach", |url| {
        Box::pin(attaches(url))
    }),
];

#[tokio::test]
async fn under_listen_the_answer_offers_what_the_conductor_serves_and_each_works() {
    let agent = agent();
    let bare = [agent.as_str(), "--offers", "none", "--no-close"];
    let mut through = vec![conductor(), "agent", "--"];
    through.extend(bare);
    let stdio: Value = serde_json::from_str(&stdio_answer(&through).await).unwrap();
    let server = listening().await;
    let mut ed = Raw::new("editor", remote(&server.ws()).await);
    let served = ed
        .request("initialize", serde_json::from_str(INIT).unwrap())
        .await
        .unwrap();
    let mut added = Vec::new();
    changed(&stdio, &served, "", &mut added);
    let mut table: Vec<&str> = ADDED.iter().map(|(path, _)| *path).collect();
    table.sort_unstable();
    added.sort_unstable();
    assert_eq!(
        added, table,
        "what the answer adds, and what the table tests"
    );
    assert_eq!(served["agentCapabilities"]["loadSession"], true);
    for (path, exercise) in ADDED {
        eprintln!("exercising {path}");
        exercise(server.ws()).await;
    }
}

async fn listening() -> Listening {
    let dir = std::env::temp_dir().join(format!("sacp-offers-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let journal = dir.join(format!("journal-{}.db", uuid_like()));
    let journal = journal.to_str().unwrap().to_owned();
    crate::across_machines::conductor_listening(&["--journal", &journal], &[bare_agent()]).await
}

/// A name no other test of this process takes.
fn uuid_like() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

async fn new_session(ed: &mut Raw) -> String {
    let new = json!({"cwd": "/tmp", "mcpServers": []});
    ed.request("session/new", new).await.unwrap()["sessionId"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// The texts of the updates `ed` received, in order.
fn texts(ed: &Raw) -> Vec<String> {
    ed.updates()
        .iter()
        .filter_map(|u| u["update"]["content"]["text"].as_str().map(str::to_owned))
        .collect()
}

/// `loadSession`: a session whose connection went is loaded on a new one, its history
/// replayed, then its next turn streams.
async fn loads(url: String) {
    let mut first = editor(&url).await;
    let session = new_session(&mut first).await;
    assert_eq!(
        prompt(&mut first, &session, "stream 2").await["stopReason"],
        "end_turn"
    );
    drop(first);
    let mut again = editor(&url).await;
    let load = json!({"sessionId": session, "cwd": "/tmp", "mcpServers": []});
    assert!(again.request("session/load", load).await.is_ok());
    assert_eq!(texts(&again), ["stream 2", "chunk 1", "chunk 2"]);
    assert_eq!(
        prompt(&mut again, &session, "stream 1").await["stopReason"],
        "end_turn"
    );
    // An id nobody holds, which the agent cannot load: not here, never an empty session.
    let nobody = json!({"sessionId": "nobody", "cwd": "/tmp", "mcpServers": []});
    let refused = again.request("session/load", nobody).await.unwrap_err();
    assert_eq!(refused["code"], -32002, "{refused}");
}

/// `sessionCapabilities.resume`: a second connection resumes a live session, with no replay,
/// and prompts it.
async fn resumes(url: String) {
    let mut first = editor(&url).await;
    let session = new_session(&mut first).await;
    assert_eq!(
        prompt(&mut first, &session, "stream 1").await["stopReason"],
        "end_turn"
    );
    drop(first);
    let mut again = editor(&url).await;
    let resume = json!({"sessionId": session, "cwd": "/tmp", "mcpServers": []});
    assert!(again.request("session/resume", resume).await.is_ok());
    assert!(texts(&again).is_empty(), "a resume replays nothing");
    assert_eq!(
        prompt(&mut again, &session, "stream 2").await["stopReason"],
        "end_turn"
    );
    assert_eq!(texts(&again), ["chunk 1", "chunk 2"]);
}

/// `sessionCapabilities.close`: the agent cannot close a session (it refuses `session/close`);
/// the conductor closes it, and a later load is refused as closed.
async fn closes(url: String) {
    let mut ed = editor(&url).await;
    let session = new_session(&mut ed).await;
    let closed = ed
        .request("session/close", json!({"sessionId": session}))
        .await;
    assert_eq!(closed, Ok(json!({})));
    let mut again = editor(&url).await;
    let load = json!({"sessionId": session, "cwd": "/tmp", "mcpServers": []});
    let refused = again.request("session/load", load).await.unwrap_err();
    assert_eq!(refused["code"], -32002, "{refused}");
    assert!(
        refused["message"].as_str().unwrap().contains("closed"),
        "{refused}"
    );
}

/// `_meta.sacp.attach`: a second client attaches to a live session as a controller, gets its
/// history, and sees the next turn.
async fn attaches(url: String) {
    let mut first = editor(&url).await;
    let session = new_session(&mut first).await;
    assert_eq!(
        prompt(&mut first, &session, "stream 1").await["stopReason"],
        "end_turn"
    );
    let mut second = editor(&url).await;
    let attached = second
        .request(
            "session/attach",
            json!({"sessionId": session, "role": "controller"}),
        )
        .await
        .unwrap();
    assert_eq!(attached["role"], "controller", "{attached}");
    let history = attached["history"].to_string();
    assert!(
        history.contains("stream 1") && history.contains("chunk 1"),
        "{attached}"
    );
    assert_eq!(
        prompt(&mut first, &session, "stream 2").await["stopReason"],
        "end_turn"
    );
    second
        .until("the other client's turn end", |m| {
            matches!(m, sacp::jsonrpc::Message::Notification(n) if n.method == "_sacp/turn_ended")
        })
        .await;
    assert_eq!(texts(&second), ["stream 2", "chunk 1", "chunk 2"]);
}

/// The official TypeScript SDK's client, loading only because the answer offers
/// `loadSession`, takes its session back after its connection was cut: the history, then the
/// turn that waited for it (a permission request it answers), then its next turn.
#[tokio::test]
async fn the_typescript_sdks_client_loads_because_the_answer_offers_it() {
    let Some(script) = crate::peers::ts_remote("reattach.mjs") else {
        return;
    };
    let server = listening().await;
    let url = server.ws();
    let session = crate::sessions::cut_during(
        &script,
        "ws",
        &url,
        "permission",
        &[("ACP_CUT_AT", "permission")],
    )
    .await;
    let run = crate::sessions::reattach(
        &script,
        &["load", "ws", &url, &session, "stream 2"],
        &[("ACP_LOAD_IF_OFFERED", "1"), ("ACP_UNTIL", "turn_ended")],
    )
    .await;
    let lines: Vec<Value> = run.lines;
    assert_eq!(lines.first(), Some(&json!({"offered": true})), "{lines:?}");
    assert!(lines.contains(&json!({"loaded": true})), "{lines:?}");
    let want = [
        json!({"user": "permission"}),
        json!({"permission": "write a file"}),
        json!({"update": "permission: allow"}),
        json!({"turnEnded": "end_turn"}),
        json!({"answer": "end_turn", "said": ["chunk 1", "chunk 2"]}),
    ];
    let mut at = 0;
    for line in &lines {
        if at < want.len() && *line == want[at] {
            at += 1;
        }
    }
    assert_eq!(at, want.len(), "in this order: {want:?}; got {lines:?}");
}
