//! Many editors on one session (`session/attach`, `session/detach`): a conductor started by
//! an editor on stdio that shares its sessions (`--share`), and network clients that attach to
//! them over WebSocket and Streamable HTTP — the history, the stream in one order for all, the
//! agent's requests answered by the first controller and withdrawn from the others, observers,
//! detach, and the errors. Every client here speaks raw frames, so that each test sees exactly
//! what reaches it (a `$/cancel_request`, say).

use std::process::Stdio;
use std::time::Duration;

use sacp::jsonrpc::{ByteStream, Message};
use sacp::testing::within;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::common::*;
use crate::raw::{Raw, is_notification, params_of, said};
use crate::remote::{TOKEN, remote};

/// The conductor as a stdio editor starts it, sharing on 127.0.0.1 (`--share`): the process,
/// the editor's client on its stdio, and the WebSocket and HTTP URLs from its stderr.
pub(crate) async fn sharing(extra: &[&str]) -> (Child, Raw, String, String) {
    sharing_with(extra, &[passthrough(), agent()]).await
}

/// [`sharing`] with `components`.
pub(crate) async fn sharing_with(
    extra: &[&str],
    components: &[String],
) -> (Child, Raw, String, String) {
    let token = std::env::temp_dir().join(format!("sacp-share-token-{}", std::process::id()));
    std::fs::write(&token, format!("{TOKEN}\n")).unwrap();
    let mut child = Command::new(conductor())
        .args([
            "agent",
            "--share",
            "127.0.0.1:0",
            "--no-journal",
            "--listen-token-file",
        ])
        .arg(&token)
        .args(extra)
        .args(components)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let url = loop {
        let line = within("the conductor's URL on stderr", lines.next_line())
            .await
            .unwrap()
            .expect("the conductor ended before it said its URL");
        if let Some((_, rest)) = line.split_once("serving the chain at ") {
            break rest.split_whitespace().next().unwrap().to_owned();
        }
    };
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    let stdio = ByteStream::new(child.stdout.take().unwrap(), child.stdin.take().unwrap());
    let ws = url.replacen("http", "ws", 1);
    (child, Raw::new("stdio", stdio), ws, url)
}

pub(crate) async fn initialize(client: &mut Raw) {
    let init = json!({
        "protocolVersion": 1,
        "clientCapabilities": {"fs": {"readTextFile": true, "writeTextFile": true}},
        "clientInfo": {"name": client.name, "version": "1.0"},
    });
    client.request("initialize", init).await.unwrap();
}

/// A network client of the sharing conductor, initialized.
pub(crate) async fn network(name: &'static str, url: &str) -> Raw {
    let mut client = Raw::new(name, remote(url).await);
    initialize(&mut client).await;
    client
}

/// A turn of `client`'s: its prompt's answer, once `client` got it.
pub(crate) async fn prompt(client: &mut Raw, session: &str, text: &str) -> Result<Value, Value> {
    let params = json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]});
    client.request("session/prompt", params).await
}

pub(crate) async fn attach(client: &mut Raw, session: &str, extra: Value) -> Result<Value, Value> {
    let mut params = json!({"sessionId": session});
    params
        .as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    client.request("session/attach", params).await
}

/// Until `client` was told that a turn of another client in `session` ended.
pub(crate) async fn turn_ended(client: &mut Raw) -> Value {
    match client
        .until("_sacp/turn_ended", |m| {
            is_notification(m, "_sacp/turn_ended")
        })
        .await
    {
        Message::Notification(n) => params_of(n.params.as_ref()),
        _ => unreachable!(),
    }
}

