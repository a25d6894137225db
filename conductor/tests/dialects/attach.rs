//! Many editors on one session (`session/attach`, `session/detach`): a conductor started by
//! an editor on stdio that shares its sessions (`--share`), and network clients that attach to
//! them over WebSocket and Streamable HTTP — the history, the stream in one order for all, the
//! agent's requests answered by the first controller and withdrawn from the others, observers,
//! detach, and the errors. Every client here speaks raw frames, so that each test sees exactly
//! what reaches it (a `$/cancel_request`, say).

use std::collections::VecDeque;
use std::process::Stdio;
use std::time::Duration;

use sacp::jsonrpc::{
    ByteStream, Id, Inbound, Message, MessageReader, MessageWriter, Notification, RawJson, Request,
    Response, Transport,
};
use sacp::testing::within;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;

use crate::common::*;
use crate::remote::{TOKEN, remote};

/// A client speaking raw JSON-RPC frames: what it sends, exactly what it receives.
pub(crate) struct Raw {
    name: &'static str,
    out: mpsc::Sender<Message>,
    inbox: mpsc::Receiver<Message>,
    /// Received, not yet taken by the test.
    held: VecDeque<Message>,
    /// Everything received that the test took or set aside, in arrival order.
    log: Vec<Message>,
    next: i64,
}

impl Raw {
    pub(crate) fn new(name: &'static str, transport: impl Transport) -> Raw {
        let (mut reader, mut writer) = transport.split();
        let (to_test, inbox) = mpsc::channel(1 << 16);
        tokio::spawn(async move {
            while let Ok(Some(inbound)) = reader.read().await {
                if let Inbound::Message(m) = inbound
                    && to_test.send(m).await.is_err()
                {
                    return;
                }
            }
        });
        let (out, mut outbox) = mpsc::channel::<Message>(256);
        tokio::spawn(async move {
            while let Some(m) = outbox.recv().await {
                if writer.write(&mut vec![m]).await.is_err() {
                    return;
                }
            }
            let _ = writer.close().await;
        });
        Raw {
            name,
            out,
            inbox,
            held: VecDeque::new(),
            log: Vec::new(),
            next: 1000,
        }
    }

    async fn send(&self, message: Message) {
        within("a frame to go", self.out.send(message))
            .await
            .expect("the client's writer is gone");
    }

    /// Sends a request: its id.
    pub(crate) async fn ask(&mut self, method: &str, params: Value) -> Id {
        self.next += 1;
        let id = Id::Number(self.next);
        let request = Request {
            id: id.clone(),
            method: method.to_owned(),
            params: Some(RawJson::to_raw(&params).unwrap()),
        };
        self.send(Message::Request(request)).await;
        id
    }

    /// A request and its answer (the result, or the error object).
    pub(crate) async fn request(&mut self, method: &str, params: Value) -> Result<Value, Value> {
        let id = self.ask(method, params).await;
        self.answer_to(&id).await
    }

    pub(crate) async fn answer_to(&mut self, id: &Id) -> Result<Value, Value> {
        let what = format!("{}: the answer to {id:?}", self.name);
        match self
            .until(&what, |m| matches!(m, Message::Response(r) if &r.id == id))
            .await
        {
            Message::Response(r) => match r.into_result() {
                Ok(raw) => Ok(raw.parse().unwrap()),
                Err(e) => Err(serde_json::to_value(&e).unwrap()),
            },
            _ => unreachable!(),
        }
    }

    pub(crate) async fn notify(&self, method: &str, params: Value) {
        let n = Notification {
            method: method.to_owned(),
            params: Some(RawJson::to_raw(&params).unwrap()),
        };
        self.send(Message::Notification(n)).await;
    }

    async fn reply(&self, id: Id, result: Value) {
        let r = Response::ok(id, RawJson::to_raw(&result).unwrap());
        self.send(Message::Response(r)).await;
    }

    /// The first message received (held or new) that `pred` takes; those before it stay held.
    pub(crate) async fn until(&mut self, what: &str, pred: impl Fn(&Message) -> bool) -> Message {
        if let Some(i) = self.held.iter().position(&pred) {
            return self.held.remove(i).unwrap();
        }
        let deadline = tokio::time::Instant::now() + PATIENCE;
        loop {
            let next = tokio::time::timeout_at(deadline, self.inbox.recv()).await;
            match next {
                Ok(Some(m)) => {
                    self.log.push(m.clone());
                    if pred(&m) {
                        return m;
                    }
                    self.held.push_back(m);
                }
                Ok(None) => panic!("{what}: the connection ended; {}", self.last_held()),
                Err(_) => panic!("timed out waiting for {what}; {}", self.last_held()),
            }
        }
    }

