//! Strict JSON-RPC 2.0 at the editor's edge, through a proxy: what is not JSON-RPC 2.0 to the
//! letter is refused with the spec's error, the connection lives on, and ids come back exactly
//! as the editor wrote them.

use serde_json::{Value, json};

use crate::common::*;

#[tokio::test]
async fn the_editor_edge_refuses_what_is_not_json_rpc_and_goes_on() {
    let mut editor = Editor::start(conductor(), &flat_chain(1));
    let session = editor.open_session().await;
    for (line, id) in [
        (
            r#"{"id":"a","method":"session/prompt","params":{}}"#,
            json!("a"),
        ),
        (
            r#"{"jsonrpc":"2.1","id":"b","method":"session/prompt","params":{}}"#,
            json!("b"),
        ),
        (
            r#"{"jsonrpc":"2.0","id":"c","method":"session/prompt","params":-1}"#,
            json!("c"),
        ),
        (
            r#"{"jsonrpc":"2.0","id":"d","method":"session/prompt","params":"text"}"#,
            json!("d"),
        ),
        (
            r#"{"jsonrpc":"2.0","id":"e","method":"session/prompt","params":false}"#,
            json!("e"),
        ),
        (
            r#"{"jsonrpc":"2.0","method":"session/cancel","params":null,"x":1}"#,
            Value::Null,
        ),
        (
            r#"{"jsonrpc":"2.0","method":"session/cancel","params":3}"#,
            Value::Null,
        ),
    ] {
        editor.send_line(line).await;
        if id.is_null() && line.contains("null") {
            // `null` params are absent: a notification, never answered.
            continue;
        }
        let answer = editor.next_message().await.expect("an answer");
        assert_eq!(answer["id"], id, "{line}: {answer}");
        assert_eq!(answer["error"]["code"], -32600, "{line}: {answer}");
    }
    // "2.0" however escaped, and the chain still works.
    let line = format!(
        r#"{{"jsonrpc":"2.\u0030","id":"f","method":"session/prompt","params":{{"sessionId":"{session}","prompt":[{{"type":"text","text":"still here"}}]}}}}"#
    );
    editor.send_line(&line).await;
    let answer = editor.until_response(&json!("f")).await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    editor.close_and_expect_a_clean_exit().await;
}

#[tokio::test]
async fn ids_come_back_byte_for_byte_through_a_proxy() {
    let mut editor = Editor::start(conductor(), &flat_chain(1));
    editor.open_session().await;
    for id in ["1180591620717411303424", "2.5", "-0", r#""\u00e9t\u00e9""#] {
        editor
            .send_line(&format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"session/new","params":{{"cwd":"/tmp","mcpServers":[]}}}}"#
            ))
            .await;
        let line = editor.next_line().await.expect("an answer");
        assert!(
            line.starts_with(&format!(r#"{{"jsonrpc":"2.0","id":{id},"result":"#)),
            "the id {id} came back changed: {line}"
        );
    }
    editor.close_and_expect_a_clean_exit().await;
}
