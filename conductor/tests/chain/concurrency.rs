//! Proxies whose handlers wait, several sessions at once, order under transformation, and
//! memory while the editor does not read: the handler model, through the real conductor.

use std::time::Duration;

use serde_json::json;
use tokio::io::AsyncWriteExt;

use crate::common::*;

#[tokio::test]
async fn a_proxy_awaiting_the_agent_answers_the_agents_permission_request_meanwhile() {
    // `audit-proxy` holds the prompt (awaiting the agent) while the agent asks it for
    // permission; it asks the editor itself, with the turn's words in the title.
    let mut editor = Editor::start(conductor(), &chain_of("audit-proxy", 1));
    let session = editor.open_session().await;
    let done = editor.prompt(&session, "permission").await;
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    let asked: Vec<_> = editor
        .transcript
        .iter()
        .filter(|l| l.starts_with("asked session/request_permission"))
        .collect();
    assert_eq!(asked.len(), 1, "{:#?}", editor.transcript);
    assert!(
        asked[0].contains(r#""title":"write a file (during «permission»)""#),
        "{}",
        asked[0]
    );
    assert!(
        editor
            .transcript
            .iter()
            .any(|l| l.contains(r#""text":"permission: allow""#)),
        "{:#?}",
        editor.transcript
    );
    editor.close_and_expect_a_clean_exit().await;
}

#[tokio::test]
async fn a_waiting_session_holds_up_no_other_and_its_cancel_gets_through() {
    for proxies in [0, 1, 3] {
        let mut editor = Editor::start(conductor(), &chain_of("audit-proxy", proxies));
        let first = editor.open_session().await;
        let second = editor.new_session().await;
        let waiting = editor.start_waiting(&first).await;

        let id = editor.send_prompt(&second, "meanwhile").await;
        let answers = editor.until_responses(std::slice::from_ref(&id)).await;
        assert_eq!(
            answers[0]["result"]["stopReason"], "end_turn",
            "{proxies} proxies: {answers:?}"
        );
        assert!(
            editor
                .transcript
                .iter()
                .any(|l| l.contains(r#""text":"meanwhile""#)),
            "{proxies} proxies: {:#?}",
            editor.transcript
        );

        editor
            .notify("session/cancel", json!({"sessionId": first}))
            .await;
        let done = editor.until_response(&waiting).await;
        assert_eq!(
            done["result"]["stopReason"], "cancelled",
            "{proxies} proxies"
        );
        editor.close_and_expect_a_clean_exit().await;
    }
}

#[tokio::test]
async fn a_hundred_sessions_prompt_at_once_through_three_prompt_handling_proxies() {
    const SESSIONS: usize = 100;
    let mut editor = Editor::start(conductor(), &chain_of("audit-proxy", 3));
    let mut sessions = vec![editor.open_session().await];
    while sessions.len() < SESSIONS {
        sessions.push(editor.new_session().await);
    }
    let mut ids = Vec::new();
    for session in &sessions {
        // Each turn says `waiting`, then waits for its cancel: one after another, the second
        // would never start.
        ids.push(editor.send_prompt(session, "wait").await);
    }
    let mut waiting = std::collections::HashSet::new();
    while waiting.len() < SESSIONS {
        let message = editor
            .next_message()
            .await
            .expect("the conductor is running");
        if message["params"]["update"]["content"]["text"]
            .as_str()
            .is_some_and(|text| text.contains("waiting"))
        {
            waiting.insert(message["params"]["sessionId"].as_str().unwrap().to_owned());
        }
    }
    for session in &sessions {
        editor
            .notify("session/cancel", json!({"sessionId": session}))
            .await;
    }
    let answers = editor.until_responses(&ids).await;
    for answer in &answers {
        assert_eq!(answer["result"]["stopReason"], "cancelled", "{answer}");
    }
    editor.close_and_expect_a_clean_exit().await;
}

#[tokio::test]
async fn ten_thousand_updates_transformed_while_the_prompt_handler_awaits_come_before_the_answer() {
    // `prefix-proxy` has a prompt handler that awaits the agent and an update handler that
    // rewrites each chunk: every rewritten chunk comes before the prompt's answer.
    let prefix = format!("{} '» '", quoted(&example("prefix-proxy")));
    let args = vec![
        "agent".to_owned(),
        prefix.clone(),
        passthrough(),
        prefix,
        agent(),
    ];
    let mut editor = Editor::start(conductor(), &args);
    let session = editor.open_session().await;
    let id = editor.send_prompt(&session, "stream 10000").await;
    expect_stream(&mut editor, &id, 10_000, "» » ").await;
    editor.close_and_expect_a_clean_exit().await;
}

/// Updates streamed while the editor reads nothing for a while (`benches/stalled.rs` runs 1M).
const STALLED_UPDATES: u32 = 50_000;
/// How long the editor reads nothing (the behaviour under test): long enough for every pipe and
/// queue of the chain to fill, which takes milliseconds.
const EDITOR_STALL: Duration = Duration::from_secs(1);
/// Every process of the chain stays under this.
const RSS_LIMIT_KIB: u64 = 64 * 1024;

#[tokio::test]
async fn an_editor_that_stops_reading_slows_the_chain_instead_of_filling_memory() {
    let mut editor = Editor::start(conductor(), &chain_of("prefix-proxy", 3));
    let session = editor.open_session().await;
    let id = editor
        .send_prompt(&session, &format!("stream {STALLED_UPDATES} 400"))
        .await;
    // Read nothing for a while: the agent must be held back, not buffered for.
    tokio::time::sleep(EDITOR_STALL).await;
    let stalled = peak_rss_kib(&editor.tag);
    expect_stream(&mut editor, &id, STALLED_UPDATES, "» » » ").await;
    let peaks = peak_rss_kib(&editor.tag);
    assert_eq!(peaks.len(), 5, "conductor, 3 proxies, agent: {peaks:?}");
    for (name, kib) in &peaks {
        assert!(
            *kib < RSS_LIMIT_KIB,
            "{name} peaked at {kib} KiB (while stalled: {stalled:?})"
        );
    }
    editor.close_and_expect_a_clean_exit().await;
}

#[tokio::test]
async fn a_chain_saturated_in_both_directions_at_once_finishes() {
    const EACH_WAY: u32 = 50_000;
    let mut editor = Editor::start(conductor(), &chain_of("prefix-proxy", 3));
    let session = editor.open_session().await;
    let id = editor
        .send_prompt(&session, &format!("stream {EACH_WAY} 200"))
        .await;
    // While the agent streams up, the editor floods the chain down, from a task of its own.
    let mut stdin = editor.take_stdin();
    let flood = tokio::spawn(async move {
        let padding = "x".repeat(400);
        let mut lines = Vec::new();
        for n in 0..EACH_WAY {
            let line = json!({
                "jsonrpc": "2.0",
                "method": "_sacp_test/flood",
                "params": {"n": n, "padding": padding},
            });
            lines.extend_from_slice(line.to_string().as_bytes());
            lines.push(b'\n');
            if lines.len() > 64 * 1024 {
                stdin.write_all(&lines).await?;
                lines.clear();
            }
        }
        stdin.write_all(&lines).await?;
        stdin.flush().await?;
        Ok::<_, std::io::Error>(stdin)
    });
    expect_stream(&mut editor, &id, EACH_WAY, "» » » ").await;
    let stdin = tokio::time::timeout(PATIENCE, flood)
        .await
        .expect("the flood was taken in")
        .unwrap()
        .expect("the conductor read the whole flood");
    drop(stdin);
    let (code, _) = editor.exit().await;
    assert_eq!(code, Some(0), "{}", editor.stderr());
    editor.assert_no_process_left().await;
}
