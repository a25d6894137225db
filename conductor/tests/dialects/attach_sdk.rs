//! Many editors on one session, with the official TypeScript SDK's WebSocket and Streamable
//! HTTP clients among them (see `attach.rs`): attaching, answering the agent first, observing,
//! ACP v2, and each client's content as it declared it takes it.

use std::process::Stdio;

use sacp::jsonrpc::Message;
use sacp::testing::within;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::attach::{attach, initialize, prompt, sharing, sharing_with, turn_ended};
use crate::common::*;
use crate::raw::{Raw, params_of, said};
use crate::remote::{TOKEN, remote};

/// A client on the TypeScript SDK's remote clients, driven line by line (`client.mjs`).
pub(crate) struct Ts {
    pub(crate) child: Child,
    stdin: tokio::process::ChildStdin,
    out: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    /// The agent's chunks it printed since the last [`Ts::chunks`].
    chunks: Vec<String>,
}

impl Ts {
    pub(crate) async fn start(script: &str, profile: &str, url: &str) -> Ts {
        let mut words = script.split_whitespace();
        let mut child = Command::new(words.next().unwrap())
            .args(words)
            .args([profile, url])
            .env("ACP_TOKEN", TOKEN)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let out = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut ts = Ts {
            child,
            stdin,
            out,
            chunks: Vec::new(),
        };
        ts.until("ready").await;
        ts
    }

    pub(crate) async fn send(&mut self, command: Value) {
        use tokio::io::AsyncWriteExt;
        let line = format!("{command}\n");
        within(
            "a command to client.mjs",
            self.stdin.write_all(line.as_bytes()),
        )
        .await
        .unwrap();
    }

    /// Lines until one with `key` (returned); the agent's chunks among them kept.
    pub(crate) async fn until(&mut self, key: &str) -> Value {
        loop {
            let line = within(&format!("client.mjs's {key:?}"), self.out.next_line())
                .await
                .unwrap()
                .unwrap_or_else(|| panic!("client.mjs ended before {key:?}"));
            let value: Value = serde_json::from_str(&line).unwrap_or(Value::String(line));
            if let Some(text) = value.get("update").and_then(Value::as_str) {
                self.chunks.push(text.to_owned());
            }
            if value.get(key).is_some() {
                return value;
            }
            assert!(value.get("error").is_none(), "client.mjs: {value}");
        }
    }

    pub(crate) fn chunks(&mut self) -> Vec<String> {
        std::mem::take(&mut self.chunks)
    }
}

/// The official TypeScript SDK's WebSocket and Streamable HTTP clients attach to the stdio
/// editor's session: the history is what the stdio editor saw, the stdio editor's turns stream
/// to them, their answer to a permission request is the agent's while the stdio editor's copy
/// is withdrawn, and they detach.
#[tokio::test]
async fn the_typescript_sdks_clients_attach_to_the_stdio_editors_session_and_answer_first() {
    let Some(script) = crate::peers::ts_remote("attach.mjs") else {
        return;
    };
    for profile in ["ws", "http"] {
        let (_conductor, mut stdio, ws, http) = sharing(&[]).await;
        initialize(&mut stdio).await;
        let new = json!({"cwd": "/tmp", "mcpServers": []});
        let session = stdio.request("session/new", new).await.unwrap()["sessionId"]
            .as_str()
            .unwrap()
            .to_owned();
        prompt(&mut stdio, &session, "stream 3").await.unwrap();
        let saw: Vec<String> = stdio
            .updates()
            .iter()
            .filter_map(said)
            .map(str::to_owned)
            .collect();

        let url = if profile == "ws" { &ws } else { &http };
        let mut words = script.split_whitespace();
        let mut child = Command::new(words.next().unwrap())
            .args(words)
            .args([profile, url.as_str(), session.as_str()])
            .env("ACP_TOKEN", TOKEN)
            .env("ACP_ANSWER", "allow")
            .env("ACP_TURNS", "2")
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut next = async || -> Value {
            let line = within("attach.mjs's next line", out.next_line())
                .await
                .unwrap()
                .expect("attach.mjs ended early");
            serde_json::from_str(&line).unwrap_or(Value::String(line))
        };
        let attached = next().await;
        let attached = &attached["attached"];
        assert_eq!(attached["clientId"], "ts", "{profile}: {attached}");
        let history: Vec<&str> = attached["history"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|h| h["method"] == "session/update")
            .filter_map(|h| said(&h["params"]))
            .collect();
        assert_eq!(history, saw, "{profile}");

        // A turn of the stdio editor's streams to it.
        stdio.clear();
        prompt(&mut stdio, &session, "stream 5").await.unwrap();
        let mut lines = Vec::new();
        loop {
            let line = next().await;
            let end = line.get("turnEnded").is_some();
            lines.push(line);
            if end {
                break;
            }
        }
        let mut want = vec![json!({"user": "stream 5"})];
        want.extend(
            stdio
                .updates()
                .iter()
                .filter_map(said)
                .map(|t| json!({"update": t})),
        );
        want.push(json!({"turnEnded": "end_turn"}));
        assert_eq!(lines, want, "{profile}");

        // Its answer to a permission request is the agent's; the stdio editor's copy goes.
        stdio.clear();
        let turn = stdio
            .ask(
                "session/prompt",
                json!({"sessionId": session, "prompt": [{"type": "text", "text": "permission"}]}),
            )
            .await;
        let (on_stdio, _) = stdio.asked("session/request_permission").await;
        let on_stdio = serde_json::to_value(&on_stdio).unwrap();
        stdio
            .until("the stdio editor's copy withdrawn", |m| {
                matches!(m, Message::Notification(n) if n.method == "$/cancel_request"
                    && params_of(n.params.as_ref())["requestId"] == on_stdio)
            })
            .await;
        assert_eq!(
            stdio.answer_to(&turn).await.unwrap()["stopReason"],
            "end_turn"
        );
        let updates = stdio.updates();
        let texts: Vec<&str> = updates.iter().filter_map(said).collect();
        assert_eq!(texts, ["permission: allow"], "{profile}");
        let mut rest = Vec::new();
        loop {
            let line = next().await;
            let end = line.get("detached").is_some();
            rest.push(line);
            if end {
                break;
            }
        }
        assert_eq!(
            rest,
            [
                json!({"user": "permission"}),
                json!({"permission": "write a file"}),
                json!({"update": "permission: allow"}),
                json!({"turnEnded": "end_turn"}),
                json!({"detached": {"sessionId": session, "status": "detached"}}),
            ],
            "{profile}"
        );
        let status = within("attach.mjs's end", child.wait()).await.unwrap();
        assert!(status.success(), "{profile}: {status}");
    }
}

