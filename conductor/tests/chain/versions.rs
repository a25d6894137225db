//! The ACP version each hop negotiates, with a v1 proxy (`prefix-proxy`, typed on v1) and
//! agent behind a v2 editor: the chain settles on v1, and the trace says what every hop asked
//! for and was answered.

use serde_json::{Value, json};

use crate::common::*;

/// Runs an `initialize` asking for each of `requested` in turn through `prefix-proxy` and
/// the test agent; returns the editor's responses and the trace's `version` lines.
async fn initialize(requested: &[u16]) -> (Vec<Value>, Vec<Value>) {
    let dir = std::env::temp_dir().join(format!("sacp-versions-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(format!("trace-{}.jsonl", requested[0]));
    let args = vec![
        "agent".to_owned(),
        "--trace".to_owned(),
        file.to_string_lossy().into_owned(),
        example("prefix-proxy"),
        agent(),
    ];
    let mut editor = Editor::start(conductor(), &args);
    let mut responses = Vec::new();
    for requested in requested {
        let params = json!({"protocolVersion": requested, "clientCapabilities": {}});
        responses.push(editor.request("initialize", params).await);
    }
    editor.close_stdin();
    assert_eq!(editor.exit().await.0, Some(0), "{}", editor.stderr());
    let text = std::fs::read_to_string(&file).unwrap();
    let versions = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .inspect(crate::trace::conforms)
        .filter(|r| r["type"] == "version")
        .collect();
    (responses, versions)
}

/// A line's negotiation: (component, requested, answered, error, fits).
fn negotiation(line: &Value) -> Value {
    json!([
        line["component"],
        line["requested"],
        line["answered"],
        line["error"],
        line["fits"]
    ])
}

#[tokio::test]
async fn a_v2_editor_in_front_of_v1_components_is_told_1() {
    let (responses, versions) = initialize(&[2]).await;
    assert_eq!(
        responses[0]["result"]["protocolVersion"], 1,
        "{responses:?}"
    );
    // The proxy was asked for 2 and answered 1; it asked the agent for 1.
    let seen: Vec<Value> = versions.iter().map(negotiation).collect();
    assert_eq!(
        seen,
        [json!([2, 1, 1, null, true]), json!([1, 2, 1, null, true]),],
        "{versions:?}"
    );
    assert_eq!(versions[1]["name"], "1:prefix-proxy");
}

#[tokio::test]
async fn a_version_below_every_one_spoken_is_refused_with_32022() {
    let (responses, versions) = initialize(&[0, 1]).await;
    assert_eq!(responses[0]["error"]["code"], -32022, "{responses:?}");
    assert_eq!(
        responses[0]["error"]["data"],
        json!({"requested": 0, "supported": [1]})
    );
    // The chain goes on: the editor's next `initialize` is answered.
    assert_eq!(
        responses[1]["result"]["protocolVersion"], 1,
        "{responses:?}"
    );
    // The proxy refused the first itself (the agent was never asked for 0).
    let seen: Vec<Value> = versions.iter().map(negotiation).collect();
    assert_eq!(
        seen,
        [
            json!([1, 0, null, -32022, true]),
            json!([2, 1, 1, null, true]),
            json!([1, 1, 1, null, true]),
        ],
        "{versions:?}"
    );
}
