//! `conductor route` keeps every session, however it was born: forks, subagents, sessions
//! loaded after a restart, sessions of a backend that crashed — with two workspaces whose
//! backends (test agents) number their sessions and subagents alike, so every id clashes.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::common::*;
use crate::router::{ask, backends, initialize, new_session, workspaces};

/// `conductor route` with test agents as backends; with `keeping`, they keep their sessions in
/// their workspace, so that a later router's backends can load them.
fn router(ws: &Path, keeping: bool) -> Editor {
    let mut backend = quoted(&agent());
    if keeping {
        backend.push_str(" --sessions {root}/.agent-sessions");
    }
    let args = ["route".to_owned(), "--backend".to_owned(), backend];
    Editor::start_in(conductor(), &args, &[], true, Some(ws))
}

/// The session updates that came after transcript line `from`, as `(sessionId, update)`.
fn updates_since(editor: &Editor, from: usize) -> Vec<(String, Value)> {
    editor.transcript[from..]
        .iter()
        .filter_map(|l| l.strip_prefix("notification session/update "))
        .map(|u| serde_json::from_str::<Value>(u).unwrap())
        .map(|u| {
            (
                u["sessionId"].as_str().unwrap().to_owned(),
                u["update"].clone(),
            )
        })
        .collect()
}

fn cleanup(ws: &[PathBuf]) {
    let _ = std::fs::remove_dir_all(ws[0].parent().unwrap());
}

