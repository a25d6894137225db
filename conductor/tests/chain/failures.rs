//! Chains that fail, and an editor that goes away: clear errors, exit statuses, no leftovers.

use serde_json::json;

use crate::common::*;

#[tokio::test]
async fn a_component_that_refuses_the_capability_is_named_and_the_chain_ends() {
    // The test agent is no proxy: in the first position it does not accept the capability.
    let args = vec!["agent".to_owned(), passthrough(), agent(), agent()];
    let mut editor = Editor::start(conductor(), &args);
    let init = editor
        .request("initialize", json!({"protocolVersion": 1}))
        .await;
    assert_eq!(init["error"]["code"], -32603, "{init}");
    assert_eq!(
        init["error"]["message"],
        "component 2 (\"test-agent\") did not accept the proxy capability"
    );
    let (code, _) = editor.exit().await;
    assert_eq!(code, Some(1));
    editor.assert_no_process_left().await;
}

#[tokio::test]
async fn an_agent_that_crashes_mid_prompt_fails_the_prompt_by_name() {
    let mut editor = Editor::start(conductor(), &flat_chain(2));
    let session = editor.open_session().await;
    let done = editor.prompt(&session, "crash 7").await;
    let error = &done["error"];
    assert_eq!(error["code"], -32603, "{done}");
    assert_eq!(
        error["message"],
        "component 3 (\"test-agent\") exited with status 7"
    );
    assert_eq!(error["data"]["name"], "test-agent");
    assert_eq!(error["data"]["exitCode"], 7);
    assert!(
        error["data"]["stderr"]
            .as_str()
            .unwrap()
            .contains("crashing on purpose"),
        "{done}"
    );
    // The conductor exits as the agent it stands for did.
    let (code, _) = editor.exit().await;
    assert_eq!(code, Some(7));
    assert!(
        editor.stderr().contains("[3 test-agent]"),
        "{}",
        editor.stderr()
    );
    editor.assert_no_process_left().await;
}

#[tokio::test]
async fn a_proxy_that_is_killed_ends_the_chain() {
    let mut editor = Editor::start(conductor(), &flat_chain(2));
    let session = editor.open_session().await;
    let id = editor.start_waiting(&session).await;
    let proxy = processes_tagged(&editor.tag)
        .into_iter()
        .find(|pid| {
            // argv[0] only: the conductor's own arguments name the proxy too.
            std::fs::read_to_string(format!("/proc/{pid}/cmdline")).is_ok_and(|c| {
                c.split('\0')
                    .next()
                    .is_some_and(|argv0| argv0.ends_with("passthrough-proxy"))
            })
        })
        .expect("a pass-through proxy is running");
    std::process::Command::new("kill")
        .args(["-9", &proxy.to_string()])
        .status()
        .unwrap();
    let done = editor.until_response(&id).await;
    let message = done["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        message.starts_with("component ")
            && message.ends_with("(\"passthrough-proxy\") was killed by signal 9 (SIGKILL)"),
        "{done}"
    );
    assert_eq!(editor.exit().await.0, Some(128 + 9));
    editor.assert_no_process_left().await;
}

#[tokio::test]
async fn when_the_editor_closes_stdin_the_conductor_exits_0_within_a_second() {
    let mut editor = Editor::start(conductor(), &flat_chain(3));
    let session = editor.open_session().await;
    editor.prompt(&session, "warm up").await;
    editor.close_and_expect_a_clean_exit().await;
}

#[tokio::test]
async fn even_with_a_prompt_in_flight_closing_stdin_ends_everything() {
    let mut editor = Editor::start(conductor(), &flat_chain(1));
    let session = editor.open_session().await;
    editor.start_waiting(&session).await;
    // The prompt gets the editor's grace (1 s) to be answered, then everything ends.
    editor.close_and_expect_a_clean_exit().await;
}

