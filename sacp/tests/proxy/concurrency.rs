//! Concurrent handlers: what a waiting handler must not hold up, cancellation of forwarded
//! requests however they were queued, and a notification handler awaiting a response while its
//! lane is full.

use std::sync::Arc;

use sacp::acp::{
    CancelNotification, PromptRequest, PromptResponse, RequestPermissionRequest,
    RequestPermissionResponse, SessionNotification,
};
use sacp::jsonrpc::{Error, Limits, RawJson};
use sacp::proxy::Cx;
use serde_json::{Value, json};
use tokio::sync::Notify;

use crate::common::*;

/// Holds every client `session/cancel` until the test opens the gate, then forwards it.
struct Gated {
    gate: Arc<Notify>,
}

#[sacp::proxy]
impl Gated {
    #[on_notification]
    async fn cancel(&self, n: CancelNotification, cx: &Cx) -> sacp::Result<()> {
        self.gate.notified().await;
        cx.successor().notify(n).await
    }
}

/// An agent whose `_ext/slow` runs until it is cancelled; says when it starts, counts drops.
fn slow_agent(started: Arc<Notify>, dropped: Arc<Tally>) -> Answer {
    struct OnDrop(Arc<Tally>);
    impl Drop for OnDrop {
        fn drop(&mut self) {
            self.0.add();
        }
    }
    Arc::new(move |method, _, _| {
        let (started, dropped) = (started.clone(), dropped.clone());
        Box::pin(async move {
            if method != "_ext/slow" {
                return Ok(RawJson::empty_object());
            }
            let _guard = OnDrop(dropped);
            started.notify_one();
            std::future::pending::<()>().await;
            Ok(RawJson::null())
        })
    })
}

