//! `conductor route`: one editor, sessions in several workspaces, each workspace's sessions on
//! a backend process of its own (the test agent).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::common::*;

/// Workspaces named `names` (each a directory with a `.git`), in a fresh directory.
pub(crate) fn workspaces(names: &[&str]) -> Vec<PathBuf> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let base = std::env::temp_dir().join(format!(
        "sacp-router-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    names
        .iter()
        .map(|name| {
            let dir = base.join(name);
            std::fs::create_dir_all(dir.join(".git")).unwrap();
            std::fs::create_dir_all(dir.join("src")).unwrap();
            dir
        })
        .collect()
}

fn route_args(extra: &[&str]) -> Vec<String> {
    let mut args = vec!["route".to_owned(), "--backend".to_owned(), quoted(&agent())];
    args.extend(extra.iter().map(|s| (*s).to_owned()));
    args
}

/// The backends: the test agents started by this editor, with their working directories.
pub(crate) fn backends(editor: &Editor) -> Vec<(u32, PathBuf)> {
    processes_tagged(&editor.tag)
        .into_iter()
        .filter(|pid| crate::processes::name(*pid) == "test-agent")
        .filter_map(|pid| Some((pid, std::fs::read_link(format!("/proc/{pid}/cwd")).ok()?)))
        .collect()
}

pub(crate) async fn initialize(editor: &mut Editor) {
    let init = editor
        .request(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {}}),
        )
        .await;
    assert_eq!(init["result"]["protocolVersion"], 1, "{init}");
}

pub(crate) async fn new_session(editor: &mut Editor, cwd: &Path) -> String {
    let answer = editor
        .request("session/new", json!({"cwd": cwd, "mcpServers": []}))
        .await;
    answer["result"]["sessionId"]
        .as_str()
        .unwrap_or_else(|| panic!("session/new failed: {answer}"))
        .to_owned()
}

/// What the agent says (its message chunks) in answer to `text` in `session`.
pub(crate) async fn ask(editor: &mut Editor, session: &str, text: &str) -> (Value, Vec<String>) {
    let from = editor.transcript.len();
    let answer = editor.prompt(session, text).await;
    let said = editor.transcript[from..]
        .iter()
        .filter_map(|l| l.strip_prefix("notification session/update "))
        .filter_map(|u| {
            let u: Value = serde_json::from_str(u).ok()?;
            (u["sessionId"] == session)
                .then(|| u["update"]["content"]["text"].as_str().map(str::to_owned))?
        })
        .collect();
    (answer, said)
}

