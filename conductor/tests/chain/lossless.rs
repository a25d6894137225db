//! Typed is lossless, through real processes: the test agent's `future` keyword sends what a
//! newer agent would (fields this schema lacks, explicit `null`s, an update of an unknown kind,
//! an answer with an unknown field). Through `prefix-proxy` — a typed proxy that handles the
//! prompt and every update, and rewrites text chunks — every line reaches the editor as the
//! agent wrote it, except the chunk's text; through a pass-through, byte for byte.

use sacp_examples::test_agent::{FUTURE, FUTURE_ANSWER};
use serde_json::Value;

use crate::common::*;

/// The lines the editor got for a `future` prompt: the three updates and the answer.
async fn future_turn(args: &[String]) -> (String, Vec<String>, String) {
    let mut editor = Editor::start(conductor(), args);
    let session = editor.open_session().await;
    let id = editor.send_prompt(&session, "future").await;
    let mut updates = Vec::new();
    loop {
        let line = editor.next_line().await.expect("the chain ended");
        let message: Value = serde_json::from_str(&line).unwrap();
        if message.get("method").is_some() {
            updates.push(line);
            continue;
        }
        assert_eq!(message["id"], id, "{line}");
        editor.close_and_expect_a_clean_exit().await;
        return (session, updates, line);
    }
}

/// `{"jsonrpc":"2.0","method":"session/update","params":P}` with `P` as the agent wrote it.
fn expected(update: &str, session: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","method":"session/update","params":{}}}"#,
        update.replace("SESSION", session)
    )
}

fn result_of(line: &str) -> String {
    let at = line.find(r#""result":"#).expect("a result") + r#""result":"#.len();
    line[at..line.len() - 1].to_owned()
}

#[tokio::test]
async fn a_typed_proxy_passes_on_what_it_does_not_know_and_changes_only_what_it_changed() {
    let prefix = format!("{} '>> '", quoted(&example("prefix-proxy")));
    let (session, updates, answer) = future_turn(&["agent".to_owned(), prefix, agent()]).await;
    assert_eq!(updates.len(), 3, "{updates:#?}");
    // The chunk: only its text changed, every unknown field where it was.
    let chunk =
        expected(FUTURE[0], &session).replace(r#""text":"future""#, r#""text":">> future""#);
    assert_eq!(updates[0], chunk);
    // Explicit nulls, an unknown kind of update: as they came.
    assert_eq!(updates[1], expected(FUTURE[1], &session));
    assert_eq!(updates[2], expected(FUTURE[2], &session));
    // The answer the proxy's prompt handler awaited and returned: with its unknown field.
    assert_eq!(result_of(&answer), FUTURE_ANSWER);
}

#[tokio::test]
async fn through_a_pass_through_every_byte_arrives() {
    let (session, updates, answer) = future_turn(&flat_chain(1)).await;
    let sent: Vec<String> = FUTURE.iter().map(|u| expected(u, &session)).collect();
    assert_eq!(updates, sent);
    assert_eq!(result_of(&answer), FUTURE_ANSWER);
}