/// The stdio editor's session (Sparkle and a pass-through proxy before the agent); a
/// WebSocket client attaches to it with `full` history, which is
/// what the stdio editor saw; a turn of the stdio editor streams to both in one order.
#[tokio::test]
async fn a_client_attached_to_the_stdio_editors_session_sees_its_history_and_its_turns() {
    let chain = [example("sparkle"), passthrough(), agent()];
    let (_conductor, mut stdio, ws, _) = sharing_with(&[], &chain).await;
    initialize(&mut stdio).await;
    let new = json!({"cwd": "/tmp", "mcpServers": []});
    let session = stdio.request("session/new", new).await.unwrap()["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let answer = prompt(&mut stdio, &session, "stream 3").await.unwrap();
    assert_eq!(answer["stopReason"], "end_turn");
    let saw = stdio.updates();
    // Sparkle's embodiment (a tool call, its end, a thought), then the agent's three chunks.
    assert_eq!(saw.iter().filter_map(said).count(), 3, "{saw:?}");
    assert!(saw.len() > 3, "{saw:?}");

    let mut watcher = network("watcher", &ws).await;
    let attached = attach(&mut watcher, &session, json!({"clientId": "phone"}))
        .await
        .unwrap();
    assert_eq!(attached["sessionId"], session.as_str());
    assert_eq!(attached["clientId"], "phone");
    assert_eq!(attached["role"], "controller");
    assert_eq!(attached["historyPolicy"], "full");
    assert_eq!(
        attached["connectedClients"],
        json!([{"clientId": "stdio", "name": "stdio", "version": "1.0", "role": "controller"}])
    );
    let history = attached["history"].as_array().unwrap();
    assert_eq!(history[0]["method"], "session/prompt");
    assert_eq!(history[0]["params"]["prompt"][0]["text"], "stream 3");
    let updates: Vec<Value> = history
        .iter()
        .filter(|h| h["method"] == "session/update")
        .map(|h| h["params"].clone())
        .collect();
    assert_eq!(updates, saw, "the history is what the stdio editor saw");
    assert_eq!(
        history.last().unwrap()["method"],
        "_sacp/turn_ended",
        "{history:?}"
    );

    // A turn of the stdio editor's: both see it, in the same order.
    stdio.clear();
    let answer = prompt(&mut stdio, &session, "stream 20").await.unwrap();
    assert_eq!(answer["stopReason"], "end_turn");
    let ended = turn_ended(&mut watcher).await;
    assert_eq!(
        ended,
        json!({"sessionId": session, "stopReason": "end_turn"})
    );
    let mut theirs = watcher.updates();
    // The watcher sees the prompt as the user's words first.
    let first = theirs.remove(0);
    assert_eq!(first["update"]["sessionUpdate"], "user_message_chunk");
    assert_eq!(first["update"]["content"]["text"], "stream 20");
    assert_eq!(theirs, stdio.updates());
    assert_eq!(theirs.iter().filter_map(said).count(), 20);

    // And a turn of the watcher's: the stdio editor sees it too.
    stdio.clear();
    watcher.clear();
    let answer = prompt(&mut watcher, &session, "stream 4").await.unwrap();
    assert_eq!(answer["stopReason"], "end_turn");
    turn_ended(&mut stdio).await;
    let mut mine = stdio.updates();
    assert_eq!(mine.remove(0)["update"]["content"]["text"], "stream 4");
    assert_eq!(mine, watcher.updates());
}

/// A permission request goes to both controllers; the first answer reaches the agent, the
/// other copy is withdrawn with `$/cancel_request`, and a late answer changes nothing. Both
/// ways round; then `pending_only`: a client attaching while a request waits is sent it again
/// and can answer it.
#[tokio::test]
async fn the_first_controller_to_answer_the_agent_wins_and_the_others_copies_are_withdrawn() {
    let trace =
        std::env::temp_dir().join(format!("sacp-attach-trace-{}.jsonl", std::process::id()));
    let (_conductor, mut stdio, ws, http) = sharing(&["--trace", trace.to_str().unwrap()]).await;
    initialize(&mut stdio).await;
    let new = json!({"cwd": "/tmp", "mcpServers": []});
    let session = stdio.request("session/new", new).await.unwrap()["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut phone = network("phone", &ws).await;
    attach(
        &mut phone,
        &session,
        json!({"historyPolicy": "none", "clientId": "phone"}),
    )
    .await
    .unwrap();

    for phone_first in [true, false] {
        stdio.clear();
        phone.clear();
        let turn = stdio
            .ask(
                "session/prompt",
                json!({"sessionId": session, "prompt": [{"type": "text", "text": "permission"}]}),
            )
            .await;
        let (on_stdio, asked) = stdio.asked("session/request_permission").await;
        let (on_phone, asked_too) = phone.asked("session/request_permission").await;
        assert_eq!(asked, asked_too);
        assert_eq!(asked["sessionId"], session.as_str());
        let (first_id, late_id) = if phone_first {
            (on_phone, on_stdio)
        } else {
            (on_stdio, on_phone)
        };
        let (first, late, choice) = if phone_first {
            (&mut phone, &mut stdio, "allow")
        } else {
            (&mut stdio, &mut phone, "reject")
        };
        let selected =
            |option: &str| json!({"outcome": {"outcome": "selected", "optionId": option}});
        first.reply(first_id, selected(choice)).await;
        let late_json = serde_json::to_value(&late_id).unwrap();
        let withdrawn = late
            .until("$/cancel_request of the other copy", |m| {
                matches!(m, Message::Notification(n) if n.method == "$/cancel_request"
                    && params_of(n.params.as_ref())["requestId"] == late_json)
            })
            .await;
        drop(withdrawn);
        // Its late answer changes nothing.
        let other = if choice == "allow" { "reject" } else { "allow" };
        late.reply(late_id, selected(other)).await;
        assert_eq!(
            stdio.answer_to(&turn).await.unwrap()["stopReason"],
            "end_turn"
        );
        let outcome = format!("permission: {choice}");
        let texts: Vec<String> = stdio
            .updates()
            .iter()
            .filter_map(said)
            .map(str::to_owned)
            .collect();
        assert_eq!(texts, std::slice::from_ref(&outcome));
        turn_ended(&mut phone).await;
        assert!(
            phone
                .updates()
                .iter()
                .filter_map(said)
                .any(|t| t == outcome)
        );
    }

    // The trace says who did what.
    let events = until("the trace's session events", PATIENCE, || {
        let text = std::fs::read_to_string(&trace).unwrap_or_default();
        let events: Vec<String> = text
            .lines()
            .filter(|l| l.contains(r#""type":"session""#))
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|e| e["event"] != "attached")
            .map(|e| {
                format!(
                    "{} {} {} {}",
                    e["event"].as_str().unwrap(),
                    e["client"].as_str().unwrap(),
                    e["role"].as_str().unwrap(),
                    e["method"].as_str().unwrap_or("")
                )
            })
            .collect();
        if events.len() >= 4 {
            Ok(events)
        } else {
            Err(format!("{events:?}"))
        }
    })
    .await;
    let phone_id = "phone";
    assert_eq!(
        events,
        [
            "prompted stdio controller ".to_owned(),
            format!("answered {phone_id} controller session/request_permission"),
            "prompted stdio controller ".to_owned(),
            "answered stdio controller session/request_permission".to_owned(),
        ]
    );
    let _ = std::fs::remove_file(&trace);

    // The next turn works.
    stdio.clear();
    let answer = prompt(&mut stdio, &session, "stream 2").await.unwrap();
    assert_eq!(answer["stopReason"], "end_turn");

    // pending_only: a request waits; a client attaching over Streamable HTTP gets it in its
    // history and as a request, and answers it.
    stdio.clear();
    phone.clear();
    let turn = stdio
        .ask(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": "permission"}]}),
        )
        .await;
    let (on_stdio, asked) = stdio.asked("session/request_permission").await;
    let mut laptop = network("laptop", &http).await;
    let attached = attach(
        &mut laptop,
        &session,
        json!({"historyPolicy": "pending_only"}),
    )
    .await
    .unwrap();
    assert_eq!(
        attached["history"],
        json!([{"method": "session/request_permission", "params": asked}])
    );
    assert_eq!(attached["connectedClients"].as_array().unwrap().len(), 2);
    let (on_laptop, again) = laptop.asked("session/request_permission").await;
    assert_eq!(again, asked);
    laptop
        .reply(
            on_laptop,
            json!({"outcome": {"outcome": "selected", "optionId": "allow"}}),
        )
        .await;
    let stdio_json = serde_json::to_value(&on_stdio).unwrap();
    stdio
        .until("the stdio editor's copy withdrawn", |m| {
            matches!(m, Message::Notification(n) if n.method == "$/cancel_request"
                && params_of(n.params.as_ref())["requestId"] == stdio_json)
        })
        .await;
    assert_eq!(
        stdio.answer_to(&turn).await.unwrap()["stopReason"],
        "end_turn"
    );
    assert!(
        stdio
            .updates()
            .iter()
            .filter_map(said)
            .any(|t| t == "permission: allow")
    );
}

/// An observer receives everything, and its prompt, its answers and its cancel change
/// nothing; `fs/*` goes to the controller whose turn it is only; `session/detach` ends what a
/// client receives; an unknown session is `-32001`; no token, no attach (`401`).
#[tokio::test]
async fn observers_change_nothing_and_detach_unknown_sessions_and_tokens_are_answered() {
    let (_conductor, mut stdio, ws, http) = sharing(&[]).await;
    initialize(&mut stdio).await;
    let new = json!({"cwd": "/tmp", "mcpServers": []});
    let session = stdio.request("session/new", new).await.unwrap()["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut observer = network("observer", &ws).await;
    let attached = attach(
        &mut observer,
        &session,
        json!({"role": "observer", "historyPolicy": "none"}),
    )
    .await
    .unwrap();
    assert_eq!(attached["role"], "observer");
    assert!(attached.get("history").is_none(), "{attached}");

    // Its prompt is refused.
    let refused = prompt(&mut observer, &session, "stream 1")
        .await
        .unwrap_err();
    assert_eq!(refused["code"], -32004, "{refused}");
    // It sees the permission request; its answer is not the agent's, nor is its cancel.
    let turn = stdio
        .ask(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": "permission"}]}),
        )
        .await;
    let (on_observer, _) = observer.asked("session/request_permission").await;
    observer
        .notify("session/cancel", json!({"sessionId": session}))
        .await;
    observer
        .reply(
            on_observer,
            json!({"outcome": {"outcome": "selected", "optionId": "reject"}}),
        )
        .await;
    let (on_stdio, _) = stdio.asked("session/request_permission").await;
    stdio
        .reply(
            on_stdio,
            json!({"outcome": {"outcome": "selected", "optionId": "allow"}}),
        )
        .await;
    assert_eq!(
        stdio.answer_to(&turn).await.unwrap()["stopReason"],
        "end_turn"
    );
    let texts: Vec<String> = stdio
        .updates()
        .iter()
        .filter_map(said)
        .map(str::to_owned)
        .collect();
    assert_eq!(texts, ["permission: allow"]);
    turn_ended(&mut observer).await;

    // fs/*: to the controller whose turn it is, never to the observer.
    let mut laptop = network("laptop", &http).await;
    attach(&mut laptop, &session, json!({"historyPolicy": "none"}))
        .await
        .unwrap();
    for laptops_turn in [true, false] {
        let (asker, other) = if laptops_turn {
            (&mut laptop, &mut stdio)
        } else {
            (&mut stdio, &mut laptop)
        };
        let turn = asker
            .ask(
                "session/prompt",
                json!({"sessionId": session, "prompt": [{"type": "text", "text": "read notes.txt"}]}),
            )
            .await;
        let (id, asked) = asker.asked("fs/read_text_file").await;
        assert_eq!(asked["path"], "notes.txt");
        asker.reply(id, json!({"content": asker.name})).await;
        assert_eq!(
            asker.answer_to(&turn).await.unwrap()["stopReason"],
            "end_turn"
        );
        turn_ended(other).await;
        let is_read =
            |m: &Message| matches!(m, Message::Request(r) if r.method == "fs/read_text_file");
        assert!(!other.gets_within(Duration::from_millis(200), is_read).await);
        assert!(
            !observer
                .gets_within(Duration::from_millis(10), is_read)
                .await
        );
    }

    // A prompt while another client's turn runs is refused.
    let turn = stdio
        .ask(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": "wait"}]}),
        )
        .await;
    laptop
        .until("the waiting turn's update", |m| {
            is_notification(m, "session/update")
                && said(&params_of(match m {
                    Message::Notification(n) => n.params.as_ref(),
                    _ => None,
                })) == Some("waiting")
        })
        .await;
    let busy = prompt(&mut laptop, &session, "stream 1").await.unwrap_err();
    assert_eq!(busy["code"], -32005, "{busy}");
    // Any controller's cancel ends it for all.
    laptop
        .notify("session/cancel", json!({"sessionId": session}))
        .await;
    assert_eq!(
        stdio.answer_to(&turn).await.unwrap()["stopReason"],
        "cancelled"
    );

    // Detach: nothing more of the session reaches it.
    let detached = observer
        .request("session/detach", json!({"sessionId": session}))
        .await
        .unwrap();
    assert_eq!(
        detached,
        json!({"sessionId": session, "status": "detached"})
    );
    observer.clear();
    prompt(&mut stdio, &session, "stream 3").await.unwrap();
    turn_ended(&mut laptop).await;
    let any_update = |m: &Message| is_notification(m, "session/update");
    assert!(
        !observer
            .gets_within(Duration::from_millis(300), any_update)
            .await
    );

    // An unknown session.
    let unknown = attach(&mut observer, "nobody@0123456789ab", json!({}))
        .await
        .unwrap_err();
    assert_eq!(unknown["code"], -32001, "{unknown}");
    assert_eq!(unknown["data"]["sessionId"], "nobody@0123456789ab");

    // No token: the server refuses the connection.
    let refused = sacp::remote::Remote::new(&ws).connect().await;
    let Err(e) = refused else {
        panic!("a connection without the token was accepted")
    };
    assert!(e.to_string().contains("401"), "{e}");
}
