//! Proxies with handlers: transforming, awaiting the successor, failing.

use std::sync::Arc;

use sacp::acp::{
    ContentBlock, NewSessionRequest, NewSessionResponse, PromptRequest, PromptResponse,
    RequestPermissionRequest, RequestPermissionResponse, SessionNotification, SessionUpdate,
    TextContent,
};
use sacp::jsonrpc::{Error, RawJson};
use sacp::proxy::Cx;
use serde_json::{Value, json};

use crate::common::*;

/// Adds a line to each prompt and a prefix to each text chunk the agent streams back.
struct Prefixer;

#[sacp::proxy]
impl Prefixer {
    #[on_request]
    async fn prompt(&self, mut req: PromptRequest, cx: &Cx) -> sacp::Result<PromptResponse> {
        req.prompt
            .push(ContentBlock::Text(TextContent::new("(be brief)")));
        cx.successor().request(req).await
    }

    #[on_notification(from = agent)]
    async fn update(&self, mut n: SessionNotification, cx: &Cx) -> sacp::Result<()> {
        if let SessionUpdate::AgentMessageChunk(chunk) = &mut n.update
            && let ContentBlock::Text(text) = &mut chunk.content
        {
            text.text = format!("» {}", text.text);
        }
        cx.client().notify(n).await
    }
}

fn chunk(session: &str, text: &str) -> String {
    format!(
        r#"{{"sessionId":"{session}","update":{{"sessionUpdate":"agent_message_chunk","content":{{"type":"text","text":"{text}"}}}}}}"#
    )
}

