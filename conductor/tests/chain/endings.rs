//! Clean endings with the agents people run: they do not exit at the end of stdin, they save
//! their session on `SIGTERM`; what the editor sent just before it left still arrives; the error
//! for what it left unanswered names the editor.

use std::time::Duration;

use serde_json::json;

use crate::common::*;

/// `conductor agent --term-grace GRACE [passthrough…] "test-agent ARGS"`.
fn chain_with_agent(proxies: usize, grace: &str, agent_args: &[&str]) -> Vec<String> {
    let mut args = vec![
        "agent".to_owned(),
        "--term-grace".to_owned(),
        grace.to_owned(),
    ];
    args.extend(std::iter::repeat_n(passthrough(), proxies));
    let mut agent = quoted(&agent());
    for word in agent_args {
        agent.push(' ');
        agent.push_str(&quoted(word));
    }
    args.push(agent);
    args
}

#[tokio::test]
async fn an_agent_that_saves_on_sigterm_gets_to_save_and_is_gone_within_the_grace() {
    let dir = std::env::temp_dir().join(format!("sacp-endings-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let saved = dir.join("session.saved");
    let _ = std::fs::remove_file(&saved);
    let args = chain_with_agent(
        1,
        "2s",
        &["--ignore-eof", "--on-sigterm", &saved.to_string_lossy()],
    );
    let mut editor = Editor::start(conductor(), &args);
    let session = editor.open_session().await;
    editor.prompt(&session, "hello").await;
    editor.close_stdin();
    let (code, _) = editor.exit().await;
    assert_eq!(code, Some(0), "{}", editor.stderr());
    assert_eq!(
        std::fs::read_to_string(&saved).ok().as_deref(),
        Some("saved"),
        "the agent did not get to save: {}",
        editor.stderr()
    );
    editor.assert_no_process_left().await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn an_agent_that_takes_no_notice_of_sigterm_is_killed_after_the_grace() {
    let args = chain_with_agent(0, "1s", &["--ignore-eof", "--ignore-sigterm"]);
    let mut editor = Editor::start(conductor(), &args);
    editor.open_session().await;
    editor.close_stdin();
    let (code, took) = editor.exit().await;
    assert_eq!(code, Some(0), "{}", editor.stderr());
    // Its stdin closes (it takes up to 400 ms to close its output), it gets 400 ms to exit on
    // its own, SIGTERM, the grace, SIGKILL.
    // At least the grace (a lower bound: a busy machine only makes it later).
    assert!(took >= Duration::from_secs(1), "took {took:?}");
    assert!(
        editor.stderr().contains("SIGTERM taken no notice of"),
        "{}",
        editor.stderr()
    );
    editor.assert_no_process_left().await;
}

#[tokio::test]
async fn a_cancel_sent_just_before_the_editor_leaves_reaches_the_agent_through_proxies() {
    // No grace for the editor's requests: the chain starts ending as soon as stdin closes, while
    // the cancel is still on its way through the proxies.
    let mut args = vec![
        "agent".to_owned(),
        "--eof-grace".to_owned(),
        "0s".to_owned(),
    ];
    args.extend(flat_chain(2).into_iter().skip(1));
    let mut editor = Editor::start(conductor(), &args);
    let session = editor.open_session().await;
    let waiting = editor.start_waiting(&session).await;
    editor
        .notify("session/cancel", json!({"sessionId": session}))
        .await;
    editor.close_stdin();
    // The prompt was still in flight when stdin closed: its error names who left.
    let answer = editor.until_response(&waiting).await;
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("the editor closed its connection"),
        "{answer}"
    );
    let (code, _) = editor.exit().await;
    assert_eq!(code, Some(0), "{}", editor.stderr());
    assert!(
        editor
            .stderr()
            .contains(&format!("the turn of {session} was cancelled")),
        "the cancel never reached the agent:\n{}",
        editor.stderr()
    );
    editor.assert_no_process_left().await;
}
