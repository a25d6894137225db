//! The points of ACP's conformance kit (acp-tck, v1) that the test agent once failed, each for
//! the test agent alone and for a chain in front of it: `session/close` ends a prompt in flight
//! `cancelled`, `session/list` keeps to its `cwd`, `initialize` says who answers (`agentInfo`).

use serde_json::json;

use crate::common::*;

/// The test agent alone, and `conductor agent passthrough-proxy test-agent`.
fn both() -> [(&'static str, Editor); 2] {
    [
        ("the test agent", Editor::start(&agent(), &[])),
        ("a chain", Editor::start(conductor(), &flat_chain(1))),
    ]
}

#[tokio::test]
async fn session_close_answers_the_prompt_in_flight_cancelled() {
    for (who, mut editor) in both() {
        let session = editor.open_session().await;
        // A turn that waits for a cancel, and one that waits for nothing but time.
        let waiting = editor.start_waiting(&session).await;
        let other = editor.new_session().await;
        let sleeping = editor.send_prompt(&other, "sleep 600000").await;
        let closed = editor
            .send_request("session/close", json!({"sessionId": session}))
            .await;
        let closed_too = editor
            .send_request("session/close", json!({"sessionId": other}))
            .await;
        let ids = [waiting, sleeping, closed, closed_too];
        // In the order they came, which the protocol leaves open: each found by its id.
        let answers = editor.until_responses(&ids).await;
        let answer = |id: &serde_json::Value| {
            answers
                .iter()
                .find(|a| &a["id"] == id)
                .unwrap_or_else(|| panic!("{who}: no answer to {id}"))
        };
        for prompt in ids[..2].iter().map(answer) {
            assert_eq!(
                prompt["result"]["stopReason"], "cancelled",
                "{who}: {prompt}"
            );
        }
        for close in ids[2..].iter().map(answer) {
            assert!(close["result"].is_object(), "{who}: {close}");
        }
        editor.close_and_expect_a_clean_exit().await;
    }
}

#[tokio::test]
async fn session_list_keeps_to_its_cwd() {
    for (who, mut editor) in both() {
        // `open_session` creates its session in /tmp.
        let session = editor.open_session().await;
        let none = editor
            .request("session/list", json!({"cwd": "/no/such/workspace"}))
            .await;
        assert_eq!(none["result"]["sessions"], json!([]), "{who}: {none}");
        let tmp = editor.request("session/list", json!({"cwd": "/tmp"})).await;
        assert_eq!(
            tmp["result"]["sessions"],
            json!([{"sessionId": session, "cwd": "/tmp"}]),
            "{who}: {tmp}"
        );
        let all = editor.request("session/list", json!({})).await;
        assert_eq!(
            all["result"]["sessions"], tmp["result"]["sessions"],
            "{who}"
        );
        editor.close_and_expect_a_clean_exit().await;
    }
}

#[tokio::test]
async fn initialize_says_who_answers() {
    for (who, mut editor) in both() {
        let init = editor
            .request("initialize", json!({"protocolVersion": 1}))
            .await;
        let info = &init["result"]["agentInfo"];
        assert_eq!(info["name"], "test-agent", "{who}: {init}");
        assert!(
            info["version"].as_str().is_some_and(|v| !v.is_empty()),
            "{who}: {init}"
        );
        editor.close_and_expect_a_clean_exit().await;
    }
}