/// Under ACP v2 the agent shows a prompt itself (its `user_message` update) and ends a turn
/// with its `state_update`: an attached client sees the stdio editor's turn exactly as the
/// stdio editor does, the prompt once, and a v2 client whose `info` differs shares the
/// stdio editor's chain (no agent of its own).
#[tokio::test]
async fn under_v2_an_attached_client_sees_the_agents_own_user_message_once() {
    let agent = format!("{} --protocol 2", quoted(&agent()));
    let (conductor, mut stdio, ws, _) = sharing_with(&[], &[agent]).await;
    let init = |name: &str| json!({"protocolVersion": 2, "info": {"name": name, "version": "1.0"}});
    let answer = stdio.request("initialize", init("stdio")).await.unwrap();
    assert_eq!(answer["protocolVersion"], 2);
    let new = json!({"cwd": "/tmp", "mcpServers": []});
    let session = stdio.request("session/new", new).await.unwrap()["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut other = Raw::new("other", remote(&ws).await);
    let answer = other.request("initialize", init("other")).await.unwrap();
    assert_eq!(answer["protocolVersion"], 2);
    attach(&mut other, &session, json!({"historyPolicy": "none"}))
        .await
        .unwrap();

    stdio.clear();
    let params = json!({"sessionId": session, "prompt": [{"type": "text", "text": "stream 2"}]});
    stdio.request("session/prompt", params).await.unwrap();
    let idle = |m: &Message| {
        matches!(m, Message::Notification(n) if n.method == "session/update"
        && n.params.as_ref().is_some_and(|p| {
            let p = params_of(Some(p));
            p["update"]["sessionUpdate"] == "state_update" && p["update"]["state"] == "idle"
        }))
    };
    stdio.until("the turn's idle state", idle).await;
    other.until("the turn's idle state", idle).await;
    let kinds = |client: &Raw| -> Vec<String> {
        client
            .updates()
            .iter()
            .map(|u| {
                u["update"]["sessionUpdate"]
                    .as_str()
                    .unwrap_or("?")
                    .to_owned()
            })
            .collect()
    };
    assert_eq!(kinds(&other), kinds(&stdio));
    assert_eq!(
        kinds(&other)
            .iter()
            .filter(|k| k.starts_with("user_message"))
            .collect::<Vec<_>>(),
        ["user_message"]
    );
    assert_eq!(other.updates(), stdio.updates());
    // One agent process: the second client was answered `initialize` as the first was.
    let agents: Vec<u32> = processes::process_tree(conductor.id().unwrap())
        .into_iter()
        .filter(|(_, name)| name.starts_with("test-agent"))
        .map(|(pid, _)| pid)
        .collect();
    assert_eq!(agents.len(), 1, "{agents:?}");
}

/// With the TypeScript SDK's clients: an observer (WebSocket) is refused a prompt and its
/// answer to a permission request is not the agent's; a client attaching with `pending_only`
/// (Streamable HTTP) while the request waits gets it in its history and again as a request,
/// and its answer is the agent's, while the stdio editor's copy is withdrawn.
#[tokio::test]
async fn the_typescript_sdks_observer_changes_nothing_and_a_pending_only_client_answers() {
    let Some(script) = crate::peers::ts_remote("client.mjs") else {
        return;
    };
    let (_conductor, mut stdio, ws, http) = sharing(&[]).await;
    initialize(&mut stdio).await;
    let new = json!({"cwd": "/tmp", "mcpServers": []});
    let session = stdio.request("session/new", new).await.unwrap()["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut observer = Ts::start(&script, "ws", &ws).await;
    observer
        .send(
            json!({"attach": {"sessionId": session, "role": "observer", "historyPolicy": "none"}}),
        )
        .await;
    assert_eq!(
        observer.until("attached").await["attached"]["role"],
        "observer"
    );
    observer
        .send(json!({"prompt": [session, "stream 1"]}))
        .await;
    let refused = observer.until("error").await;
    assert_eq!(refused["error"]["code"], -32004, "{refused}");

    let turn = stdio
        .ask(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": "permission"}]}),
        )
        .await;
    let (on_stdio, asked) = stdio.asked("session/request_permission").await;
    assert_eq!(
        observer.until("permission").await,
        json!({"permission": "write a file"})
    );
    observer.send(json!({"allow": "reject"})).await;

    let mut laptop = Ts::start(&script, "http", &http).await;
    laptop
        .send(json!({"attach": {"sessionId": session, "historyPolicy": "pending_only"}}))
        .await;
    let attached = laptop.until("attached").await;
    assert_eq!(
        attached["attached"]["history"],
        json!([{"method": "session/request_permission", "params": asked}])
    );
    assert_eq!(
        laptop.until("permission").await,
        json!({"permission": "write a file"})
    );
    laptop.send(json!({"allow": "allow"})).await;
    let on_stdio = serde_json::to_value(&on_stdio).unwrap();
    stdio
        .until("the stdio editor's copy withdrawn", |m| {
            matches!(m, Message::Notification(n) if n.method == "$/cancel_request"
                && params_of(n.params.as_ref())["requestId"] == on_stdio)
        })
        .await;
    assert_eq!(
        stdio.answer_to(&turn).await.unwrap()["stopReason"],
        "end_turn"
    );
    let updates = stdio.updates();
    let texts: Vec<&str> = updates.iter().filter_map(said).collect();
    assert_eq!(texts, ["permission: allow"]);
    for ts in [&mut observer, &mut laptop] {
        assert_eq!(
            ts.until("turnEnded").await,
            json!({"turnEnded": "end_turn"})
        );
        assert_eq!(ts.chunks(), ["permission: "]);
        ts.send(json!({"exit": true})).await;
    }
}

/// Rich content under `--share`: the chain transforms nothing for the layer, and each client
/// gets the panel `panel-proxy` sends as it declared in its `initialize` — the stdio editor
/// (declaring nothing) as text, a client declaring `text/html` as the HTML resource, live and
/// in the history it attaches with.
#[tokio::test]
async fn each_client_gets_content_as_it_declared_it_takes_it() {
    let chain = [example("panel-proxy"), agent()];
    let (_conductor, mut stdio, ws, _) = sharing_with(&[], &chain).await;
    initialize(&mut stdio).await;
    let new = json!({"cwd": "/tmp", "mcpServers": []});
    let session = stdio.request("session/new", new).await.unwrap()["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let answer = prompt(&mut stdio, &session, "hello").await.unwrap();
    assert_eq!(answer["stopReason"], "end_turn");

    let mut page = Raw::new("page", remote(&ws).await);
    let init = json!({
        "protocolVersion": 1,
        "clientCapabilities": {},
        "clientInfo": {"name": "page", "version": "1.0"},
        "_meta": {"sacp": {"content": ["text/html"]}},
    });
    page.request("initialize", init).await.unwrap();
    let attached = attach(&mut page, &session, json!({"clientId": "page"}))
        .await
        .unwrap();
    let panel_in = |updates: &[Value]| -> Value {
        updates
            .iter()
            .map(|u| u["update"]["content"].clone())
            .find(|c| c.to_string().contains("Turn summary"))
            .unwrap_or_else(|| panic!("no panel in {updates:?}"))
    };
    let history: Vec<Value> = attached["history"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|h| h["method"] == "session/update")
        .map(|h| h["params"].clone())
        .collect();
    let panel = panel_in(&history);
    assert_eq!(panel["resource"]["mimeType"], "text/html", "{panel}");

    // Live: a turn of the stdio editor's.
    stdio.clear();
    let answer = prompt(&mut stdio, &session, "again").await.unwrap();
    assert_eq!(answer["stopReason"], "end_turn");
    turn_ended(&mut page).await;
    let theirs = panel_in(&page.updates());
    assert_eq!(theirs["type"], "resource", "{theirs}");
    assert!(
        theirs["resource"]["text"]
            .as_str()
            .unwrap()
            .contains("<h2>Turn summary</h2>")
    );
    let mine = panel_in(&stdio.updates());
    assert_eq!(mine["type"], "text", "{mine}");
    let text = mine["text"].as_str().unwrap();
    assert!(
        text.contains("Turn summary") && !text.contains('<'),
        "{text}"
    );
    assert_eq!(mine["_meta"]["sacp"]["transformedFrom"], "text/html");
}