#[tokio::test]
async fn malformed_json_gets_a_parse_error_and_the_chain_keeps_working() {
    let mut editor = Editor::start(conductor(), &flat_chain(1));
    let session = editor.open_session().await;
    editor
        .send_line(r#"{"jsonrpc":"2.0","id":5,"method":"session/prompt","params":{"#)
        .await;
    let error = editor.next_message().await.unwrap();
    assert_eq!(error["id"], serde_json::Value::Null, "{error}");
    assert_eq!(error["error"]["code"], -32700, "{error}");
    editor
        .send_line(r#"{"jsonrpc":"2.0","id":6,"method":7}"#)
        .await;
    let error = editor.next_message().await.unwrap();
    assert_eq!(
        (&error["id"], &error["error"]["code"]),
        (&json!(6), &json!(-32600)),
        "{error}"
    );
    editor.send_line("not json at all").await;
    let error = editor.next_message().await.unwrap();
    assert_eq!(error["error"]["code"], -32700, "{error}");
    let done = editor.prompt(&session, "still here").await;
    assert_eq!(done["result"]["stopReason"], "end_turn");
}

#[tokio::test]
async fn a_component_that_cannot_start_is_named() {
    let args = vec![
        "agent".to_owned(),
        passthrough(),
        "/nonexistent/agent --acp".to_owned(),
    ];
    let mut editor = Editor::start(conductor(), &args);
    let (code, _) = editor.exit().await;
    assert_eq!(code, Some(1));
    let stderr = editor.stderr();
    assert!(
        stderr.contains("cannot start component 2 (\"agent\", `/nonexistent/agent --acp`)"),
        "{stderr}"
    );
    editor.assert_no_process_left().await;
}

#[tokio::test]
async fn a_component_that_closes_its_stdout_but_lives_on_is_named_and_killed() {
    // The shell closes its stdout, then waits (in its own process group, with a child).
    let agent = "sh -c 'exec >&-; sleep 30 & wait'".to_owned();
    let mut editor = Editor::start(conductor(), &["agent".to_owned(), agent]);
    let id = editor
        .send_request("initialize", json!({"protocolVersion": 1}))
        .await;
    let init = editor.until_response(&id).await;
    assert_eq!(
        init["error"]["message"], "component 1 (\"sh\") closed its stdout",
        "{init}"
    );
    assert_eq!(editor.exit().await.0, Some(1));
    editor.assert_no_process_left().await;
}

#[tokio::test]
async fn a_chain_file_names_components_and_sets_their_directory() {
    let dir = std::env::temp_dir().join(format!("sacp-chain-file-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // A program path relative to the component's directory only starts if `cwd` is applied.
    let link = dir.join("sparkle-agent");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(agent(), &link).unwrap();
    let file = dir.join("chain.toml");
    let text = format!(
        "[[component]]\nname = \"sparkle\"\ncommand = \"./sparkle-agent\"\ncwd = {:?}\nenv = {{ SPARKLE = \"1\" }}\n",
        dir.to_string_lossy()
    );
    std::fs::write(&file, text).unwrap();
    let args = vec![
        "agent".to_owned(),
        "--chain".to_owned(),
        file.to_string_lossy().into_owned(),
        agent(),
    ];
    let mut editor = Editor::start(conductor(), &args);
    // The test agent in the first position is no proxy: the error names it as the file does.
    let init = editor
        .request("initialize", json!({"protocolVersion": 1}))
        .await;
    assert_eq!(
        init["error"]["message"],
        "component 1 (\"sparkle\") did not accept the proxy capability"
    );
    assert_eq!(editor.exit().await.0, Some(1));
    editor.assert_no_process_left().await;
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn a_terminated_conductor_ends_the_chain_and_leaves_no_process() {
    let mut editor = Editor::start(conductor(), &flat_chain(2));
    let session = editor.open_session().await;
    editor.start_waiting(&session).await;
    let pid = editor.child.id().expect("the conductor runs");
    std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    let (code, _) = editor.exit().await;
    assert_eq!(code, Some(128 + 15), "{}", editor.stderr());
    editor.assert_no_process_left().await;
}
