//! ACP's unstable methods from the official TypeScript SDK's `/unstable` editor, through a
//! typed proxy of ours that handles them (`steward-proxy`) and the test agent.

use serde_json::{Value, json};

use crate::common::*;
use crate::peers::ts_unstable_editor;

#[tokio::test]
async fn the_typescript_sdks_unstable_editor_forks_and_answers_an_elicitation_through_a_typed_proxy()
 {
    let Some(editor) = ts_unstable_editor() else {
        return;
    };
    let mut command = editor.split_whitespace();
    let output = tokio::process::Command::new(command.next().unwrap())
        .args(command)
        .arg(conductor())
        .args(["agent", &example("steward-proxy"), &agent()])
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(PATIENCE, output)
        .await
        .expect("the TypeScript editor's session did not end in time")
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let lines: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(
        output.status.success(),
        "{lines:?}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        lines,
        [
            json!(["remember this", "end_turn", "remember this"]),
            // A new session, marked by the proxy with the session it came from.
            json!(["forked", true, true]),
            // The fork is the agent's own session, in its own directory.
            json!(["setup", "end_turn", "cwd=/tmp/fork servers=[]"]),
            // The agent's elicitation reached the editor (the proxy had no answer of its own),
            // and the editor's answer reached the agent.
            json!(["elicitation", "form", "What is your name?", true]),
            json!([
                "elicit",
                "end_turn",
                "elicitation: accept {\"name\":\"TypeScript\"}"
            ]),
        ]
    );
}
