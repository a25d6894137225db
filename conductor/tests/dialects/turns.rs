//! A turn is the session's, whoever began it (`conductor agent --listen`): a prompt's answer
//! goes to the connection that sent it while that connection lives, whatever it attached or
//! detached meanwhile; one turn runs at a time: a prompt while another attached client's turn
//! runs is refused (`-32005`), one while the client's own or an orphaned turn runs waits for
//! it, and `session/cancel` from any controller ends the running turn, orphaned or not.

use sacp::jsonrpc::Message;
use serde_json::{Value, json};

use crate::common::*;
use crate::raw::{Raw, params_of};
use crate::remote::{Listening, remote};

async fn listening() -> Listening {
    crate::across_machines::conductor_listening(&[], &[agent()]).await
}

async fn client(name: &'static str, url: &str) -> Raw {
    let mut client = Raw::new(name, remote(url).await);
    let init = json!({"protocolVersion": 1, "clientCapabilities": {},
        "clientInfo": {"name": name, "version": "1.0"}});
    client.request("initialize", init).await.unwrap();
    client
}

fn prompt_params(session: &str, text: &str) -> Value {
    json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]})
}

/// Until `client` says the agent is waiting (its `wait` turn began).
async fn waiting(client: &mut Raw) {
    client
        .until("the agent to wait", |m| {
            matches!(m, Message::Notification(n) if n.method == "session/update"
                && params_of(n.params.as_ref())["update"]["content"]["text"] == "waiting")
        })
        .await;
}

async fn turn_ended(client: &mut Raw) -> Value {
    match client
        .until(
            "_sacp/turn_ended",
            |m| matches!(m, Message::Notification(n) if n.method == "_sacp/turn_ended"),
        )
        .await
    {
        Message::Notification(n) => params_of(n.params.as_ref()),
        _ => unreachable!(),
    }
}

