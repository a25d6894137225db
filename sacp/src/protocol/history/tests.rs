use serde_json::json;

use super::*;
use crate::acp::{ContentBlock, ContentChunk, TextContent};

fn said(text: &str) -> ContentChunk {
    ContentChunk::new(ContentBlock::Text(TextContent::new(text)))
}

#[test]
fn a_history_travels_in_meta_beside_what_is_there() {
    let history = History::new(vec![
        SessionUpdate::UserMessageChunk(said("hello")),
        SessionUpdate::AgentMessageChunk(said("hi")),
    ]);
    let mut request = NewSessionRequest::new("/work", Vec::new());
    let mut meta = Map::new();
    meta.insert("other".into(), json!(1));
    meta.insert("sacp".into(), json!({"from": "proxy"}));
    request.meta = Some(meta);
    history.put(&mut request).unwrap();
    let wire = serde_json::to_value(&request).unwrap();
    assert_eq!(wire["_meta"]["other"], json!(1));
    assert_eq!(wire["_meta"]["sacp"]["from"], json!("proxy"));
    assert_eq!(
        wire["_meta"]["sacp"]["history"][1],
        json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}})
    );

    let taken = History::take(&mut request).unwrap().unwrap();
    assert_eq!(taken, history);
    let left = serde_json::to_value(&request.meta).unwrap();
    assert_eq!(left, json!({"other": 1, "sacp": {"from": "proxy"}}));
    assert_eq!(History::take(&mut request).unwrap(), None);
}

#[test]
fn a_history_that_is_not_updates_is_invalid_params() {
    let mut request = NewSessionRequest::new("/work", Vec::new());
    let mut meta = Map::new();
    meta.insert("sacp".into(), json!({"history": "yesterday"}));
    request.meta = Some(meta);
    let error = History::take(&mut request).unwrap_err();
    assert_eq!(error.code, crate::jsonrpc::code::INVALID_PARAMS);
    assert!(error.message.contains("_meta.sacp.history"), "{error:?}");
}

#[test]
fn the_capability_is_offered_under_meta() {
    let mut capabilities = AgentCapabilities::default();
    assert!(!History::offered(&capabilities));
    History::offer(&mut capabilities);
    assert!(History::offered(&capabilities));
    let wire = serde_json::to_value(&capabilities).unwrap();
    assert_eq!(wire["_meta"], json!({"sacp": {"history": true}}));
}

#[test]
fn the_rendering_holds_every_message_and_summarizes_tool_calls() {
    let long = "x".repeat(2_500);
    let history = vec![
        json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "Where is "}}),
        json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "the config read?"}}),
        json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "Look in src."}}),
        json!({"sessionUpdate": "tool_call", "toolCallId": "read-1", "title": "Read config.rs",
               "kind": "read", "status": "pending", "rawInput": {"path": "src/config.rs"}}),
        json!({"sessionUpdate": "tool_call_update", "toolCallId": "read-1", "status": "completed",
               "content": [{"type": "content", "content": {"type": "text", "text": long}}]}),
        json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "In src/config.rs."}}),
        json!({"sessionUpdate": "available_commands_update", "availableCommands": []}),
        json!({"sessionUpdate": "plan", "entries": [{"content": "Find it", "priority": "high", "status": "completed"}]}),
        json!({"sessionUpdate": "future_kind", "n": 1}),
    ];
    let text = render(&history);
    assert!(text.starts_with(MARK), "{text}");
    assert!(
        text.contains("### User\nWhere is the config read?\n"),
        "{text}"
    );
    assert!(
        text.contains("### Assistant (thinking)\nLook in src.\n"),
        "{text}"
    );
    assert!(
        text.contains("### Tool call `read-1`: Read config.rs (read) — completed\n"),
        "{text}"
    );
    assert!(
        text.contains("Input: {\"path\":\"src/config.rs\"}\n"),
        "{text}"
    );
    assert!(text.contains("… (500 more characters)"), "{text}");
    assert!(
        text.contains("### Assistant\nIn src/config.rs.\n"),
        "{text}"
    );
    assert!(text.contains("### Plan\n- [completed] Find it\n"), "{text}");
    assert!(text.contains("### (future_kind)\n"), "{text}");
    assert!(!text.contains("availableCommands"), "{text}");
    // Sections keep the history's order.
    let at = |s: &str| text.find(s).unwrap();
    assert!(at("### User") < at("### Assistant (thinking)"));
    assert!(at("### Tool call") < at("### Assistant\n"));
    assert!(at("### Assistant\n") < at("### Plan"));
}