#[tokio::test]
async fn a_request_that_queued_behind_a_handler_and_was_forwarded_is_cancelled_downstream() {
    let gate = Arc::new(Notify::new());
    let started = Arc::new(Notify::new());
    let dropped = Arc::new(Tally::default());
    let chain = chain(
        Gated { gate: gate.clone() },
        slow_agent(started.clone(), dropped.clone()),
        empty_answers(),
    );
    // The cancel handler holds the client lane; the request queues behind it.
    chain
        .notify_from_editor("session/cancel", r#"{"sessionId":"s1"}"#)
        .await;
    let pending = chain.conductor.request_raw("_ext/slow", Some(raw("{}")));
    // The proxy reads in order: once a notification from the agent, sent after the request,
    // has come through (the successor's lane is free), the request has been read — and waits.
    chain.notify_from_agent("_ext/marker", "{}").await;
    assert_eq!(
        chain.wait_for_lines(1).await,
        ["editor <- notification _ext/marker {}"],
        "the queued request went ahead of the handler it waits behind"
    );
    gate.notify_one();
    within(
        "the agent to start the forwarded request",
        started.notified(),
    )
    .await;
    pending.cancel();
    dropped
        .reaches(1, "the forwarded request to be cancelled at the agent")
        .await;
    assert_eq!(
        chain.transcript.lines(),
        [
            "editor <- notification _ext/marker {}",
            r#"agent <- notification session/cancel {"sessionId":"s1"}"#,
            "agent <- request _ext/slow {}",
        ]
    );
}

#[tokio::test]
async fn a_request_cancelled_while_it_queued_is_never_forwarded() {
    let gate = Arc::new(Notify::new());
    let chain = chain(
        Gated { gate: gate.clone() },
        slow_agent(Arc::new(Notify::new()), Arc::default()),
        empty_answers(),
    );
    chain
        .notify_from_editor("session/cancel", r#"{"sessionId":"s1"}"#)
        .await;
    let pending = chain.conductor.request_raw("_ext/slow", Some(raw("{}")));
    let id = pending.id().cloned().unwrap();
    // Cancel it explicitly and wait for the proxy's `-32800` (dropping `pending` would not
    // show it).
    chain
        .conductor
        .notify_raw(
            "$/cancel_request",
            Some(raw(&json!({ "requestId": id }).to_string())),
        )
        .await
        .unwrap();
    let err = within("the cancelled request", pending).await.unwrap_err();
    assert_eq!(err.code, -32800, "{err}");
    gate.notify_one();
    // What comes after it still goes through, and the cancelled request never did.
    chain.request_as_editor("_ext/after", "{}").await.unwrap();
    assert_eq!(
        chain.transcript.lines(),
        [
            r#"agent <- notification session/cancel {"sessionId":"s1"}"#,
            "agent <- request _ext/after {}",
        ]
    );
}

/// Holds each prompt until the agent answers, and answers the agent's permission requests by
/// asking the editor: the pattern that deadlocked with exclusive handlers.
struct Asker;

#[sacp::proxy]
impl Asker {
    #[on_request]
    async fn prompt(&self, req: PromptRequest, cx: &Cx) -> sacp::Result<PromptResponse> {
        cx.successor().request(req).await
    }

    #[on_request(from = agent)]
    async fn permission(
        &self,
        req: RequestPermissionRequest,
        cx: &Cx,
    ) -> sacp::Result<RequestPermissionResponse> {
        cx.client().request(req).await
    }
}

#[tokio::test]
async fn a_permission_request_is_answered_while_the_prompt_handler_awaits_the_agent() {
    let agent: Answer = Arc::new(|method, _, conn| {
        Box::pin(async move {
            assert_eq!(method, "session/prompt");
            // During the turn, the agent asks for permission through the proxy.
            let asked = sacp::protocol::envelope::wrap(
                "session/request_permission",
                Some(&raw(
                    r#"{"sessionId":"s1","toolCall":{"toolCallId":"t1"},"options":[{"optionId":"ok","name":"OK","kind":"allow_once"}]}"#,
                )),
            );
            let answer = conn
                .request_raw(sacp::protocol::envelope::SUCCESSOR_REQUEST, Some(asked))
                .await?;
            let answer: Value = answer.parse()?;
            assert_eq!(answer["outcome"]["optionId"], "ok");
            RawJson::from_string(r#"{"stopReason":"end_turn"}"#)
        })
    });
    let editor: Answer = Arc::new(|method, _, _| {
        Box::pin(async move {
            assert_eq!(method, "session/request_permission");
            RawJson::from_string(r#"{"outcome":{"outcome":"selected","optionId":"ok"}}"#)
        })
    });
    let chain = chain(Asker, agent, editor);
    let answer: Value = chain
        .request_as_editor("session/prompt", r#"{"sessionId":"s1","prompt":[]}"#)
        .await
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(answer, json!({"stopReason":"end_turn"}));
}

/// For one special update, asks the editor something before passing it on.
struct Inquisitive;

#[sacp::proxy]
impl Inquisitive {
    #[on_notification(from = agent)]
    async fn update(&self, n: SessionNotification, cx: &Cx) -> sacp::Result<()> {
        if n.session_id.0 == "ask" {
            cx.client()
                .request_raw("_ext/ask", Some(RawJson::empty_object()))
                .await?;
        }
        cx.client().notify(n).await
    }
}

#[tokio::test]
async fn a_notification_handler_awaiting_a_response_behind_a_full_lane_still_gets_it() {
    const FLOOD: usize = 2_000;
    let flooded = Arc::new(Tally::default());
    let agent: Answer = Arc::new({
        let flooded = flooded.clone();
        move |_, _, conn| {
            let flooded = flooded.clone();
            Box::pin(async move {
                let update = |session: &str, i: usize| {
                    format!(
                        r#"{{"sessionId":"{session}","update":{{"sessionUpdate":"agent_message_chunk","content":{{"type":"text","text":"{i} {}"}}}}}}"#,
                        "x".repeat(100)
                    )
                };
                agent_notifies(&conn, "session/update", &update("ask", 0)).await;
                for i in 1..=FLOOD {
                    agent_notifies(&conn, "session/update", &update("s1", i)).await;
                }
                flooded.add();
                RawJson::from_string(r#"{"stopReason":"end_turn"}"#)
            })
        }
    });
    // The editor answers once the whole flood is sent: queued in the proxy ahead of its
    // answer, past the lane's budget.
    let editor: Answer = Arc::new(move |_, _, _| {
        let flooded = flooded.clone();
        Box::pin(async move {
            flooded.reaches(1, "the agent's flood").await;
            Ok(RawJson::empty_object())
        })
    });
    // Lanes of 16 KiB: the flood fills the agent's lane while the handler waits.
    let limits = Limits::default().lane_bytes(16 * 1024);
    let chain = chain_with(Inquisitive, agent, editor, limits);
    chain
        .request_as_editor("session/prompt", r#"{"sessionId":"s1","prompt":[]}"#)
        .await
        .unwrap();
    let lines = chain.transcript.lines();
    assert_eq!(lines.len(), 3 + FLOOD, "{:?}", &lines[..3]);
    assert!(
        lines[1].starts_with("editor <- request _ext/ask"),
        "{}",
        lines[1]
    );
    assert!(lines[2].contains(r#""sessionId":"ask""#), "{}", lines[2]);
    for (i, line) in lines[3..].iter().enumerate() {
        assert!(
            line.contains(&format!(r#""text":"{} x"#, i + 1)),
            "update {} out of place: {line}",
            i + 1
        );
    }
}

#[tokio::test]
async fn a_proxy_answers_every_session_while_one_waits() {
    let agent: Answer = Arc::new(|method, params, _| {
        Box::pin(async move {
            if method != "session/prompt" {
                return Err(Error::method_not_found(&method));
            }
            let prompt: Value = params.unwrap().parse()?;
            if prompt["sessionId"] == "waits" {
                std::future::pending::<()>().await;
            }
            RawJson::from_string(r#"{"stopReason":"end_turn"}"#)
        })
    });
    let chain = chain(Asker, agent, empty_answers());
    let _waiting = chain.conductor.request_raw(
        "session/prompt",
        Some(raw(r#"{"sessionId":"waits","prompt":[]}"#)),
    );
    for i in 0..20 {
        let answer = chain
            .request_as_editor(
                "session/prompt",
                &format!(r#"{{"sessionId":"s{i}","prompt":[]}}"#),
            )
            .await
            .unwrap();
        assert_eq!(answer.as_str(), r#"{"stopReason":"end_turn"}"#);
    }
}

#[tokio::test]
async fn a_proxy_refuses_requests_past_its_limit_with_a_clear_error() {
    let agent: Answer = Arc::new(|_, _, _| {
        Box::pin(async {
            std::future::pending::<()>().await;
            Ok(RawJson::null())
        })
    });
    let limits = Limits::default().max_in_flight(4);
    let chain = chain_with(Asker, agent, empty_answers(), limits);
    let _held: Vec<_> = (0..4)
        .map(|_| chain.conductor.request_raw("_ext/hold", None))
        .collect();
    let err = chain
        .request_as_editor("_ext/one_more", "{}")
        .await
        .unwrap_err();
    assert_eq!(err.code, sacp::jsonrpc::code::SERVER_BUSY, "{err}");
    assert!(err.message.contains("too many requests in flight"), "{err}");
}
