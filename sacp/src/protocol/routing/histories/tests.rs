use crate::jsonrpc::Inbound;
use serde_json::json;

use super::*;

fn request(id: i64, method: &str, params: Value) -> Request {
    Request {
        id: Id::Number(id),
        method: method.to_owned(),
        params: Some(RawJson::to_raw(&params).unwrap()),
    }
}

fn answer(id: Id, result: Value) -> Inbound {
    Inbound::Message(Message::Response(Response::ok(
        id,
        RawJson::to_raw(&result).unwrap(),
    )))
}

fn update(session: &str, update: Value) -> Inbound {
    Inbound::Message(update_of(session, &update).unwrap())
}

fn said(kind: &str, text: &str) -> Value {
    json!({"sessionUpdate": kind, "content": {"type": "text", "text": text}})
}

fn history() -> Value {
    json!([
        said("user_message_chunk", "hello"),
        said("agent_message_chunk", "hi")
    ])
}

/// A table with an agent that answered `initialize` with `result`.
fn initialized(result: Value) -> Histories {
    let mut histories = Histories::default();
    let mut init = request(1, "initialize", json!({"protocolVersion": 1}));
    histories.on_request_to_agent(&mut init);
    let mut batch = vec![answer(Id::Number(1), result)];
    histories.on_from_agent(&mut batch);
    assert_eq!(batch.len(), 1);
    histories
}

fn methods(batch: &[Inbound]) -> Vec<String> {
    batch
        .iter()
        .map(|m| match m {
            Inbound::Message(Message::Response(r)) => format!("answer {}", r.id),
            Inbound::Message(m) => m.to_line(),
            _ => "invalid".to_owned(),
        })
        .collect()
}

#[test]
fn an_agent_that_takes_histories_gets_the_session_new_as_it_came() {
    let mut histories = initialized(json!({
        "protocolVersion": 1,
        "agentCapabilities": {"_meta": {"sacp": {"history": true}}},
    }));
    let params = json!({"cwd": "/w", "mcpServers": [], "_meta": {"sacp": {"history": history()}}});
    let mut new = request(2, "session/new", params.clone());
    histories.on_request_to_agent(&mut new);
    assert_eq!(new.params.unwrap().parse::<Value>().unwrap(), params);
    assert!(!histories.watching());
}

