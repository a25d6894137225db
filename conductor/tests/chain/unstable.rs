//! ACP's unstable surface through a typed proxy (`steward-proxy`, on `sacp`'s feature
//! `unstable`) and the test agent, as processes: the proxy sees forks, subagents and
//! elicitations as typed values, changes what it means to, and every other byte passes as it
//! came — fields newer than the schema and explicit `null`s included.

use serde_json::{Value, json};

use sacp_examples::test_agent::SUBAGENT;

use crate::common::*;

/// `conductor agent "steward-proxy ARGS" "logging-proxy LOG" test-agent`, and the log's path.
fn steward_chain(steward_args: &str) -> (Editor, std::path::PathBuf) {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let log = std::env::temp_dir().join(format!(
        "sacp-steward-{}-{}.jsonl",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let args = vec![
        "agent".to_owned(),
        format!("{} {steward_args}", quoted(&example("steward-proxy"))),
        format!(
            "{} {}",
            quoted(&example("logging-proxy")),
            quoted(&log.to_string_lossy())
        ),
        agent(),
    ];
    (Editor::start(conductor(), &args), log)
}

/// The lines the editor got until the response to `id` (the response last).
async fn lines_until(editor: &mut Editor, id: &Value) -> Vec<String> {
    let mut lines = Vec::new();
    loop {
        let line = editor.next_line().await.expect("the chain ended");
        let message: Value = serde_json::from_str(&line).unwrap();
        let done = message.get("method").is_none() && message["id"] == *id;
        if message.get("id").is_some() && message.get("method").is_some() {
            editor.handle(message).await;
        }
        lines.push(line);
        if done {
            return lines;
        }
    }
}

#[tokio::test]
async fn a_typed_proxy_renames_subagents_and_passes_on_every_byte_it_did_not_change() {
    let (mut editor, log) = steward_chain("");
    let session = editor.open_session().await;
    let id = editor.send_prompt(&session, "subagent Searcher").await;
    let lines = lines_until(&mut editor, &id).await;
    // The announcement: only the title changed; the null and the unknown field as they came.
    let announced = SUBAGENT
        .replace("PARENT", &session)
        .replace("CHILD", "c1")
        .replace("TITLE", &format!("Searcher (in {session})"));
    assert_eq!(
        lines[0],
        format!(r#"{{"jsonrpc":"2.0","method":"session/update","params":{announced}}}"#)
    );
    // The child's own update, untouched.
    let child: Value = serde_json::from_str(&lines[1]).unwrap();
    assert_eq!(child["params"]["sessionId"], "c1");
    assert_eq!(
        child["params"]["update"]["content"]["text"],
        "child c1 working"
    );
    // A cancel of the child reaches it.
    editor
        .notify("session/cancel", json!({"sessionId": "c1"}))
        .await;
    let cancelled: Value = serde_json::from_str(&editor.next_line().await.unwrap()).unwrap();
    assert_eq!(
        cancelled["params"]["update"]["content"]["text"], "child c1 cancelled",
        "{cancelled}"
    );
    editor.close_and_expect_a_clean_exit().await;
    let _ = std::fs::remove_file(log);
}

#[tokio::test]
async fn a_typed_proxy_marks_a_fork_and_forwards_the_request_as_it_came() {
    let (mut editor, log) = steward_chain("");
    let session = editor.open_session().await;
    editor.prompt(&session, "remember this").await;
    // A fork request with what a newer editor would send: an unknown field holding a null.
    let params = format!(
        r#"{{"sessionId":"{session}","cwd":"/tmp/fork","mcpServers":[],"futureFork":{{"keep":null}}}}"#
    );
    let id = json!(900);
    editor
        .send_line(&format!(
            r#"{{"jsonrpc":"2.0","id":900,"method":"session/fork","params":{params}}}"#
        ))
        .await;
    let answer = editor.until_response(&id).await;
    let fork = answer["result"]["sessionId"].as_str().unwrap().to_owned();
    assert_ne!(fork, session);
    assert_eq!(
        answer["result"]["_meta"]["forkedFrom"], session,
        "the proxy marks the fork: {answer}"
    );
    // Behind the proxy (the logging proxy's transcript), the request is byte for byte the
    // editor's.
    let transcript = std::fs::read_to_string(&log).unwrap();
    assert!(
        transcript.contains(&format!(r#""method":"session/fork","params":{params}}}"#)),
        "{transcript}"
    );
    // The fork has the history of its parent: loading it replays the parent's turn.
    let from = editor.transcript.len();
    let loaded = editor
        .request(
            "session/load",
            json!({"sessionId": fork, "cwd": "/tmp/fork", "mcpServers": []}),
        )
        .await;
    assert!(loaded.get("result").is_some(), "{loaded}");
    let replayed: Vec<(String, String)> = editor.transcript[from..]
        .iter()
        .filter_map(|l| l.strip_prefix("notification session/update "))
        .map(|u| serde_json::from_str::<Value>(u).unwrap())
        .map(|u| {
            assert_eq!(u["sessionId"], fork.as_str(), "{u}");
            let kind = u["update"]["sessionUpdate"].as_str().unwrap().to_owned();
            (
                kind,
                u["update"]["content"]["text"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        replayed,
        [
            ("user_message_chunk".to_owned(), "remember this".to_owned()),
            ("agent_message_chunk".to_owned(), "remember this".to_owned())
        ]
    );
    editor.close_and_expect_a_clean_exit().await;
    let _ = std::fs::remove_file(log);
}

#[tokio::test]
async fn a_typed_proxy_answers_the_elicitations_it_can_and_passes_the_others_on() {
    // With an answer for `name`, the proxy answers for the editor, which sees nothing.
    let (mut editor, log) = steward_chain("--answer name=Ada");
    let session = editor.open_session().await;
    let from = editor.transcript.len();
    let (answer, said) = crate::router::ask(&mut editor, &session, "elicit").await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    assert_eq!(said, [r#"elicitation: accept {"name":"Ada"}"#]);
    assert!(
        !editor.transcript[from..]
            .iter()
            .any(|l| l.starts_with("asked elicitation/create")),
        "{:?}",
        &editor.transcript[from..]
    );
    editor.close_and_expect_a_clean_exit().await;
    let _ = std::fs::remove_file(log);

    // Without one, the editor is asked, and its answer reaches the agent.
    let (mut editor, log) = steward_chain("--answer color=blue");
    let session = editor.open_session().await;
    let (_, said) = crate::router::ask(&mut editor, &session, "elicit").await;
    assert_eq!(said, [r#"elicitation: accept {"name":"the editor"}"#]);
    assert!(
        editor
            .transcript
            .iter()
            .any(|l| l.starts_with("asked elicitation/create")),
        "{:?}",
        editor.transcript
    );
    editor.close_and_expect_a_clean_exit().await;
    let _ = std::fs::remove_file(log);
}
