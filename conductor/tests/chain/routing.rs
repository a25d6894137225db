//! Chains that work: transcripts, transformation, agent-to-client requests, order, nesting.

use serde_json::json;

use crate::common::*;

/// The editor talking to the test agent directly, as a chain shows it: the same, but for the
/// one capability every chain adds to the agent's (`_meta.sacp.history`, sessions created
/// with a history, which the conductor adapts to any agent).
async fn direct_transcript() -> Vec<String> {
    let mut editor = Editor::start(&agent(), &[]);
    let mut lines = standard_script(&mut editor).await;
    let answer = lines
        .iter_mut()
        .find(|l| l.starts_with("response result {\"agentCapabilities\""))
        .expect("the initialize answer");
    let mut result: serde_json::Value =
        serde_json::from_str(answer.strip_prefix("response result ").unwrap()).unwrap();
    assert!(result["agentCapabilities"]["_meta"].is_null(), "{answer}");
    result["agentCapabilities"]["_meta"] = json!({"sacp": {"history": true}});
    *answer = format!("response result {result}");
    lines
}

#[tokio::test]
async fn chains_of_0_1_and_3_pass_through_proxies_look_like_the_agent_itself() {
    let direct = direct_transcript().await;
    assert!(
        direct.iter().any(|l| l.contains("permission: allow"))
            && direct
                .iter()
                .any(|l| l.contains("read: hello from the editor")),
        "{direct:#?}"
    );
    for proxies in [0, 1, 3] {
        let mut editor = Editor::start(conductor(), &flat_chain(proxies));
        let through = standard_script(&mut editor).await;
        assert_eq!(
            through,
            direct,
            "{proxies} proxies\n--- stderr ---\n{}",
            editor.stderr()
        );
        editor.close_and_expect_a_clean_exit().await;
    }
}

#[tokio::test]
async fn agent_requests_travel_up_through_three_proxies_and_the_answers_come_back() {
    let mut editor = Editor::start(conductor(), &flat_chain(3));
    editor.file = Some((
        "/workspace/notes.txt".into(),
        "line one\nline two".to_owned(),
    ));
    let session = editor.open_session().await;
    let done = editor.prompt(&session, "permission").await;
    assert_eq!(done["result"]["stopReason"], "end_turn");
    let done = editor.prompt(&session, "read /workspace/notes.txt").await;
    assert_eq!(done["result"]["stopReason"], "end_turn");
    let asked: Vec<_> = editor
        .transcript
        .iter()
        .filter(|l| l.starts_with("asked "))
        .collect();
    assert_eq!(asked.len(), 2, "{:#?}", editor.transcript);
    assert!(asked[0].starts_with("asked session/request_permission {"));
    assert!(asked[1].contains(r#""path":"/workspace/notes.txt""#));
    let said: Vec<_> = editor
        .transcript
        .iter()
        .filter(|l| l.contains("agent_message_chunk"))
        .collect();
    assert!(said[0].contains("permission: allow"), "{said:#?}");
    assert!(said[1].contains(r#"read: line one\nline two"#), "{said:#?}");
}

#[tokio::test]
async fn a_transforming_proxy_changes_exactly_the_agents_text() {
    let direct = direct_transcript().await;
    let prefix = format!("{} '>> '", quoted(&example("prefix-proxy")));
    let args = vec![
        "agent".to_owned(),
        passthrough(),
        prefix,
        passthrough(),
        agent(),
    ];
    let mut editor = Editor::start(conductor(), &args);
    let through = standard_script(&mut editor).await;
    let expected: Vec<String> = direct
        .iter()
        .map(|line| {
            if line.contains(r#""sessionUpdate":"agent_message_chunk""#) {
                line.replace(r#""text":""#, r#""text":">> "#)
            } else {
                line.clone()
            }
        })
        .collect();
    assert_ne!(expected, direct);
    assert_eq!(through, expected, "{}", editor.stderr());
}

#[tokio::test]
async fn ten_thousand_updates_through_three_proxies_arrive_in_order_before_the_answer() {
    let mut editor = Editor::start(conductor(), &flat_chain(3));
    let session = editor.open_session().await;
    let id = editor.send_prompt(&session, "stream 10000").await;
    expect_stream(&mut editor, &id, 10_000, "").await;
}

#[tokio::test]
async fn a_nested_conductor_behaves_like_the_flat_chain() {
    let direct = direct_transcript().await;
    let inner = format!(
        "{} agent {} {}",
        quoted(conductor()),
        quoted(&passthrough()),
        quoted(&passthrough())
    );
    let args = vec!["agent".to_owned(), inner, passthrough(), agent()];
    let mut editor = Editor::start(conductor(), &args);
    let through = standard_script(&mut editor).await;
    assert_eq!(through, direct, "{}", editor.stderr());

    // Ordering holds across the nested hops too.
    let session = editor.new_session().await;
    let done = editor.prompt(&session, "stream 2000").await;
    assert_eq!(done["result"]["stopReason"], "end_turn");
    let chunks = editor
        .transcript
        .iter()
        .filter(|l| l.contains(r#""text":"chunk "#))
        .count();
    assert_eq!(chunks, 5 + 2000);

    editor.close_and_expect_a_clean_exit().await;
}

#[tokio::test]
async fn a_conductor_with_no_components_is_a_transparent_proxy() {
    let direct = direct_transcript().await;
    let inner = format!("{} agent", quoted(conductor()));
    let args = vec!["agent".to_owned(), passthrough(), inner, agent()];
    let mut editor = Editor::start(conductor(), &args);
    let through = standard_script(&mut editor).await;
    assert_eq!(through, direct, "{}", editor.stderr());
}

#[tokio::test]
async fn cancellation_reaches_the_agent_both_ways() {
    let mut editor = Editor::start(conductor(), &flat_chain(3));
    let session = editor.open_session().await;

    // `session/cancel` is an ordinary notification.
    let id = editor.start_waiting(&session).await;
    editor
        .notify("session/cancel", json!({"sessionId": session}))
        .await;
    let done = editor.until_response(&id).await;
    assert_eq!(done["result"]["stopReason"], "cancelled");

    // `$/cancel_request` is hop-local: each hop cancels the request it caused.
    let id = editor.start_waiting(&session).await;
    editor
        .notify("$/cancel_request", json!({"requestId": id}))
        .await;
    let done = editor.until_response(&id).await;
    assert_eq!(done["error"]["code"], -32800, "{done}");

    // The chain still works.
    let done = editor.prompt(&session, "after").await;
    assert_eq!(done["result"]["stopReason"], "end_turn");
}
