//! Many editors on one session for a long while (see `attach.rs`): three clients taking turns
//! for a thousand turns keep one record, and a client that stops reading is detached.

use std::time::Duration;

use sacp::jsonrpc::{
    Id, Inbound, Message, MessageReader, MessageWriter, RawJson, Request, Transport,
};
use sacp::testing::within;
use serde_json::{Value, json};

use crate::attach::{initialize, sharing, turn_ended};
use crate::attach_sdk::Ts;
use crate::raw::{Raw, said};
use crate::remote::remote;

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
