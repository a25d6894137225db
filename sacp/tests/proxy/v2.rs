//! ACP v2 in the agent runtime, in-process: the runtime's own v2 `initialize` answer, a
//! `Dual` agent's routing by version, and what a v2 connection refuses before any handler.

use sacp::acp::{self, v2};
use sacp::agent::{Cx, Dual};
use sacp::jsonrpc::{Connection, Methods, RawJson, channel};
use serde_json::{Value, json};

use crate::common::*;

/// A v1 agent that says it is one.
struct One;

#[sacp::agent]
impl One {
    #[on_request]
    async fn prompt(&self, _: acp::PromptRequest, _: &Cx) -> sacp::Result<acp::PromptResponse> {
        Ok(acp::PromptResponse::new(acp::StopReason::EndTurn))
    }
}

/// A v2 agent, with no `initialize` handler: the runtime answers for it.
struct Two;

#[sacp::agent(protocol = 2)]
impl Two {
    #[on_request]
    async fn prompt(&self, req: v2::PromptRequest, cx: &Cx) -> sacp::Result<v2::PromptResponse> {
        assert_eq!(cx.protocol(), Some(2));
        cx.run_turn(req, |turn| async move {
            turn.say("from two").await?;
            Ok(v2::IdleStateUpdateKind::EndTurn)
        })
    }
}

async fn request(conn: &Connection, method: &str, params: Value) -> Result<Value, sacp::Error> {
    let params = RawJson::to_raw(&params).unwrap();
    within(method, conn.request_raw(method, Some(params)))
        .await
        .map(|r| r.parse().unwrap())
}

fn v2_init(version: u16) -> Value {
    json!({"protocolVersion": version, "info": {"name": "client", "version": "1"}})
}

#[tokio::test]
async fn the_runtime_answers_a_v2_initialize_with_the_agents_info() {
    let (ours, theirs) = channel();
    let _agent = sacp::agent::spawn(Two, theirs);
    let conn = Connection::builder().spawn(ours, Methods::new());
    // v2 requires the client's `info`.
    let bare = request(&conn, "initialize", json!({"protocolVersion": 2})).await;
    assert_eq!(bare.unwrap_err().code, -32602);
    let answer = request(&conn, "initialize", v2_init(2)).await.unwrap();
    assert_eq!(
        answer,
        json!({
            "protocolVersion": 2,
            "info": {"name": "sacp-sdk", "version": env!("CARGO_PKG_VERSION")},
            "capabilities": {},
        })
    );
    // `id: null` and v1's methods are refused before any handler; the connection goes on.
    let load = request(&conn, "session/load", json!({"sessionId": "s"})).await;
    assert_eq!(load.unwrap_err().code, -32601);
    let ack = request(
        &conn,
        "session/prompt",
        json!({"sessionId": "s", "prompt": [{"type": "text", "text": "hi"}]}),
    )
    .await
    .unwrap();
    assert!(ack["messageId"].is_string(), "{ack}");
}

#[tokio::test]
async fn a_dual_agent_serves_each_connection_with_the_side_it_chose() {
    for (requested, expected) in [(1, json!({"stopReason": "end_turn"})), (2, Value::Null)] {
        let (ours, theirs) = channel();
        let _agent = sacp::agent::spawn(Dual::new(One, Two), theirs);
        let conn = Connection::builder().spawn(ours, Methods::new());
        let params = if requested == 1 {
            json!({"protocolVersion": 1, "clientCapabilities": {}})
        } else {
            v2_init(2)
        };
        let answer = request(&conn, "initialize", params).await.unwrap();
        assert_eq!(answer["protocolVersion"], requested);
        let prompt = json!({"sessionId": "s", "prompt": [{"type": "text", "text": "hi"}]});
        let answer = request(&conn, "session/prompt", prompt).await.unwrap();
        if requested == 1 {
            assert_eq!(answer, expected);
        } else {
            // The v2 side acknowledged it.
            assert!(answer["messageId"].is_string(), "{answer}");
        }
    }
}

/// A typed v2 proxy that edits the agent's tool call updates: clears the title (v2's `null`)
/// and drops what it says of the status (absent: the editor keeps the status it has).
struct Clearer;

#[sacp::proxy(protocol = 2)]
impl Clearer {
    #[on_notification(from = agent)]
    async fn update(
        &self,
        mut n: v2::UpdateSessionNotification,
        cx: &sacp::proxy::Cx,
    ) -> sacp::Result<()> {
        if let v2::SessionUpdate::ToolCallUpdate(update) = &mut n.update {
            update.title = sacp::acp::Patch::Null;
            update.status = sacp::acp::Patch::Absent;
        }
        cx.client().notify(n).await
    }
}

#[tokio::test]
async fn a_typed_v2_proxy_clears_a_field_and_leaves_one_absent_as_written() {
    let chain = chain(Clearer, empty_answers(), empty_answers());
    chain
        .notify_from_agent(
            "session/update",
            r#"{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"t1","title":"reading","status":"in_progress","x":1}}"#,
        )
        .await;
    // `title` went to `null` (cleared), `status` went away (unchanged for the editor), `kind`
    // was never there and is not now, and what the type does not know stays as it came.
    assert_eq!(
        chain.wait_for_lines(1).await,
        [
            r#"editor <- notification session/update {"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"t1","title":null,"x":1}}"#
        ]
    );
    // A value read as `null` is `Patch::Null`, written back as it came.
    let read: v2::ToolCallUpdate =
        serde_json::from_str(r#"{"toolCallId":"t","title":null}"#).unwrap();
    assert!(read.title.is_null() && read.kind.is_absent());
    let made = v2::ToolCallUpdate::new("t".to_owned())
        .clear_title()
        .status(v2::ToolCallStatus::Completed);
    assert_eq!(
        serde_json::to_value(&made).unwrap(),
        json!({"toolCallId": "t", "title": null, "status": "completed"})
    );
}
