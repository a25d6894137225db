//! Default forwarding: what no handler takes goes on unchanged, both ways, in order.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use sacp::jsonrpc::{Error, RawJson};

use crate::common::*;

struct PassThrough;

#[sacp::proxy]
impl PassThrough {}

/// Params with spacing, key order and number forms a re-serialization would change.
const ODD: &str = r#"{"z":1.50, "a":[1e2,{"k":"\u00e9"}],"_meta":{"m":null}}"#;

#[tokio::test]
async fn unknown_extension_messages_pass_through_both_ways_byte_for_byte() {
    let agent: Answer = Arc::new(|method, params, _| {
        Box::pin(async move {
            assert_eq!(method, "_ext/ping");
            assert_eq!(params.unwrap().as_str(), ODD);
            RawJson::from_string(r#"{"pong" : 2.0}"#)
        })
    });
    let editor: Answer = Arc::new(|method, params, _| {
        Box::pin(async move {
            assert_eq!(method, "_ext/ask");
            assert_eq!(params.unwrap().as_str(), ODD);
            RawJson::from_string(r#"[ "yes" ]"#)
        })
    });
    let chain = chain(PassThrough, agent, editor);

    let answer = chain.request_as_editor("_ext/ping", ODD).await.unwrap();
    assert_eq!(answer.as_str(), r#"{"pong" : 2.0}"#);
    chain.notify_from_editor("_ext/note", ODD).await;
    let answer = chain.request_as_agent("_ext/ask", ODD).await.unwrap();
    assert_eq!(answer.as_str(), r#"[ "yes" ]"#);
    chain.notify_from_agent("_ext/event", ODD).await;

    let lines = chain.wait_for_lines(4).await;
    assert_eq!(
        lines,
        [
            format!("agent <- request _ext/ping {ODD}"),
            format!("agent <- notification _ext/note {ODD}"),
            format!("editor <- request _ext/ask {ODD}"),
            format!("editor <- notification _ext/event {ODD}"),
        ]
    );
}

#[tokio::test]
async fn errors_come_back_with_their_code_message_and_data() {
    let agent: Answer = Arc::new(|_, _, _| {
        Box::pin(async {
            Err(Error::new(-32000, "Authentication required")
                .with_data(serde_json::json!({"retry": false})))
        })
    });
    let chain = chain(PassThrough, agent, empty_answers());
    let err = chain
        .request_as_editor("session/new", r#"{"cwd":"/","mcpServers":[]}"#)
        .await
        .unwrap_err();
    assert_eq!(err.code, -32000);
    assert_eq!(err.message, "Authentication required");
    assert_eq!(err.data, Some(serde_json::json!({"retry": false})));
}

#[tokio::test]
async fn updates_streamed_before_a_response_reach_the_editor_first() {
    const UPDATES: usize = 2_000;
    let agent: Answer = Arc::new(|_, _, conn| {
        Box::pin(async move {
            for i in 0..UPDATES {
                agent_notifies(
                    &conn,
                    "session/update",
                    &format!(
                        r#"{{"sessionId":"s1","update":{{"sessionUpdate":"agent_message_chunk","content":{{"type":"text","text":"{i}"}}}}}}"#
                    ),
                )
                .await;
            }
            RawJson::from_string(r#"{"stopReason":"end_turn"}"#)
        })
    });
    let chain = chain(PassThrough, agent, empty_answers());
    chain
        .request_as_editor("session/prompt", r#"{"sessionId":"s1","prompt":[]}"#)
        .await
        .unwrap();
    // The response has arrived: every update must already be in the transcript, in order.
    let lines = chain.transcript.lines();
    assert_eq!(lines.len(), 1 + UPDATES, "{:?}", chain.transcript);
    for (i, line) in lines[1..].iter().enumerate() {
        assert!(
            line.starts_with("editor <- notification session/update")
                && line.contains(&format!(r#""text":"{i}""#)),
            "update {i} is out of place: {line}"
        );
    }
}

/// Counts the agent's requests whose work was dropped before finishing.
struct DroppedCounter(Arc<AtomicUsize>);

impl Drop for DroppedCounter {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[tokio::test]
async fn cancelling_a_forwarded_request_cancels_it_downstream() {
    let started = Arc::new(tokio::sync::Notify::new());
    let dropped = Arc::new(AtomicUsize::new(0));
    let agent: Answer = {
        let (started, dropped) = (started.clone(), dropped.clone());
        Arc::new(move |method, _, _| {
            let (started, dropped) = (started.clone(), dropped.clone());
            Box::pin(async move {
                if method != "_ext/slow" {
                    return Ok(RawJson::empty_object());
                }
                let _guard = DroppedCounter(dropped);
                started.notify_one();
                std::future::pending::<()>().await;
                Ok(RawJson::null())
            })
        })
    };
    let chain = chain(PassThrough, agent, empty_answers());
    let pending = chain.conductor.request_raw("_ext/slow", Some(raw("{}")));
    within("the agent to start", started.notified()).await;
    pending.cancel();
    // The editor's `$/cancel_request` reaches the proxy, which cancels its wrapped request; the
    // stand-in's connection then drops the agent's work.
    within("the agent's work to be cancelled", async {
        while dropped.load(Ordering::SeqCst) == 0 {
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        }
    })
    .await;
    let answer = chain.request_as_editor("_ext/after", "{}").await.unwrap();
    assert_eq!(answer.as_str(), "{}", "the chain goes on working");
}

#[tokio::test]
async fn a_wrapped_message_with_scalar_params_is_refused_never_passed_on() {
    let chain = chain(PassThrough, empty_answers(), empty_answers());
    for params in ["-1", r#""text""#, "true"] {
        let wrapped = raw(&format!(
            r#"{{"method":"session/update","params":{params}}}"#
        ));
        let err = within(
            "the refusal",
            chain.conductor.request_raw(
                sacp::protocol::envelope::SUCCESSOR_REQUEST,
                Some(wrapped.clone()),
            ),
        )
        .await
        .unwrap_err();
        assert_eq!(
            err.code,
            sacp::jsonrpc::code::INVALID_PARAMS,
            "{params}: {err}"
        );
        chain
            .conductor
            .notify_raw(
                sacp::protocol::envelope::SUCCESSOR_NOTIFICATION,
                Some(wrapped),
            )
            .await
            .unwrap();
    }
    // What comes after still goes through; nothing of the above ever did.
    chain.notify_from_agent("_ext/after", "{}").await;
    assert_eq!(
        chain.wait_for_lines(1).await,
        ["editor <- notification _ext/after {}"]
    );
}