/// Streams each prompt's texts back as chunks, then ends the turn.
fn echo_agent() -> Answer {
    Arc::new(|method, params, conn| {
        Box::pin(async move {
            match method.as_str() {
                "session/prompt" => {
                    let req: PromptRequest = params.unwrap().parse()?;
                    for block in &req.prompt {
                        if let ContentBlock::Text(t) = block {
                            agent_notifies(
                                &conn,
                                "session/update",
                                &chunk(&req.session_id, &t.text),
                            )
                            .await;
                        }
                    }
                    RawJson::from_string(r#"{"stopReason":"end_turn"}"#)
                }
                other => Err(Error::method_not_found(other)),
            }
        })
    })
}

#[tokio::test]
async fn a_transforming_proxy_changes_the_prompt_and_the_chunks() {
    let chain = chain(Prefixer, echo_agent(), empty_answers());
    let answer: Value = chain
        .request_as_editor(
            "session/prompt",
            r#"{"sessionId":"s1","prompt":[{"type":"text","text":"hello"}]}"#,
        )
        .await
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(answer, json!({"stopReason":"end_turn"}));
    let lines = chain.transcript.lines();
    assert_eq!(
        lines,
        [
            // Changed in place: the editor's key order stays.
            r#"agent <- request session/prompt {"sessionId":"s1","prompt":[{"type":"text","text":"hello"},{"type":"text","text":"(be brief)"}]}"#.to_owned(),
            format!("editor <- notification session/update {}", chunk("s1", "» hello")),
            format!("editor <- notification session/update {}", chunk("s1", "» (be brief)")),
        ],
        "{:?}",
        chain.transcript
    );
}

#[tokio::test]
async fn transformed_updates_all_arrive_in_order_before_the_answer() {
    const UPDATES: usize = 2_000;
    let agent: Answer = Arc::new(|_, _, conn| {
        Box::pin(async move {
            for i in 0..UPDATES {
                agent_notifies(&conn, "session/update", &chunk("s1", &i.to_string())).await;
                // Something no handler takes, between the handled ones.
                agent_notifies(&conn, "_ext/progress", &format!(r#"{{"n":{i}}}"#)).await;
            }
            RawJson::from_string(r#"{"stopReason":"end_turn"}"#)
        })
    });
    // The prompt handler holds the proxy while it awaits the agent, so the update handlers
    // queue behind it; the answer must still come after them.
    let chain = chain(Prefixer, agent, empty_answers());
    chain
        .request_as_editor("session/prompt", r#"{"sessionId":"s1","prompt":[]}"#)
        .await
        .unwrap();
    let lines = chain.transcript.lines();
    assert_eq!(lines.len(), 1 + 2 * UPDATES, "{:?}", chain.transcript);
    for (i, pair) in lines[1..].chunks(2).enumerate() {
        assert_eq!(
            pair[0],
            format!(
                "editor <- notification session/update {}",
                chunk("s1", &format!("» {i}"))
            ),
        );
        assert_eq!(
            pair[1],
            format!(r#"editor <- notification _ext/progress {{"n":{i}}}"#)
        );
    }
}

#[tokio::test]
async fn a_handled_message_that_does_not_parse_is_forwarded_unchanged() {
    let chain = chain(Prefixer, echo_agent(), empty_answers());
    // `session/update` without its required `update`: the handler cannot take it.
    chain
        .notify_from_agent("session/update", r#"{"sessionId":"s1","x":1}"#)
        .await;
    let lines = chain.wait_for_lines(1).await;
    assert_eq!(
        lines,
        [r#"editor <- notification session/update {"sessionId":"s1","x":1}"#]
    );
}

/// The Sparkle pattern: before the first prompt of a session, it sends the agent a prompt of
/// its own and awaits it, then sends the user's prompt and answers with that response.
#[derive(Default)]
struct Embodier {
    embodied: std::sync::Mutex<Vec<String>>,
}

#[sacp::proxy]
impl Embodier {
    #[on_request]
    async fn prompt(&self, req: PromptRequest, cx: &Cx) -> sacp::Result<PromptResponse> {
        let first = !self.embodied.lock().unwrap().contains(&req.session_id.0);
        if first {
            let embody = PromptRequest::new(
                req.session_id.clone(),
                vec![ContentBlock::Text(TextContent::new("embody"))],
            );
            cx.successor().request(embody).await?;
            self.embodied.lock().unwrap().push(req.session_id.0.clone());
        }
        cx.successor().request(req).await
    }
}

#[tokio::test]
async fn a_handler_awaits_its_successor_twice_before_answering() {
    let chain = chain(Embodier::default(), echo_agent(), empty_answers());
    let prompt = r#"{"sessionId":"s1","prompt":[{"type":"text","text":"hi"}]}"#;
    chain
        .request_as_editor("session/prompt", prompt)
        .await
        .unwrap();
    // Every update that the agent streamed before the last response is there already.
    let lines = chain.transcript.lines();
    assert_eq!(
        lines,
        [
            r#"agent <- request session/prompt {"prompt":[{"type":"text","text":"embody"}],"sessionId":"s1"}"#.to_owned(),
            format!("editor <- notification session/update {}", chunk("s1", "embody")),
            // Handled, so re-serialized: the fields in the type's order.
            r#"agent <- request session/prompt {"sessionId":"s1","prompt":[{"type":"text","text":"hi"}]}"#.to_owned(),
            format!("editor <- notification session/update {}", chunk("s1", "hi")),
        ],
        "{:?}",
        chain.transcript
    );
    // The second prompt of the session goes straight through.
    chain
        .request_as_editor("session/prompt", prompt)
        .await
        .unwrap();
    assert_eq!(chain.transcript.lines().len(), 6, "{:?}", chain.transcript);
}

/// Refuses new sessions, and answers permission requests itself.
struct Gatekeeper;

#[sacp::proxy]
impl Gatekeeper {
    #[on_request]
    async fn new_session(
        &self,
        _req: NewSessionRequest,
        _cx: &Cx,
    ) -> sacp::Result<NewSessionResponse> {
        Err(Error::new(-32042, "no new sessions today").with_data(json!({"until": "tomorrow"})))
    }

    #[on_request(from = agent)]
    async fn permission(
        &self,
        req: RequestPermissionRequest,
        _cx: &Cx,
    ) -> sacp::Result<RequestPermissionResponse> {
        let first = req
            .options
            .first()
            .map(|o| o.option_id.0.clone())
            .unwrap_or_default();
        let outcome = json!({"outcome": {"outcome": "selected", "optionId": first}});
        Ok(serde_json::from_value(outcome)?)
    }
}

#[tokio::test]
async fn a_handler_error_becomes_the_error_response() {
    let chain = chain(Gatekeeper, echo_agent(), empty_answers());
    let err = chain
        .request_as_editor("session/new", r#"{"cwd":"/tmp","mcpServers":[]}"#)
        .await
        .unwrap_err();
    assert_eq!(err.code, -32042);
    assert_eq!(err.message, "no new sessions today");
    assert_eq!(err.data, Some(json!({"until": "tomorrow"})));
    assert!(
        chain.transcript.lines().is_empty(),
        "nothing reached the agent"
    );
}

#[tokio::test]
async fn a_handler_answers_a_request_from_the_agent() {
    let chain = chain(Gatekeeper, echo_agent(), empty_answers());
    let answer: Value = chain
        .request_as_agent(
            "session/request_permission",
            r#"{"sessionId":"s1","toolCall":{"toolCallId":"t1"},"options":[{"optionId":"allow","name":"Allow","kind":"allow_once"}]}"#,
        )
        .await
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(
        answer,
        json!({"outcome": {"outcome": "selected", "optionId": "allow"}})
    );
    assert!(
        chain.transcript.lines().is_empty(),
        "the editor was not asked"
    );

    // The same request from the client side is not this handler's: it goes to the agent.
    let err = chain
        .request_as_editor(
            "session/request_permission",
            r#"{"sessionId":"s1","toolCall":{"toolCallId":"t1"},"options":[]}"#,
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, sacp::jsonrpc::code::METHOD_NOT_FOUND);
}