#[tokio::test]
async fn sessions_of_three_workspaces_run_on_three_backends_at_once_in_order() {
    let ws = workspaces(&["alpha", "beta", "gamma"]);
    let mut editor = Editor::start_in(conductor(), &route_args(&[]), &[], true, Some(&ws[0]));
    initialize(&mut editor).await;
    let mut sessions = Vec::new();
    for dir in &ws {
        for _ in 0..2 {
            sessions.push((
                new_session(&mut editor, &dir.join("src")).await,
                dir.clone(),
            ));
        }
    }
    let mut ids: Vec<&String> = sessions.iter().map(|(s, _)| s).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(
        ids.len(),
        6,
        "the editor's session ids are unique: {sessions:?}"
    );
    // Every backend numbers its sessions from 1: the router renamed the clashes.
    assert!(
        sessions.iter().any(|(s, _)| s.contains('@')),
        "{sessions:?}"
    );

    // One backend per workspace, each in its workspace.
    let mut dirs: Vec<PathBuf> = backends(&editor).into_iter().map(|(_, d)| d).collect();
    dirs.sort();
    assert_eq!(dirs, ws, "one backend per workspace");

    // Six streaming prompts at once.
    let mut prompts = HashMap::new();
    for (session, _) in &sessions {
        let id = editor.send_prompt(session, "stream 40").await;
        prompts.insert(id.to_string(), session.clone());
    }
    let mut chunks: HashMap<String, Vec<String>> = HashMap::new();
    let mut answered = Vec::new();
    while answered.len() < sessions.len() {
        let message = editor.next_message().await.expect("the router answers");
        if message.get("method").is_none() {
            let session = prompts[&message["id"].to_string()].clone();
            assert_eq!(message["result"]["stopReason"], "end_turn", "{message}");
            let got = chunks.get(&session).cloned().unwrap_or_default();
            let expected: Vec<String> = (1..=40).map(|i| format!("chunk {i}")).collect();
            assert_eq!(
                got, expected,
                "{session}'s updates, in order, before its answer"
            );
            answered.push(session);
        } else {
            let session = message["params"]["sessionId"].as_str().unwrap().to_owned();
            assert!(!answered.contains(&session), "an update after the answer");
            let text = message["params"]["update"]["content"]["text"]
                .as_str()
                .unwrap();
            chunks.entry(session).or_default().push(text.to_owned());
        }
    }
    // Each session is where it was created.
    for (session, dir) in &sessions {
        let (_, said) = ask(&mut editor, session, "setup").await;
        assert!(
            said[0].starts_with(&format!("cwd={}", dir.join("src").display())),
            "{said:?}"
        );
    }
    // `session/list` merges the backends' sessions, with the editor's ids.
    let listed = editor.request("session/list", json!({})).await;
    let mut listed: Vec<(String, String)> = listed["result"]["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["sessionId"].as_str().unwrap().to_owned(),
                s["cwd"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    listed.sort();
    let mut expected: Vec<(String, String)> = sessions
        .iter()
        .map(|(s, dir)| (s.clone(), dir.join("src").display().to_string()))
        .collect();
    expected.sort();
    assert_eq!(listed, expected);

    // A backend's request to the editor names the editor's session id.
    let (renamed, _) = sessions
        .iter()
        .find(|(s, _)| s.contains('@'))
        .unwrap()
        .clone();
    let from = editor.transcript.len();
    let (_, said) = ask(&mut editor, &renamed, "permission").await;
    assert_eq!(said, ["permission: allow"]);
    let asked = editor.transcript[from..]
        .iter()
        .find_map(|l| l.strip_prefix("asked session/request_permission "))
        .map(|p| serde_json::from_str::<Value>(p).unwrap())
        .unwrap();
    assert_eq!(asked["sessionId"], renamed.as_str());
    // A cancel reaches the right session's backend.
    let waiting = editor.start_waiting(&renamed).await;
    editor
        .notify("session/cancel", json!({"sessionId": renamed}))
        .await;
    let cancelled = editor.until_response(&waiting).await;
    assert_eq!(
        cancelled["result"]["stopReason"], "cancelled",
        "{cancelled}"
    );
    assert_eq!(backends(&editor).len(), 3);
    editor.close_and_expect_a_clean_exit().await;
    let _ = std::fs::remove_dir_all(ws[0].parent().unwrap());
}

#[tokio::test]
async fn paths_are_translated_as_the_config_says() {
    let ws = workspaces(&["app"]);
    let config = ws[0].parent().unwrap().join("router.toml");
    std::fs::write(
        &config,
        format!(
            "backend = {:?}\nidle_timeout = \"1m\"\n[[rule]]\nprefix = {:?}\ntranslate = {{ host = {:?}, backend = \"/workspace\" }}\n",
            quoted(&agent()),
            ws[0],
            ws[0]
        ),
    )
    .unwrap();
    let args = vec![
        "route".to_owned(),
        "--config".to_owned(),
        config.to_string_lossy().into_owned(),
    ];
    let mut editor = Editor::start_in(conductor(), &args, &[], true, Some(&ws[0]));
    initialize(&mut editor).await;
    let root = ws[0].display().to_string();
    let servers = json!([
        {"name": "fs", "command": format!("{root}/bin/fs"), "args": ["--root", root.clone(), "/etc"], "env": []},
        {"type": "http", "name": "web", "url": format!("http://127.0.0.1:9{root}"), "headers": []}
    ]);
    let answer = editor
        .request(
            "session/new",
            json!({"cwd": ws[0].join("src"), "mcpServers": servers}),
        )
        .await;
    let session = answer["result"]["sessionId"].as_str().unwrap().to_owned();
    let (_, said) = ask(&mut editor, &session, "setup").await;
    let (cwd, servers) = said[0].split_once(" servers=").unwrap();
    assert_eq!(cwd, "cwd=/workspace/src");
    let servers: Value = serde_json::from_str(servers).unwrap();
    assert_eq!(servers[0]["command"], "/workspace/bin/fs");
    assert_eq!(servers[0]["args"], json!(["--root", "/workspace", "/etc"]));
    assert_eq!(
        servers[1]["url"],
        format!("http://127.0.0.1:9{root}"),
        "http untouched"
    );
    editor.close_and_expect_a_clean_exit().await;
    let _ = std::fs::remove_dir_all(ws[0].parent().unwrap());
}

#[tokio::test]
async fn a_crashed_backend_fails_only_its_sessions_and_closing_the_last_session_ends_one() {
    let ws = workspaces(&["one", "two", "three"]);
    let mut editor = Editor::start_in(conductor(), &route_args(&[]), &[], true, Some(&ws[0]));
    initialize(&mut editor).await;
    let mut sessions = Vec::new();
    for dir in &ws {
        sessions.push(new_session(&mut editor, dir).await);
    }
    // A prompt waits in workspace "one"; its backend is killed.
    let waiting = editor.start_waiting(&sessions[0]).await;
    let (pid, _) = backends(&editor)
        .into_iter()
        .find(|(_, dir)| dir == &ws[0])
        .unwrap();
    std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    let failed = editor.until_response(&waiting).await;
    let message = failed["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("backend of workspace \"one\"") && message.contains("signal 9"),
        "{failed}"
    );
    // The other workspaces go on.
    for session in &sessions[1..] {
        let (answer, said) = ask(&mut editor, session, "still here").await;
        assert_eq!(answer["result"]["stopReason"], "end_turn");
        assert_eq!(said, ["still here"]);
    }
    // The dead workspace's session is gone; a new one there starts a fresh backend.
    let (answer, _) = ask(&mut editor, &sessions[0], "hello").await;
    assert!(answer.get("error").is_some(), "{answer}");
    let fresh = new_session(&mut editor, &ws[0]).await;
    let (_, said) = ask(&mut editor, &fresh, "hello again").await;
    assert_eq!(said, ["hello again"]);
    assert_eq!(backends(&editor).len(), 3);

    // Closing the last session of workspace "two" ends its backend.
    let closed = editor
        .request("session/close", json!({"sessionId": sessions[1]}))
        .await;
    assert!(closed.get("result").is_some(), "{closed}");
    eventually("the backend of two to end", || {
        !backends(&editor).iter().any(|(_, dir)| dir == &ws[1])
    })
    .await;
    assert_eq!(backends(&editor).len(), 2);
    editor.close_and_expect_a_clean_exit().await;
    let _ = std::fs::remove_dir_all(ws[0].parent().unwrap());
}

#[tokio::test]
async fn the_router_is_the_agent_of_a_chain() {
    let ws = workspaces(&["left", "right"]);
    let route = format!(
        "{} route --backend {}",
        quoted(conductor()),
        quoted(&quoted(&agent()))
    );
    let args = vec![
        "agent".to_owned(),
        format!("{} '» '", quoted(&example("prefix-proxy"))),
        route,
    ];
    let mut editor = Editor::start_in(conductor(), &args, &[], true, Some(&ws[0]));
    initialize(&mut editor).await;
    let left = new_session(&mut editor, &ws[0]).await;
    let right = new_session(&mut editor, &ws[1]).await;
    for session in [&left, &right] {
        let (_, said) = ask(&mut editor, session, "hi").await;
        assert_eq!(said, ["» hi"], "the proxy applies to every workspace");
    }
    assert_eq!(backends(&editor).len(), 2);
    editor.close_and_expect_a_clean_exit().await;
    let _ = std::fs::remove_dir_all(ws[0].parent().unwrap());
}

#[tokio::test]
async fn a_backend_left_without_sessions_stops_after_the_idle_timeout() {
    let ws = workspaces(&["idle"]);
    let mut editor = Editor::start_in(
        conductor(),
        &route_args(&["--idle-timeout", "1s"]),
        &[],
        true,
        Some(&ws[0]),
    );
    initialize(&mut editor).await;
    // The backend starts for this `session/new`, then refuses it (its `mcpServers` is not a
    // list): it lives on with no session.
    let refused = editor
        .request("session/new", json!({"cwd": ws[0], "mcpServers": 7}))
        .await;
    assert!(refused.get("error").is_some(), "{refused}");
    let started = std::time::Instant::now();
    assert_eq!(
        backends(&editor).len(),
        1,
        "the backend is up after the refusal"
    );
    eventually("the idle backend to end", || backends(&editor).is_empty()).await;
    assert!(
        started.elapsed() >= std::time::Duration::from_millis(500),
        "stopped after {:?}, before its idle timeout",
        started.elapsed()
    );
    // The next session of the workspace gets a fresh backend.
    let session = new_session(&mut editor, &ws[0]).await;
    let (answer, said) = ask(&mut editor, &session, "awake").await;
    assert_eq!(answer["result"]["stopReason"], "end_turn");
    assert_eq!(said, ["awake"]);
    assert_eq!(backends(&editor).len(), 1);
    editor.close_and_expect_a_clean_exit().await;
    let _ = std::fs::remove_dir_all(ws[0].parent().unwrap());
}

#[tokio::test]
async fn the_router_answers_initialize_itself_and_starts_backends_only_for_sessions() {
    // A backend that cannot start anywhere: `initialize` is still answered.
    let ws = workspaces(&["broken", "fine"]);
    let args = vec![
        "route".to_owned(),
        "--backend".to_owned(),
        "false".to_owned(),
    ];
    let mut editor = Editor::start_in(conductor(), &args, &[], true, Some(&ws[0]));
    let init = editor
        .request(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {}}),
        )
        .await;
    assert_eq!(init["result"]["protocolVersion"], 1, "{init}");
    assert_eq!(
        init["result"]["agentCapabilities"]["loadSession"], true,
        "{init}"
    );
    let conductor_pid = editor.pid();
    assert_eq!(
        processes_tagged(&editor.tag),
        [conductor_pid],
        "no backend process before a session asks for one"
    );
    editor.close_and_expect_a_clean_exit().await;

    // One workspace's backend cannot start, the other's can: only the first fails, by name.
    let config = ws[0].parent().unwrap().join("router.toml");
    std::fs::write(
        &config,
        format!(
            "backend = {:?}\n[[rule]]\nprefix = {:?}\nbackend = \"false\"\n\n[capabilities]\nloadSession = false\n",
            quoted(&agent()),
            ws[0],
        ),
    )
    .unwrap();
    let args = vec![
        "route".to_owned(),
        "--config".to_owned(),
        config.to_string_lossy().into_owned(),
    ];
    let mut editor = Editor::start_in(conductor(), &args, &[], true, Some(&ws[1]));
    let init = editor
        .request(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {}}),
        )
        .await;
    assert_eq!(
        init["result"]["agentCapabilities"],
        json!({"loadSession": false}),
        "the configured capabilities: {init}"
    );
    assert!(
        backends(&editor).is_empty(),
        "no backend runs for the router's own directory"
    );
    let failed = editor
        .request("session/new", json!({"cwd": ws[0], "mcpServers": []}))
        .await;
    let message = failed["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(r#"workspace "broken""#) && message.contains("`false`"),
        "{failed}"
    );
    let session = new_session(&mut editor, &ws[1]).await;
    let (answer, said) = ask(&mut editor, &session, "still serving").await;
    assert_eq!(answer["result"]["stopReason"], "end_turn");
    assert_eq!(said, ["still serving"]);
    assert_eq!(backends(&editor).len(), 1);
    editor.close_and_expect_a_clean_exit().await;
    let _ = std::fs::remove_dir_all(ws[0].parent().unwrap());
}

/// The editor's messages reach a backend in the order they were sent: a cancel written right
/// behind its prompt (one write, read in one go) ends the prompt's turn, where a prompt passed
/// on from a task of its own could reach the backend after the cancel and wait forever.
#[tokio::test]
async fn a_cancel_sent_right_behind_its_prompt_reaches_the_backend_after_it() {
    let ws = workspaces(&["order"]);
    let mut editor = Editor::start_in(conductor(), &route_args(&[]), &[], true, Some(&ws[0]));
    initialize(&mut editor).await;
    let session = new_session(&mut editor, &ws[0]).await;
    for round in 0..5 {
        let id = json!(format!("burst-{round}"));
        let prompt = json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt",
            "params": {"sessionId": session, "prompt": [{"type": "text", "text": "wait"}]}});
        let cancel = json!({"jsonrpc": "2.0", "method": "session/cancel",
            "params": {"sessionId": session}});
        editor.send_line(&format!("{prompt}\n{cancel}")).await;
        let answer = editor.until_response(&id).await;
        assert_eq!(answer["result"]["stopReason"], "cancelled", "{answer}");
    }
    editor.close_and_expect_a_clean_exit().await;
    let _ = std::fs::remove_dir_all(ws[0].parent().unwrap());
}
