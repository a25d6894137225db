//! The README's editor entries, run as the editors would run them: every Zed entry says
//! `"type": "custom"`, and the "Sparkle demo" entry of each file starts a working chain.

use serde_json::Value;

use crate::common::*;

/// The README's JSON blocks of the editor set-up: Zed's, then JetBrains'.
fn editor_files() -> (Value, Value) {
    let readme = include_str!("../../../README.md");
    let section = &readme[readme
        .find("## Installing, and using a chain from your editor")
        .expect("the README has its editor set-up")..];
    let mut blocks = section.split("```json\n").skip(1).map(|block| {
        let text = &block[..block.find("```").expect("a closed block")];
        serde_json::from_str::<Value>(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
    });
    (blocks.next().unwrap(), blocks.next().unwrap())
}

/// Runs an entry's command (its program found as the build's own) and talks ACP to it.
async fn run_entry(entry: &Value) {
    let program = entry["command"].as_str().unwrap();
    let program = match program.rsplit('/').next().unwrap() {
        "conductor" => conductor().to_owned(),
        other => example(other),
    };
    let args: Vec<String> = entry["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_owned())
        .collect();
    // The components are found on PATH, as after `cargo install`.
    let bins = std::path::Path::new(&example("test-agent"))
        .parent()
        .unwrap()
        .to_path_buf();
    let path = format!(
        "{}:{}",
        bins.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut editor = Editor::start_with(&program, &args, &[("PATH", &path)], true);
    let session = editor.open_session().await;
    let answer = editor.prompt(&session, "hello from the README").await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    assert!(
        editor
            .transcript
            .iter()
            .any(|l| l.contains("hello from the README") && l.starts_with("notification")),
        "{:#?}",
        editor.transcript
    );
    editor.close_and_expect_a_clean_exit().await;
}

#[tokio::test]
async fn the_readmes_editor_entries_work() {
    let (zed, jetbrains) = editor_files();
    for (name, entry) in zed["agent_servers"].as_object().unwrap() {
        assert_eq!(
            entry["type"], "custom",
            "Zed wants \"type\": \"custom\": {name}"
        );
        assert!(entry["args"].is_array(), "{name}");
    }
    for (name, entry) in jetbrains["agent_servers"].as_object().unwrap() {
        assert!(
            entry["command"].as_str().unwrap().starts_with('/'),
            "JetBrains may not search PATH: {name}"
        );
    }
    assert_eq!(
        zed["agent_servers"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        jetbrains["agent_servers"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        "the same chains for both editors"
    );
    run_entry(&zed["agent_servers"]["Sparkle demo"]).await;
    run_entry(&jetbrains["agent_servers"]["Sparkle demo"]).await;
}

#[test]
fn the_help_shows_a_zed_entry_zed_takes() {
    let help = std::process::Command::new(conductor())
        .args(["agent", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(help.contains(r#""type": "custom""#), "{help}");
    assert!(help.contains("JetBrains"), "{help}");
}