#[tokio::test]
async fn a_fork_is_learned_and_reaches_its_workspaces_backend_under_the_backends_id() {
    let ws = workspaces(&["alpha", "beta"]);
    let mut editor = router(&ws[0], false);
    initialize(&mut editor).await;
    let alpha = new_session(&mut editor, &ws[0]).await;
    // Beta's backend gets a `session-2` of its own, so a fork of alpha's `session-1` (alpha's
    // `session-2`) has a namesake elsewhere.
    let beta = new_session(&mut editor, &ws[1]).await;
    let beta_two = new_session(&mut editor, &ws[1]).await;
    assert_eq!(
        [&alpha, &beta, &beta_two],
        ["session-1@alpha", "session-1@beta", "session-2@beta"]
    );
    let fork_cwd = ws[0].join("src");
    let forked = editor
        .request(
            "session/fork",
            json!({"sessionId": alpha, "cwd": fork_cwd, "mcpServers": []}),
        )
        .await;
    let fork = forked["result"]["sessionId"]
        .as_str()
        .unwrap_or_else(|| panic!("{forked}"))
        .to_owned();
    assert_eq!(fork, "session-2@alpha", "a new id, of alpha's backend");
    // A prompt on the fork reaches alpha's backend, under its own id.
    let (answer, said) = ask(&mut editor, &fork, "setup").await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    assert_eq!(
        said,
        [format!("cwd={} servers=[]", fork_cwd.display())],
        "the fork's own setup, from alpha's backend"
    );
    let (_, said) = ask(&mut editor, &beta_two, "setup").await;
    assert_eq!(said, [format!("cwd={} servers=[]", ws[1].display())]);
    // session/list knows the fork by the same id.
    let listed = editor.request("session/list", json!({})).await;
    let mut ids: Vec<&str> = listed["result"]["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["sessionId"].as_str().unwrap())
        .collect();
    ids.sort();
    assert_eq!(
        ids,
        [
            "session-1@alpha",
            "session-1@beta",
            "session-2@alpha",
            "session-2@beta"
        ]
    );
    editor.close_and_expect_a_clean_exit().await;
    cleanup(&ws);
}

#[tokio::test]
async fn subagents_of_two_workspaces_keep_one_id_each_and_their_cancels_reach_their_backends() {
    let ws = workspaces(&["alpha", "beta"]);
    let mut editor = router(&ws[0], false);
    initialize(&mut editor).await;
    let mut children = Vec::new();
    for (dir, name) in ws.iter().zip(["alpha", "beta"]) {
        let session = new_session(&mut editor, dir).await;
        let from = editor.transcript.len();
        let (_, said) = ask(&mut editor, &session, "subagent helper").await;
        // Both backends call their first child `c1`.
        assert_eq!(said, ["started c1"]);
        let updates = updates_since(&editor, from);
        let (parent, announced) = &updates[0];
        assert_eq!(parent, &session);
        assert_eq!(announced["sessionUpdate"], "subagent_update");
        let child = announced["sessionId"].as_str().unwrap().to_owned();
        assert_eq!(child, format!("c1@{name}"));
        // The child's own update carries the same id as its announcement.
        let (own_session, own) = &updates[1];
        assert_eq!(own_session, &child, "{updates:?}");
        assert_eq!(own["content"]["text"], "child c1 working");
        children.push(child);
    }
    // A cancel of each child reaches its own backend, under the backend's `c1`.
    for child in &children {
        let from = editor.transcript.len();
        editor
            .notify("session/cancel", json!({"sessionId": child}))
            .await;
        let update = editor.next_message().await.expect("the child's last word");
        editor.handle(update).await;
        let updates = updates_since(&editor, from);
        assert_eq!(updates.len(), 1, "{updates:?}");
        assert_eq!(&updates[0].0, child);
        assert_eq!(updates[0].1["content"]["text"], "child c1 cancelled");
    }
    // Closing a parent forgets its child: the child's id is no longer routed.
    let parent = editor.transcript.iter().find_map(|l| {
        let u: Value =
            serde_json::from_str(l.strip_prefix("notification session/update ")?).ok()?;
        (u["update"]["sessionId"] == children[0].as_str())
            .then(|| u["sessionId"].as_str().unwrap().to_owned())
    });
    let closed = editor
        .request("session/close", json!({"sessionId": parent.unwrap()}))
        .await;
    assert!(closed.get("result").is_some(), "{closed}");
    let gone = editor
        .request(
            "session/set_mode",
            json!({"sessionId": children[0], "modeId": "x"}),
        )
        .await;
    assert_eq!(gone["error"]["code"], -32602, "{gone}");
    assert!(
        gone["error"]["message"]
            .as_str()
            .unwrap()
            .contains("unknown session"),
        "{gone}"
    );
    editor.close_and_expect_a_clean_exit().await;
    cleanup(&ws);
}

#[tokio::test]
async fn a_second_router_loads_the_sessions_the_first_handed_out() {
    let ws = workspaces(&["alpha", "beta"]);
    let mut first = router(&ws[0], true);
    initialize(&mut first).await;
    let mut sessions = Vec::new();
    for (dir, name) in ws.iter().zip(["alpha", "beta"]) {
        let session = new_session(&mut first, dir).await;
        let (_, said) = ask(&mut first, &session, &format!("hello {name}")).await;
        assert_eq!(said, [format!("hello {name}")]);
        sessions.push(session);
    }
    first.close_and_expect_a_clean_exit().await;

    // After a restart the editor reopens both threads from its history, by the ids it kept.
    let mut second = router(&ws[0], true);
    initialize(&mut second).await;
    for ((session, dir), name) in sessions.iter().zip(&ws).zip(["alpha", "beta"]) {
        let from = second.transcript.len();
        let loaded = second
            .request(
                "session/load",
                json!({"sessionId": session, "cwd": dir, "mcpServers": []}),
            )
            .await;
        assert!(loaded.get("result").is_some(), "{loaded}");
        let replayed: Vec<(String, String, String)> = updates_since(&second, from)
            .into_iter()
            .map(|(id, u)| {
                let kind = u["sessionUpdate"].as_str().unwrap().to_owned();
                (id, kind, u["content"]["text"].as_str().unwrap().to_owned())
            })
            .collect();
        let said = format!("hello {name}");
        assert_eq!(
            replayed,
            [
                (
                    session.clone(),
                    "user_message_chunk".to_owned(),
                    said.clone()
                ),
                (session.clone(), "agent_message_chunk".to_owned(), said),
            ],
            "the history, under the editor's id"
        );
        let (answer, said) = ask(&mut second, session, "still you?").await;
        assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
        assert_eq!(said, ["still you?"]);
    }
    second.close_and_expect_a_clean_exit().await;
    cleanup(&ws);
}

#[tokio::test]
async fn no_id_the_editor_holds_is_handed_out_again_after_a_backend_crash() {
    let ws = workspaces(&["alpha"]);
    let mut editor = router(&ws[0], false);
    initialize(&mut editor).await;
    let mut held = vec![
        new_session(&mut editor, &ws[0]).await,
        new_session(&mut editor, &ws[0]).await,
    ];
    let (pid, _) = backends(&editor)[0].clone();
    std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    // The next backend numbers from 1 again: its sessions get ids no one was given.
    let mut fresh = Vec::new();
    for _ in 0..3 {
        let session = loop {
            let answer = editor
                .request("session/new", json!({"cwd": ws[0], "mcpServers": []}))
                .await;
            // A request may still meet the dead backend before the router saw it go.
            if let Some(id) = answer["result"]["sessionId"].as_str() {
                break id.to_owned();
            }
        };
        assert!(!held.contains(&session), "{session} handed out again");
        held.push(session.clone());
        fresh.push(session);
    }
    assert_eq!(
        fresh,
        ["session-1@alpha~2", "session-2@alpha~2", "session-3@alpha"]
    );
    // The dead session's id reaches no live one.
    let (answer, _) = ask(&mut editor, &held[0], "hello?").await;
    assert!(answer.get("error").is_some(), "{answer}");
    editor.close_and_expect_a_clean_exit().await;
    cleanup(&ws);
}

#[tokio::test]
async fn a_backend_that_never_answers_initialize_fails_its_session_new_in_time_and_only_that() {
    let ws = workspaces(&["stuck", "fine"]);
    let config = ws[0].parent().unwrap().join("router.toml");
    std::fs::write(
        &config,
        format!(
            "backend = {:?}\nstart_timeout = \"2s\"\n[[rule]]\nprefix = {:?}\nbackend = \"sleep 600\"\n",
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
    initialize(&mut editor).await;
    let sleepers = |editor: &Editor| -> Vec<u32> {
        processes_tagged(&editor.tag)
            .into_iter()
            .filter(|pid| crate::processes::name(*pid) == "sleep")
            .collect()
    };
    for _ in 0..2 {
        let started = std::time::Instant::now();
        let stuck = editor
            .send_request("session/new", json!({"cwd": ws[0], "mcpServers": []}))
            .await;
        // Meanwhile another workspace's session starts and works.
        let fine = editor
            .send_request("session/new", json!({"cwd": ws[1], "mcpServers": []}))
            .await;
        let answers = editor.until_responses(&[fine.clone(), stuck]).await;
        assert_eq!(
            answers[0]["id"], fine,
            "the other workspace is answered first"
        );
        let session = answers[0]["result"]["sessionId"]
            .as_str()
            .unwrap()
            .to_owned();
        let message = answers[1]["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains(r#"workspace "stuck""#)
                && message.contains("`sleep 600`")
                && message.contains("did not answer `initialize` within 2s"),
            "{}",
            answers[1]
        );
        let took = started.elapsed();
        assert!(
            took >= std::time::Duration::from_millis(1900) && took < PATIENCE,
            "failed after {took:?}"
        );
        let (_, said) = ask(&mut editor, &session, "meanwhile").await;
        assert_eq!(said, ["meanwhile"]);
        // The silent backend is stopped; the next session/new there starts afresh.
        sacp::testing::within("the silent backend's end", async {
            while !sleepers(&editor).is_empty() {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        })
        .await;
    }
    assert_eq!(backends(&editor).len(), 1);
    editor.close_and_expect_a_clean_exit().await;
    cleanup(&ws);
}