    /// The last few messages held, for a failure's message.
    fn last_held(&self) -> String {
        let n = self.held.len();
        let last: Vec<String> = self
            .held
            .iter()
            .skip(n.saturating_sub(3))
            .map(|m| format!("{m:?}").chars().take(300).collect())
            .collect();
        format!("{n} held, the last: {last:?}")
    }

    /// Whether anything that `pred` takes arrives within `wait` (taking it).
    async fn gets_within(&mut self, wait: Duration, pred: impl Fn(&Message) -> bool) -> bool {
        if let Some(i) = self.held.iter().position(&pred) {
            self.held.remove(i);
            return true;
        }
        let deadline = tokio::time::Instant::now() + wait;
        while let Ok(Some(m)) = tokio::time::timeout_at(deadline, self.inbox.recv()).await {
            self.log.push(m.clone());
            if pred(&m) {
                return true;
            }
            self.held.push_back(m);
        }
        false
    }

    /// A request of the agent's with `method` (taken).
    async fn asked(&mut self, method: &str) -> (Id, Value) {
        let what = format!("{}: a {method} request", self.name);
        match self
            .until(
                &what,
                |m| matches!(m, Message::Request(r) if r.method == method),
            )
            .await
        {
            Message::Request(r) => (r.id, params_of(r.params.as_ref())),
            _ => unreachable!(),
        }
    }

    /// Whether a notification `method` was received (taken or held).
    pub(crate) fn received(&self, method: &str) -> bool {
        self.log.iter().any(|m| is_notification(m, method))
    }

    /// The `session/update` notifications received so far that the test took or held, as
    /// their params, in order.
    pub(crate) fn updates(&self) -> Vec<Value> {
        self.log
            .iter()
            .filter_map(|m| match m {
                Message::Notification(n) if n.method == "session/update" => {
                    Some(params_of(n.params.as_ref()))
                }
                _ => None,
            })
            .collect()
    }

    /// Every message received that the test took or set aside, in arrival order.
    pub(crate) fn messages(&self) -> &[Message] {
        &self.log
    }

    /// Forgets what it holds and has logged.
    pub(crate) fn clear(&mut self) {
        self.held.clear();
        self.log.clear();
    }
}

pub(crate) fn params_of(params: Option<&RawJson>) -> Value {
    params.map_or(Value::Null, |p| p.parse().unwrap())
}

fn is_notification(m: &Message, method: &str) -> bool {
    matches!(m, Message::Notification(n) if n.method == method)
}

/// A text update's text, if `update` is an agent message chunk.
pub(crate) fn said(update: &Value) -> Option<&str> {
    (update["update"]["sessionUpdate"] == "agent_message_chunk")
        .then(|| update["update"]["content"]["text"].as_str())
        .flatten()
}

/// The conductor as a stdio editor starts it, sharing on 127.0.0.1 (`--share`): the process,
/// the editor's client on its stdio, and the WebSocket and HTTP URLs from its stderr.
async fn sharing(extra: &[&str]) -> (Child, Raw, String, String) {
    sharing_with(extra, &[passthrough(), agent()]).await
}

/// [`sharing`] with `components`.
async fn sharing_with(extra: &[&str], components: &[String]) -> (Child, Raw, String, String) {
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

async fn initialize(client: &mut Raw) {
    let init = json!({
        "protocolVersion": 1,
        "clientCapabilities": {"fs": {"readTextFile": true, "writeTextFile": true}},
        "clientInfo": {"name": client.name, "version": "1.0"},
    });
    client.request("initialize", init).await.unwrap();
}

/// A network client of the sharing conductor, initialized.
async fn network(name: &'static str, url: &str) -> Raw {
    let mut client = Raw::new(name, remote(url).await);
    initialize(&mut client).await;
    client
}

/// A turn of `client`'s: its prompt's answer, once `client` got it.
async fn prompt(client: &mut Raw, session: &str, text: &str) -> Result<Value, Value> {
    let params = json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]});
    client.request("session/prompt", params).await
}

