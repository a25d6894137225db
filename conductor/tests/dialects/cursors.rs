//! Replay from where a client stopped (`conductor agent --listen`): a client that asked for
//! positions gets each update's in its `_meta`; cut in the middle of a 10,000-update turn, it
//! comes back with the cursor of the last update it read and gets every later update once, in
//! order, and none it had — with ACP v2's `session/resume` `replayFrom`, and with v1's
//! `session/load` and the cursor in `_meta`. `{"type": "start"}` replays all; a cursor of an
//! unknown type, of another life of the session or past its end is `-32602`.

use sacp::jsonrpc::Message;
use serde_json::{Value, json};

use crate::common::*;
use crate::raw::{Raw, params_of, said};
use crate::remote::remote;

const UPDATES: usize = 10_000;
/// How many updates the first client reads before its connection is cut.
const READ: usize = 3_000;

async fn client(name: &'static str, url: &str, v2: bool) -> Raw {
    let mut client = Raw::new(name, remote(url).await);
    let positions = json!({"_meta": {"sacp": {"positions": true}}});
    let init = if v2 {
        json!({"protocolVersion": 2, "info": {"name": name, "version": "1.0"},
            "capabilities": positions})
    } else {
        json!({"protocolVersion": 1, "clientInfo": {"name": name, "version": "1.0"},
            "clientCapabilities": positions})
    };
    client.request("initialize", init).await.unwrap();
    client
}

fn is_chunk(m: &Message) -> bool {
    matches!(m, Message::Notification(n) if n.method == "session/update"
        && said(&params_of(n.params.as_ref())).is_some())
}

/// The params that take `session` back from `cursor`: v2's `session/resume`, v1's
/// `session/load` with the cursor in `_meta`.
fn resume(v2: bool, session: &str, cursor: Value) -> (&'static str, Value) {
    if v2 {
        let params = json!({"sessionId": session, "cwd": "/tmp", "replayFrom": cursor});
        ("session/resume", params)
    } else {
        let params = json!({"sessionId": session, "cwd": "/tmp", "mcpServers": [],
            "_meta": {"sacp": {"replayFrom": cursor}}});
        ("session/load", params)
    }
}

/// Until the turn's end reaches `client`: v1's `_sacp/turn_ended`, v2's idle `state_update`.
async fn turn_end(client: &mut Raw, v2: bool) {
    client
        .until("the turn's end", |m| match m {
            Message::Notification(n) if v2 => {
                let p = params_of(n.params.as_ref());
                p["update"]["sessionUpdate"] == "state_update" && p["update"]["state"] == "idle"
            }
            Message::Notification(n) => n.method == "_sacp/turn_ended",
            _ => false,
        })
        .await;
}

fn position(update: &Value) -> (u64, u64) {
    let text = update["_meta"]["sacp"]["position"]
        .as_str()
        .unwrap_or_else(|| panic!("no position in {update}"));
    let (life, seq) = text.split_once('.').unwrap();
    (u64::from_str_radix(life, 16).unwrap(), seq.parse().unwrap())
}

/// Under v2 the last update before the answer to `id` is the session's current
/// `state_update` (the v2 schema's rule for `session/resume`); under v1 there is none.
fn answered_after_the_state(client: &Raw, id: &sacp::jsonrpc::Id, v2: bool) {
    let messages = client.messages();
    let answer = messages
        .iter()
        .position(|m| matches!(m, Message::Response(r) if &r.id == id))
        .unwrap();
    let state = |m: &Message| match m {
        Message::Notification(n) if n.method == "session/update" => {
            params_of(n.params.as_ref())["update"]["sessionUpdate"] == "state_update"
        }
        _ => false,
    };
    if v2 {
        let before = messages[..answer].last().map(state);
        assert_eq!(before, Some(true), "{:?}", messages[..answer].last());
    } else {
        assert!(!messages.iter().any(state));
    }
}