/// A prompter that detaches is still answered its prompt's stop reason on its connection; one
/// that detached and attached again with `session/load` is answered, not told
/// `_sacp/turn_ended` as though another client had prompted.
#[tokio::test]
async fn a_prompters_answer_goes_to_its_connection_whatever_it_attached_or_detached() {
    let server = listening().await;
    let url = server.ws();
    let mut a = client("a", &url).await;
    let new = json!({"cwd": "/tmp", "mcpServers": []});
    let session = a.request("session/new", new).await.unwrap()["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();

    // Detached: B, attached, cancels; A's prompt is answered `cancelled`.
    let asked = a
        .ask("session/prompt", prompt_params(&session, "wait"))
        .await;
    waiting(&mut a).await;
    let mut b = client("b", &url).await;
    b.request("session/attach", json!({"sessionId": session}))
        .await
        .unwrap();
    let detached = a
        .request("session/detach", json!({"sessionId": session}))
        .await;
    assert_eq!(detached.unwrap()["status"], "detached");
    b.notify("session/cancel", json!({"sessionId": session}))
        .await;
    let answer = a.answer_to(&asked).await;
    assert_eq!(answer, Ok(json!({"stopReason": "cancelled"})));
    assert_eq!(turn_ended(&mut b).await["stopReason"], "cancelled");

    // Detached, then attached again on the same connection: the answer, no `turn_ended`.
    a.request("session/attach", json!({"sessionId": session}))
        .await
        .unwrap();
    let asked = a
        .ask("session/prompt", prompt_params(&session, "wait"))
        .await;
    waiting(&mut a).await;
    a.request("session/detach", json!({"sessionId": session}))
        .await
        .unwrap();
    let load = json!({"sessionId": session, "cwd": "/tmp", "mcpServers": []});
    a.request("session/load", load).await.unwrap();
    a.clear();
    b.notify("session/cancel", json!({"sessionId": session}))
        .await;
    let answer = a.answer_to(&asked).await;
    assert_eq!(answer, Ok(json!({"stopReason": "cancelled"})));
    assert_eq!(turn_ended(&mut b).await["stopReason"], "cancelled");
    // Its next turn shows it had nothing else: no `_sacp/turn_ended` of its own turn came.
    let next = a
        .request("session/prompt", prompt_params(&session, "stream 1"))
        .await;
    assert_eq!(next, Ok(json!({"stopReason": "end_turn"})));
    assert!(
        !a.received("_sacp/turn_ended"),
        "told its own turn ended by another"
    );
}

/// A's turn runs on after A's connection was cut; B, who took the session back, prompts: its
/// prompt waits for A's turn rather than reaching the agent beside it, and C's
/// `session/cancel` ends A's turn, orphaned as it is; then B's prompt runs. A client's own
/// second prompt waits for its first turn too, and its cancel withdraws it.
#[tokio::test]
async fn a_prompt_while_an_orphaned_turn_runs_waits_for_it_and_any_controller_cancels_it() {
    // Its log says when A's cut connection has left the session.
    let server = crate::across_machines::conductor_listening_in(
        &[],
        &[agent()],
        &[("RUST_LOG", "sacp_conductor=info")],
    )
    .await;
    let url = server.ws();
    let mut a = client("a", &url).await;
    let new = json!({"cwd": "/tmp", "mcpServers": []});
    let session = a.request("session/new", new).await.unwrap()["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    a.ask("session/prompt", prompt_params(&session, "wait"))
        .await;
    waiting(&mut a).await;
    drop(a);
    server.log.until("detached: no controller left").await;

    let load = json!({"sessionId": session, "cwd": "/tmp", "mcpServers": []});
    let mut b = client("b", &url).await;
    b.request("session/load", load.clone()).await.unwrap();
    let mut c = client("c", &url).await;
    c.request("session/load", load).await.unwrap();
    b.clear();
    let queued = b
        .ask("session/prompt", prompt_params(&session, "stream 2"))
        .await;
    c.notify("session/cancel", json!({"sessionId": session}))
        .await;
    // A's turn ends cancelled; only then does B's run, whole.
    assert_eq!(turn_ended(&mut b).await["stopReason"], "cancelled");
    assert_eq!(
        b.answer_to(&queued).await,
        Ok(json!({"stopReason": "end_turn"}))
    );
    let said: Vec<String> = b
        .updates()
        .iter()
        .filter_map(|u| crate::raw::said(u).map(str::to_owned))
        .collect();
    assert_eq!(said, ["chunk 1", "chunk 2"]);

    // One turn at a time for a client's own prompts too: the second waits, and the cancel
    // ends the first and withdraws the second.
    let wait = b
        .ask("session/prompt", prompt_params(&session, "wait"))
        .await;
    waiting(&mut b).await;
    let second = b
        .ask("session/prompt", prompt_params(&session, "stream 1"))
        .await;
    b.notify("session/cancel", json!({"sessionId": session}))
        .await;
    assert_eq!(
        b.answer_to(&wait).await,
        Ok(json!({"stopReason": "cancelled"}))
    );
    assert_eq!(
        b.answer_to(&second).await,
        Ok(json!({"stopReason": "cancelled"}))
    );
    // While B's turn runs, C (attached, another client) is refused.
    let wait = b
        .ask("session/prompt", prompt_params(&session, "wait"))
        .await;
    waiting(&mut b).await;
    let busy = c
        .request("session/prompt", prompt_params(&session, "stream 1"))
        .await
        .unwrap_err();
    assert_eq!(busy["code"], -32005, "{busy}");
    c.notify("session/cancel", json!({"sessionId": session}))
        .await;
    assert_eq!(
        b.answer_to(&wait).await,
        Ok(json!({"stopReason": "cancelled"}))
    );
    let next = c
        .request("session/prompt", prompt_params(&session, "stream 1"))
        .await;
    assert_eq!(next, Ok(json!({"stopReason": "end_turn"})));
}
