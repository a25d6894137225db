//! Messages between turns with the official TypeScript SDK's editor: the reminder proxy's
//! reminders arrive after the answer of the turn that asked for them, before the next turn's
//! output, each in its own session.

use std::time::Duration;

use serde_json::Value;

use crate::common::*;
use crate::peers::ts_between_turns_editor;

#[tokio::test]
async fn the_typescript_editor_gets_each_reminder_after_its_answer_in_its_own_session() {
    let Some(editor) = ts_between_turns_editor() else {
        return;
    };
    let mut command = editor.split_whitespace();
    let output = tokio::process::Command::new(command.next().unwrap())
        .args(command)
        .arg(conductor())
        .args([
            "agent",
            &example("reminder-proxy"),
            &passthrough(),
            &agent(),
        ])
        .args(["--", "2", "A=/remind 300ms alpha", "B=/remind 100ms beta"])
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(60), output)
        .await
        .expect("the TypeScript editor did not end within 60 s")
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let events: Vec<String> = stdout
        .lines()
        .map(|l| {
            let e: Value = serde_json::from_str(l).unwrap();
            match e["event"].as_str().unwrap() {
                "answer" => format!("answer {} {}", e["session"], e["stopReason"]),
                _ => format!("update {} {}", e["session"], e["text"]),
            }
        })
        .map(|l| l.replace('"', ""))
        .collect();
    let at = |line: &str| {
        events
            .iter()
            .position(|e| e == line)
            .unwrap_or_else(|| panic!("no {line:?} in {events:#?}"))
    };
    // Each reminder after its own answer, in its own session.
    assert!(
        at("answer A end_turn") < at("update A reminder: alpha"),
        "{events:#?}"
    );
    assert!(
        at("answer B end_turn") < at("update B reminder: beta"),
        "{events:#?}"
    );
    // The next turn's output after the reminders it follows.
    assert!(
        at("update A reminder: alpha") < at("update A hello"),
        "{events:#?}"
    );
    assert!(at("update A hello") < events.len() - 1, "{events:#?}");
    assert_eq!(events.last().unwrap(), "answer A end_turn", "{events:#?}");
    // Nothing else: the agent never saw the `/remind` prompts.
    let updates: Vec<&String> = events.iter().filter(|e| e.starts_with("update")).collect();
    assert_eq!(
        updates,
        [
            "update B reminder: beta",
            "update A reminder: alpha",
            "update A hello"
        ],
        "{events:#?}"
    );
}