async fn cut_in_a_long_turn_and_resume(v2: bool) {
    let agent = if v2 {
        format!("{} --protocol 2", quoted(&agent()))
    } else {
        agent()
    };
    let server =
        crate::across_machines::conductor_listening(&["--session-buffer", "16MiB"], &[agent]).await;
    let url = server.ws();
    let mut a = client("a", &url, v2).await;
    let new = json!({"cwd": "/tmp", "mcpServers": []});
    let session = a.request("session/new", new).await.unwrap()["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let text = format!("stream {UPDATES}");
    let prompt = json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]});
    a.ask("session/prompt", prompt).await;
    let mut had = Vec::new();
    let mut last = None;
    while had.len() < READ {
        if let Message::Notification(n) = a.until("a chunk", is_chunk).await {
            let update = params_of(n.params.as_ref());
            had.push(said(&update).unwrap().to_owned());
            last = Some(update["_meta"]["sacp"]["position"].clone());
        }
    }
    let last = last.unwrap();
    drop(a);

    // From the last position read: the rest, once, in order.
    let mut b = client("b", &url, v2).await;
    let cursor = json!({"type": "_sacp/after", "position": last});
    let (method, params) = resume(v2, &session, cursor);
    let id = b.ask(method, params).await;
    b.answer_to(&id).await.unwrap();
    answered_after_the_state(&b, &id, v2);
    turn_end(&mut b, v2).await;
    let updates = b.updates();
    let rest: Vec<String> = updates
        .iter()
        .filter_map(|u| said(u).map(str::to_owned))
        .collect();
    let all: Vec<String> = (1..=UPDATES).map(|i| format!("chunk {i}")).collect();
    assert_eq!(rest.len(), UPDATES - READ, "v2: {v2}");
    assert_eq!([had, rest].concat(), all, "v2: {v2}");
    let (life, after) = position(&json!({"_meta": {"sacp": {"position": last}}}));
    // Every update has its position but v2's snapshot of the state before the answer (no
    // entry of the record: it names none).
    let entries: Vec<&Value> = updates
        .iter()
        .filter(|u| u["update"]["sessionUpdate"] != "state_update" || !u["_meta"]["sacp"].is_null())
        .collect();
    assert_eq!(entries.len(), updates.len() - usize::from(v2));
    let seqs: Vec<u64> = entries.iter().map(|u| position(u).1).collect();
    assert!(
        seqs.iter().all(|s| *s > after),
        "replayed from before the cursor"
    );
    assert!(
        seqs.windows(2).all(|w| w[0] < w[1]),
        "out of order: {seqs:?}"
    );
    assert!(entries.iter().all(|u| position(u).0 == life));

    // From the start: all of it.
    let mut c = client("c", &url, v2).await;
    let (_, params) = resume(true, &session, json!({"type": "start"}));
    let id = c.ask("session/resume", params).await;
    c.answer_to(&id).await.unwrap();
    answered_after_the_state(&c, &id, v2);
    let replayed: Vec<String> = c
        .updates()
        .iter()
        .filter_map(|u| said(u).map(str::to_owned))
        .collect();
    assert_eq!(replayed, all, "v2: {v2}");

    // Refused, with nothing replayed in its place.
    let mut d = client("d", &url, v2).await;
    let end = life ^ 1;
    for cursor in [
        json!({"type": "_unknown"}),
        json!({"type": "later"}),
        json!({"type": "_sacp/after", "position": format!("{end:x}.1")}),
        json!({"type": "_sacp/after", "position": format!("{life:x}.99999999")}),
        json!({"type": "_sacp/after", "position": 12}),
    ] {
        let (method, params) = resume(v2, &session, cursor.clone());
        let refused = d.request(method, params).await.unwrap_err();
        assert_eq!(refused["code"], -32602, "{cursor}: {refused}");
    }
    assert!(d.updates().is_empty(), "{:?}", d.updates().first());
}

#[tokio::test]
async fn a_v1_client_cut_in_a_long_turn_loads_from_its_cursor_and_gets_the_rest_once() {
    cut_in_a_long_turn_and_resume(false).await;
}

#[tokio::test]
async fn a_v2_client_cut_in_a_long_turn_resumes_from_its_cursor_and_gets_the_rest_once() {
    cut_in_a_long_turn_and_resume(true).await;
}