#[test]
fn a_synthesized_turn_is_kept_from_everyone_and_the_answer_held_until_it_ends() {
    let mut histories = initialized(json!({"protocolVersion": 1, "agentCapabilities": {}}));
    let params =
        json!({"cwd": "/w", "mcpServers": [], "_meta": {"sacp": {"history": history()}, "x": 1}});
    let mut new = request(2, "session/new", params);
    histories.on_request_to_agent(&mut new);
    let sent = new.params.unwrap().parse::<Value>().unwrap();
    assert_eq!(
        sent,
        json!({"cwd": "/w", "mcpServers": [], "_meta": {"x": 1}})
    );

    let mut batch = vec![answer(Id::Number(2), json!({"sessionId": "s1"}))];
    let done = histories.on_from_agent(&mut batch);
    assert!(batch.is_empty(), "the answer is held");
    let [Message::Request(prompt)] = &done.to_agent[..] else {
        panic!("one prompt: {:?}", done.to_agent);
    };
    assert_eq!(prompt.method, "session/prompt");
    let text = prompt.params.as_ref().unwrap().parse::<Value>().unwrap()["prompt"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(text.contains("### User\nhello") && text.contains("### Assistant\nhi"));

    // Its updates, and a permission request, go to no one; another session's pass.
    let ask = request(
        7,
        "session/request_permission",
        json!({"sessionId": "s1", "toolCall": {"toolCallId": "t"}, "options": []}),
    );
    let mut batch = vec![
        update("s1", said("agent_message_chunk", "OK")),
        Inbound::Message(Message::Request(ask)),
        update("s2", said("agent_message_chunk", "other")),
    ];
    let done = histories.on_from_agent(&mut batch);
    assert_eq!(batch.len(), 1);
    assert!(methods(&batch)[0].contains("other"));
    assert_eq!(done.kept.len(), 2);
    let [Message::Response(cancelled)] = &done.to_agent[..] else {
        panic!("{:?}", done.to_agent);
    };
    assert!(
        cancelled
            .clone()
            .into_result()
            .unwrap()
            .as_str()
            .contains("cancelled")
    );

    // The turn's answer lets the held answer go.
    let mut batch = vec![answer(prompt.id.clone(), json!({"stopReason": "end_turn"}))];
    histories.on_from_agent(&mut batch);
    assert_eq!(methods(&batch), ["answer 2"]);
    assert!(!histories.watching());
}

#[test]
fn a_failed_synthesized_turn_closes_the_session_and_fails_the_session_new() {
    let mut histories = initialized(json!({
        "protocolVersion": 1,
        "agentCapabilities": {"sessionCapabilities": {"close": {}}},
    }));
    let params = json!({"cwd": "/w", "mcpServers": [], "_meta": {"sacp": {"history": history()}}});
    let mut new = request(2, "session/new", params);
    histories.on_request_to_agent(&mut new);
    let mut batch = vec![answer(Id::Number(2), json!({"sessionId": "s1"}))];
    let done = histories.on_from_agent(&mut batch);
    let Message::Request(prompt) = &done.to_agent[0] else {
        panic!()
    };
    let refused = Response::error(prompt.id.clone(), &Error::invalid_params("too long"));
    let mut batch = vec![Inbound::Message(Message::Response(refused))];
    let done = histories.on_from_agent(&mut batch);
    let [Message::Request(close)] = &done.to_agent[..] else {
        panic!("{:?}", done.to_agent);
    };
    assert_eq!(close.method, "session/close");
    let [Inbound::Message(Message::Response(failed))] = &batch[..] else {
        panic!()
    };
    let error = failed.clone().into_result().unwrap_err();
    assert!(error.message.contains("too long"), "{error:?}");
    assert!(error.message.contains("closed"), "{error:?}");
    // The close's answer goes to no one.
    let mut batch = vec![answer(close.id.clone(), json!({}))];
    histories.on_from_agent(&mut batch);
    assert!(batch.is_empty());
    assert!(!histories.watching());
}

use crate::jsonrpc::Error;

#[test]
fn a_replay_gets_the_history_in_place_of_the_synthesized_turn() {
    let mut histories = initialized(json!({"protocolVersion": 1, "agentCapabilities": {}}));
    let params = json!({"cwd": "/w", "mcpServers": [], "_meta": {"sacp": {"history": history()}}});
    let mut new = request(2, "session/new", params);
    histories.on_request_to_agent(&mut new);
    let mut batch = vec![answer(Id::Number(2), json!({"sessionId": "s1"}))];
    let done = histories.on_from_agent(&mut batch);
    let Message::Request(prompt) = &done.to_agent[0] else {
        panic!()
    };
    let mut batch = vec![answer(prompt.id.clone(), json!({"stopReason": "end_turn"}))];
    histories.on_from_agent(&mut batch);

    let mut load = request(
        3,
        "session/load",
        json!({"sessionId": "s1", "cwd": "/w", "mcpServers": []}),
    );
    histories.on_request_to_agent(&mut load);
    let mut batch = vec![
        update(
            "s1",
            said(
                "user_message_chunk",
                "[sacp: the conversation so far] part 1",
            ),
        ),
        update("s1", said("user_message_chunk", "part 2")),
        update("s1", said("agent_message_chunk", "OK")),
        update("s1", said("user_message_chunk", "next")),
        update("s1", said("agent_message_chunk", "next answer")),
        answer(Id::Number(3), json!({})),
    ];
    histories.on_from_agent(&mut batch);
    let lines = methods(&batch);
    assert_eq!(lines.len(), 5, "{lines:#?}");
    assert!(
        lines[0].contains("hello") && lines[1].contains("\"hi\""),
        "{lines:#?}"
    );
    assert!(
        lines[2].contains("next") && lines[3].contains("next answer"),
        "{lines:#?}"
    );
    assert_eq!(lines[4], "answer 3");
}
