//! Rich content through the chain (`sacp::protocol::content`): what each hop declares it takes,
//! and what the conductor transforms before a hop that does not take it.

use serde_json::{Value, json};

use crate::common::*;

/// `initialize` with `declared` as what the editor takes (`None`: it declares nothing), then a
/// session; its id.
async fn open_declaring(editor: &mut Editor, declared: Option<&[&str]>) -> String {
    let mut params = json!({"protocolVersion": 1, "clientCapabilities": {}});
    if let Some(declared) = declared {
        params["_meta"] = json!({"sacp": {"content": declared}});
    }
    let init = editor.request("initialize", params).await;
    assert!(init.get("result").is_some(), "initialize failed: {init}");
    editor.new_session().await
}

/// The `agent_message_chunk` contents the editor was sent, in order.
fn chunks(editor: &Editor) -> Vec<Value> {
    editor
        .transcript
        .iter()
        .filter_map(|line| line.strip_prefix("notification session/update "))
        .filter_map(|params| serde_json::from_str::<Value>(params).ok())
        .filter(|p| p["update"]["sessionUpdate"] == "agent_message_chunk")
        .map(|p| p["update"]["content"].clone())
        .collect()
}

/// The trace's `transformed` events.
fn transformed(trace: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(trace)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|l| l["type"] == "transformed")
        .collect()
}

fn trace_file(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("sacp-content-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

#[tokio::test]
async fn a_panel_reaches_an_editor_that_takes_html_as_html_and_any_other_as_its_text() {
    for declared in [Some(&["text/html"][..]), None] {
        let trace = trace_file(&format!("panel-{}.jsonl", declared.is_some()));
        let args = vec![
            "agent".to_owned(),
            "--trace".to_owned(),
            trace.to_string_lossy().into_owned(),
            example("panel-proxy"),
            agent(),
        ];
        let mut editor = Editor::start(conductor(), &args);
        let session = open_declaring(&mut editor, declared).await;
        // The agent asks permission for a tool call ("write a file"), which the editor allows.
        let answer = editor.prompt(&session, "permission").await;
        assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
        editor.close_stdin();
        assert_eq!(editor.exit().await.0, Some(0), "{}", editor.stderr());

        let chunks = chunks(&editor);
        let panel = chunks.last().expect("a panel before the answer");
        let events = transformed(&trace);
        if declared.is_some() {
            assert_eq!(panel["type"], "resource", "{panel}");
            assert_eq!(panel["resource"]["mimeType"], "text/html");
            let page = panel["resource"]["text"].as_str().unwrap();
            assert!(page.contains("<h2>Turn summary</h2>"), "{page}");
            assert!(page.contains("write a file"), "{page}");
            assert!(events.is_empty(), "{events:?}");
        } else {
            assert_eq!(panel["type"], "text", "{panel}");
            let text = panel["text"].as_str().unwrap();
            assert!(text.contains("Turn summary"), "{text}");
            assert!(
                text.contains("write a file") && text.contains("permission: allow"),
                "{text}"
            );
            assert!(text.contains("The turn ended: end_turn."), "{text}");
            assert!(
                !text.contains('<') && !text.contains('>'),
                "a tag in {text}"
            );
            assert!(!text.contains("font:"), "the style's text in {text}");
            assert_eq!(panel["_meta"]["sacp"]["transformedFrom"], "text/html");
            assert_eq!(
                events,
                vec![events[0].clone()],
                "one transformation: {events:?}"
            );
            let event = &events[0];
            assert_eq!(event["to"], "editor");
            assert_eq!(event["direction"], "up");
            assert_eq!(event["method"], "session/update");
            assert_eq!(event["from"], "text/html");
            assert_eq!(event["into"], "text");
        }
    }
}

#[tokio::test]
async fn an_image_reaches_an_agent_without_the_capability_as_text_and_one_with_it_untouched() {
    const DATA: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
    for proxies in [0, 1, 3] {
        for capable in [false, true] {
            let mut args = vec!["agent".to_owned()];
            args.extend(std::iter::repeat_n(passthrough(), proxies));
            args.push(match capable {
                true => format!("{} --image", quoted(&agent())),
                false => agent(),
            });
            let mut editor = Editor::start(conductor(), &args);
            let session = editor.open_session().await;
            let image = json!({"type": "image", "mimeType": "image/png", "data": DATA});
            let answer = editor
                .request(
                    "session/prompt",
                    json!({"sessionId": session, "prompt": [{"type": "text", "text": "look"}, image]}),
                )
                .await;
            assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
            editor.close_stdin();
            assert_eq!(editor.exit().await.0, Some(0), "{}", editor.stderr());

            let said: Vec<String> = chunks(&editor)
                .iter()
                .filter_map(|c| c["text"].as_str().map(str::to_owned))
                .collect();
            let context = format!("{proxies} proxies, capable: {capable}: {said:?}");
            assert_eq!(said.len(), 2, "{context}");
            assert_eq!(said[0], "look", "{context}");
            if capable {
                // As it came, to the byte.
                assert_eq!(said[1], format!("image image/png {DATA}"), "{context}");
            } else {
                assert!(said[1].starts_with("[an image (image/png, "), "{context}");
                assert!(said[1].contains("does not take image"), "{context}");
                assert!(!said[1].contains(DATA), "{context}");
            }
        }
    }
}

#[tokio::test]
async fn a_proxy_that_transforms_html_itself_is_left_to_it() {
    for declared in [None, Some(&["text/html"][..])] {
        let trace = trace_file(&format!("plain-{}.jsonl", declared.is_some()));
        let args = vec![
            "agent".to_owned(),
            "--trace".to_owned(),
            trace.to_string_lossy().into_owned(),
            example("plain-proxy"),
            example("panel-proxy"),
            agent(),
        ];
        let mut editor = Editor::start(conductor(), &args);
        let session = open_declaring(&mut editor, declared).await;
        // The raw lines, to assert on the bytes the editor got.
        let id = editor
            .send_request(
                "session/prompt",
                json!({"sessionId": session, "prompt": [{"type": "text", "text": "hello"}]}),
            )
            .await;
        let mut lines = Vec::new();
        loop {
            let line = editor.next_line().await.expect("the answer");
            let message: Value = serde_json::from_str(&line).unwrap();
            lines.push(line);
            if message["id"] == id {
                assert_eq!(message["result"]["stopReason"], "end_turn", "{message}");
                break;
            }
        }
        editor.close_stdin();
        assert_eq!(editor.exit().await.0, Some(0), "{}", editor.stderr());

        let panel = lines
            .iter()
            .find(|l| l.contains("Turn summary"))
            .unwrap_or_else(|| panic!("no panel in {lines:?}"));
        let events = transformed(&trace);
        assert!(events.is_empty(), "the conductor transformed: {events:?}");
        if declared.is_some() {
            assert!(panel.contains(r#""mimeType":"text/html""#), "{panel}");
            assert!(panel.contains("<h2>Turn summary</h2>"), "{panel}");
        } else {
            // The proxy's own block, as it wrote it: no mark of the conductor's.
            let text = sacp_examples::plain::HEADING;
            assert!(
                panel.contains(&format!(r#""content":{{"type":"text","text":"{text}\n\n"#)),
                "{panel}"
            );
            assert!(!panel.contains("transformedFrom"), "{panel}");
            assert!(!panel.contains("<h2>"), "{panel}");
        }
    }
}