async fn attach(client: &mut Raw, session: &str, extra: Value) -> Result<Value, Value> {
    let mut params = json!({"sessionId": session});
    params
        .as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    client.request("session/attach", params).await
}

/// Until `client` was told that a turn of another client in `session` ended.
async fn turn_ended(client: &mut Raw) -> Value {
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

/// The first 12 characters of the agent's text chunks `client` took since the last call (enough
/// to tell one chunk from another), and forgets what it took.
fn chunks_of(client: &mut Raw) -> Vec<String> {
    let out = client
        .updates()
        .iter()
        .filter_map(said)
        .map(|t| t.chars().take(12).collect())
        .collect();
    client.log.clear();
    client.held.clear();
    out
}

/// A client on the TypeScript SDK's remote clients, driven line by line (`client.mjs`).
struct Ts {
    child: Child,
    stdin: tokio::process::ChildStdin,
    out: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    /// The agent's chunks it printed since the last [`Ts::chunks`].
    chunks: Vec<String>,
}

impl Ts {
    async fn start(script: &str, profile: &str, url: &str) -> Ts {
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

    async fn send(&mut self, command: Value) {
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
    async fn until(&mut self, key: &str) -> Value {
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

    fn chunks(&mut self) -> Vec<String> {
        std::mem::take(&mut self.chunks)
    }
}

/// One of the three clients of the long test.
enum Client {
    Stdio(Raw),
    Sdk(Box<Ts>),
}

impl Client {
    async fn prompt(&mut self, session: &str, text: &str) -> Option<Id> {
        let params = json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]});
        match self {
            Client::Stdio(raw) => Some(raw.ask("session/prompt", params).await),
            Client::Sdk(ts) => {
                ts.send(json!({"prompt": [session, text]})).await;
                None
            }
        }
    }

    async fn answer(&mut self, id: Option<Id>) -> Value {
        match (self, id) {
            (Client::Stdio(raw), Some(id)) => {
                raw.answer_to(&id).await.unwrap()["stopReason"].clone()
            }
            (Client::Sdk(ts), None) => ts.until("answer").await["answer"].clone(),
            _ => unreachable!(),
        }
    }

    async fn waiting(&mut self) {
        match self {
            Client::Stdio(raw) => {
                raw.until("the waiting turn's update", |m| {
                    matches!(m, Message::Notification(n) if n.method == "session/update"
                        && n.params.as_ref().is_some_and(|p| p.as_str().contains("\"waiting\"")))
                })
                .await;
            }
            Client::Sdk(ts) => loop {
                if ts.until("update").await["update"] == "waiting" {
                    break;
                }
            },
        }
    }

    async fn cancel(&mut self, session: &str) {
        match self {
            Client::Stdio(raw) => {
                raw.notify("session/cancel", json!({"sessionId": session}))
                    .await
            }
            Client::Sdk(ts) => ts.send(json!({"cancel": session})).await,
        }
    }

    async fn turn_ended(&mut self) {
        match self {
            Client::Stdio(raw) => drop(turn_ended(raw).await),
            Client::Sdk(ts) => drop(ts.until("turnEnded").await),
        }
    }

    fn chunks(&mut self) -> Vec<String> {
        match self {
            Client::Stdio(raw) => chunks_of(raw),
            Client::Sdk(ts) => ts.chunks(),
        }
    }
}

/// Three clients on one session — the stdio editor, and the TypeScript SDK's WebSocket and
/// Streamable HTTP clients — taking turns for 1,000 turns of `stream 50` of 2 KB updates, every
/// tenth turn a waiting turn that another controller cancels: every client's record of the
/// agent's updates is the same, in order, nothing missing, nothing twice. A fourth client that
/// attached and never reads is detached once it holds the session's record full, and told so;
/// the others go on.
#[tokio::test]
async fn three_clients_keep_one_record_for_a_thousand_turns_and_a_client_that_stops_reading_is_detached()
 {
    let Some(script) = crate::peers::ts_remote("client.mjs") else {
        return;
    };
    let (_conductor, mut stdio, ws, http) = sharing(&["--session-buffer", "256KiB"]).await;
    initialize(&mut stdio).await;
    let new = json!({"cwd": "/tmp", "mcpServers": []});
    let session = stdio.request("session/new", new).await.unwrap()["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut clients = [
        Client::Stdio(stdio),
        Client::Sdk(Box::new(Ts::start(&script, "ws", &ws).await)),
        Client::Sdk(Box::new(Ts::start(&script, "http", &http).await)),
    ];
    for client in &mut clients[1..] {
        let Client::Sdk(ts) = client else {
            unreachable!()
        };
        ts.send(json!({"attach": {"sessionId": session}})).await;
        ts.until("attached").await;
    }
    // The client that stops reading: it attaches and never reads a frame again.
    let (mut stalled_reader, mut stalled_writer) = remote(&ws).await.split();
    let frames = [
        (
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {}}),
        ),
        (
            "session/attach",
            json!({"sessionId": session, "clientId": "stalled"}),
        ),
    ];
    for (n, (method, params)) in frames.into_iter().enumerate() {
        let message = Message::Request(Request {
            id: Id::Number(n as i64),
            method: method.to_owned(),
            params: Some(RawJson::to_raw(&params).unwrap()),
        });
        within("a frame", stalled_writer.write(&mut vec![message]))
            .await
            .unwrap();
    }

    let turns = 1000;
    let started = std::time::Instant::now();
    let mut records: Vec<Vec<String>> = vec![Vec::new(); 3];
    let mut cancelled = 0;
    let mut windows = Vec::new();
    let mut window = std::time::Instant::now();
    for turn in 0..turns {
        if turn > 0 && turn % 100 == 0 {
            windows.push(window.elapsed());
            window = std::time::Instant::now();
        }
        let asker = turn % 3;
        let cancels = turn % 10 == 0;
        let text = if cancels { "wait" } else { "stream 50 2000" };
        let id = clients[asker].prompt(&session, text).await;
        if cancels {
            clients[asker].waiting().await;
            let canceller = (asker + 1 + turn / 10 % 2) % 3;
            clients[canceller].cancel(&session).await;
        }
        let answer = clients[asker].answer(id).await;
        if cancels {
            assert_eq!(answer, "cancelled", "turn {turn}");
            cancelled += 1;
        } else {
            assert_eq!(answer, "end_turn", "turn {turn}");
        }
        for (i, client) in clients.iter_mut().enumerate() {
            if i != asker {
                client.turn_ended().await;
            }
            records[i].extend(client.chunks());
        }
    }
    windows.push(window.elapsed());
    let elapsed = started.elapsed();
    let expected = (turns - cancelled) * 50 + cancelled;
    for (i, record) in records.iter().enumerate() {
        assert_eq!(record.len(), expected, "client {i}");
        assert_eq!(record, &records[0], "client {i}'s record differs");
    }
    // In order, each chunk once.
    let chunks: Vec<&String> = records[0].iter().filter(|c| *c != "waiting").collect();
    for (n, chunk) in chunks.iter().enumerate() {
        let want: String = format!("chunk {}.....", n % 50 + 1)
            .chars()
            .take(12)
            .collect();
        assert_eq!(**chunk, want, "chunk {n}");
    }
    eprintln!(
        "{turns} turns in {elapsed:.2?}: {:.0} turns/s, {:.0} updates/s to each of the three clients",
        turns as f64 / elapsed.as_secs_f64(),
        expected as f64 / elapsed.as_secs_f64()
    );
    let rates: Vec<String> = windows
        .iter()
        .map(|w| format!("{:.0}", 100.0 / w.as_secs_f64()))
        .collect();
    eprintln!("turns/s by hundred turns: {}", rates.join(" "));

    // The stalled client, read at last: what it was sent before it was detached, then the
    // notice, then nothing more of the session.
    let mut noticed = false;
    let reading = async {
        while let Ok(Some(Inbound::Message(m))) = stalled_reader.read().await {
            if matches!(&m, Message::Notification(n) if n.method == "_sacp/detached") {
                noticed = true;
                break;
            }
        }
    };
    within("the stalled client's notice", reading).await;
    assert!(noticed, "the stalled client was not told it was detached");
    let mut after_notice = 0;
    while let Ok(Ok(Some(_))) =
        tokio::time::timeout(Duration::from_millis(300), stalled_reader.read()).await
    {
        after_notice += 1;
    }
    assert_eq!(after_notice, 0, "frames after the notice");
    for client in &mut clients[1..] {
        if let Client::Sdk(ts) = client {
            ts.send(json!({"exit": true})).await;
            let _ = within("client.mjs's end", ts.child.wait()).await;
        }
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
