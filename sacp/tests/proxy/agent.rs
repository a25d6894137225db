//! `#[agent]`: handlers for what the client sends, `-32601` for the rest.

use sacp::acp::{
    CancelNotification, ContentBlock, ContentChunk, InitializeRequest, InitializeResponse,
    PromptRequest, PromptResponse, SessionNotification, SessionUpdate, StopReason,
};
use sacp::agent::Cx;
use sacp::jsonrpc::{Connection, Methods, channel, code};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

use crate::common::*;

#[derive(Default)]
struct Echo {
    cancelled: Mutex<Vec<String>>,
}

#[sacp::agent]
impl Echo {
    #[on_request]
    async fn prompt(&self, req: PromptRequest, cx: &Cx) -> sacp::Result<PromptResponse> {
        for block in req.prompt {
            let update = SessionUpdate::AgentMessageChunk(ContentChunk::new(block));
            cx.client()
                .notify(SessionNotification::new(req.session_id.clone(), update))
                .await?;
        }
        Ok(PromptResponse::new(StopReason::EndTurn))
    }

    #[on_notification]
    async fn cancel(&self, n: CancelNotification, cx: &Cx) -> sacp::Result<()> {
        let text = {
            let mut cancelled = self.cancelled.lock().unwrap();
            cancelled.push(n.session_id.0.clone());
            format!("cancelled {}", cancelled.join(","))
        };
        let update = SessionUpdate::AgentMessageChunk(ContentChunk::new(ContentBlock::Text(
            sacp::acp::TextContent::new(text),
        )));
        cx.client()
            .notify(SessionNotification::new(n.session_id, update))
            .await
    }
}

fn client() -> (Connection, Arc<Mutex<Vec<String>>>) {
    let (ours, theirs) = channel();
    let _agent = sacp::agent::spawn(Echo::default(), theirs);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let router = Methods::new().on_notification({
        let seen = seen.clone();
        move |n: SessionNotification, _| {
            let seen = seen.clone();
            async move {
                seen.lock().unwrap().push(serde_json::to_string(&n.update)?);
                Ok(())
            }
        }
    });
    (
        Connection::builder().name("agent").spawn(ours, router),
        seen,
    )
}

#[tokio::test]
async fn an_agent_answers_what_it_handles_and_refuses_the_rest() {
    let (conn, seen) = client();
    let init: Value = within(
        "initialize",
        conn.request_raw("initialize", Some(raw(r#"{"protocolVersion":1}"#))),
    )
    .await
    .unwrap()
    .parse()
    .unwrap();
    // The runtime's own answer: the version the SDK speaks, who answers, no MCP over ACP.
    assert_eq!(
        init,
        json!({"protocolVersion":1,"agentCapabilities":{},"agentInfo":info()})
    );

    let answer: Value = within(
        "prompt",
        conn.request_raw(
            "session/prompt",
            Some(raw(r#"{"sessionId":"s1","prompt":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}"#)),
        ),
    )
    .await
    .unwrap()
    .parse()
    .unwrap();
    assert_eq!(answer, json!({"stopReason":"end_turn"}));
    assert_eq!(
        *seen.lock().unwrap(),
        [
            r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a"}}"#,
            r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"b"}}"#,
        ],
        "the updates arrive before the answer"
    );

    let err = within("unknown", conn.request_raw("session/new", Some(raw("{}"))))
        .await
        .unwrap_err();
    assert_eq!(err.code, code::METHOD_NOT_FOUND);
    let err = within(
        "bad params",
        conn.request_raw("session/prompt", Some(raw(r#"{"sessionId":"s1"}"#))),
    )
    .await
    .unwrap_err();
    assert_eq!(err.code, code::INVALID_PARAMS, "{err}");
    assert!(err.message.contains("prompt"), "{err}");
}

#[tokio::test]
async fn an_agent_handles_notifications_in_order() {
    let (conn, seen) = client();
    for s in ["s1", "s2"] {
        conn.notify_raw(
            "session/cancel",
            Some(raw(&format!(r#"{{"sessionId":"{s}"}}"#))),
        )
        .await
        .unwrap();
    }
    // Unknown notifications are ignored; a request after them is answered after them.
    conn.notify_raw("_ext/whatever", None).await.unwrap();
    within(
        "initialize",
        conn.request_raw("initialize", Some(raw(r#"{"protocolVersion":1}"#))),
    )
    .await
    .unwrap();
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert!(seen[1].contains("cancelled s1,s2"), "{seen:?}");
}

/// Waits in its prompt handler until the turn is cancelled; also handles `session/cancel`.
#[derive(Default)]
struct Patient {
    cancels: std::sync::atomic::AtomicU32,
}

#[sacp::agent]
impl Patient {
    #[on_request]
    async fn prompt(&self, req: PromptRequest, cx: &Cx) -> sacp::Result<PromptResponse> {
        let turn = cx.turn(&req.session_id);
        turn.cancelled().await;
        Ok(PromptResponse::new(StopReason::Cancelled))
    }

    #[on_notification]
    async fn cancel(&self, _n: CancelNotification, cx: &Cx) -> sacp::Result<()> {
        let cancels = self
            .cancels
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst)
            + 1;
        let text = format!("cancel handler ran ({cancels})");
        let update = SessionUpdate::AgentMessageChunk(ContentChunk::new(ContentBlock::Text(
            sacp::acp::TextContent::new(text),
        )));
        cx.client()
            .notify(SessionNotification::new("s1".to_owned(), update))
            .await
    }
}

#[tokio::test]
async fn a_prompt_that_waits_for_session_cancel_is_not_blocked_by_its_own_agent() {
    let (ours, theirs) = channel();
    let _agent = sacp::agent::spawn(Patient::default(), theirs);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let router = Methods::new().on_notification({
        let seen = seen.clone();
        move |n: SessionNotification, _| {
            let seen = seen.clone();
            async move {
                seen.lock().unwrap().push(serde_json::to_string(&n.update)?);
                Ok(())
            }
        }
    });
    let conn = Connection::builder().name("agent").spawn(ours, router);
    let prompt = conn.request_raw(
        "session/prompt",
        Some(raw(r#"{"sessionId":"s1","prompt":[]}"#)),
    );
    // Another session's cancel does not end this turn.
    conn.notify_raw("session/cancel", Some(raw(r#"{"sessionId":"s2"}"#)))
        .await
        .unwrap();
    conn.notify_raw("session/cancel", Some(raw(r#"{"sessionId":"s1"}"#)))
        .await
        .unwrap();
    let answer: Value = within("the cancelled prompt", prompt)
        .await
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(answer, json!({"stopReason":"cancelled"}));
    // The agent's own cancel handler gets both notifications too.
    within("a request after them", conn.request_raw("_ext/sync", None))
        .await
        .unwrap_err();
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert!(seen[1].contains("cancel handler ran (2)"), "{seen:?}");
}

#[tokio::test]
async fn serve_returns_the_error_when_the_connection_breaks() {
    use tokio::io::AsyncWriteExt;
    // The client's requests come in on one stream; answers go out on another, whose reader is
    // gone: writing the first answer fails.
    let (mut requests, agent_in) = tokio::io::duplex(4096);
    let (agent_out, gone) = tokio::io::duplex(4096);
    drop(gone);
    let transport = sacp::jsonrpc::ByteStream::new(agent_in, agent_out);
    let served = tokio::spawn(sacp::agent::serve(Echo::default(), transport));
    requests
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":1}}\n")
        .await
        .unwrap();
    let err = within("serve to end", served)
        .await
        .unwrap()
        .expect_err("a broken output is an abnormal end");
    assert!(err.message.contains("write error"), "{err}");

    // A client that just closes its side is a clean end.
    let (requests, agent_in) = tokio::io::duplex(4096);
    let (agent_out, _kept) = tokio::io::duplex(4096);
    drop(requests);
    let transport = sacp::jsonrpc::ByteStream::new(agent_in, agent_out);
    within(
        "serve to end",
        sacp::agent::serve(Echo::default(), transport),
    )
    .await
    .expect("the end of the client's stream is a clean end");
}

/// Uses MCP over ACP, and says so through the runtime's answer to `initialize`.
struct McpUser;

#[sacp::agent(mcp_over_acp)]
impl McpUser {}

/// Answers `initialize` itself.
struct OwnInitialize;

#[sacp::agent]
impl OwnInitialize {
    #[on_request]
    async fn initialize(
        &self,
        _req: InitializeRequest,
        _cx: &Cx,
    ) -> sacp::Result<InitializeResponse> {
        Ok(
            InitializeResponse::new(1).meta(serde_json::Map::from_iter([(
                "own".to_owned(),
                json!(true),
            )])),
        )
    }
}

async fn initialize_of(agent: impl sacp::agent::Agent, requested: u16) -> Value {
    let (ours, theirs) = channel();
    let _agent = sacp::agent::spawn(agent, theirs);
    let conn = Connection::builder().spawn(ours, Methods::new());
    let params = raw(&format!(
        r#"{{"protocolVersion":{requested},"clientCapabilities":{{}}}}"#
    ));
    within("initialize", conn.request_raw("initialize", Some(params)))
        .await
        .unwrap()
        .parse()
        .unwrap()
}

#[tokio::test]
async fn the_runtime_answers_initialize_honestly_unless_the_agent_does() {
    // Whatever is asked, an SDK agent speaks ACP v1: it says so, and the client decides.
    for requested in [1, 2, 7] {
        assert_eq!(
            initialize_of(Echo::default(), requested).await,
            json!({"protocolVersion":1,"agentCapabilities":{},"agentInfo":info()}),
            "requested {requested}"
        );
    }
    assert_eq!(
        initialize_of(McpUser, 1).await,
        json!({
            "protocolVersion":1,
            "agentCapabilities":{},
            "agentInfo":info(),
            "_meta":{"mcp_acp_transport":true}
        })
    );
    assert_eq!(
        initialize_of(OwnInitialize, 1).await,
        json!({"protocolVersion":1,"_meta":{"own":true}})
    );
    // Params that are not an `initialize` request are refused, not guessed at.
    let (ours, theirs) = channel();
    let _agent = sacp::agent::spawn(McpUser, theirs);
    let conn = Connection::builder().spawn(ours, Methods::new());
    let err = within(
        "a bad initialize",
        conn.request_raw("initialize", Some(raw(r#"{"protocolVersion":"one"}"#))),
    )
    .await
    .unwrap_err();
    assert_eq!(err.code, code::INVALID_PARAMS, "{err}");
}

/// Who an agent of this crate says it is: `#[sacp::agent]` gives the crate's name and version.
fn info() -> Value {
    json!({"name": env!("CARGO_PKG_NAME"), "version": env!("CARGO_PKG_VERSION")})
}

/// Answers `initialize` itself, with a version it does not speak, and says what it was asked.
struct WrongVersion;

#[sacp::agent]
impl WrongVersion {
    #[on_request]
    async fn initialize(
        &self,
        req: InitializeRequest,
        _cx: &Cx,
    ) -> sacp::Result<InitializeResponse> {
        let asked = req.protocol_version.0;
        Ok(
            InitializeResponse::new(5).meta(serde_json::Map::from_iter([(
                "asked".to_owned(),
                json!(asked),
            )])),
        )
    }
}

#[tokio::test]
async fn the_sdk_answers_the_version_and_the_handler_sees_the_one_chosen() {
    // Asked for 2 (or 9): the handler sees 1, the version chosen, and whatever it answers the
    // client is told 1; the rest of its answer is its own.
    for requested in [1, 2, 9] {
        assert_eq!(
            initialize_of(WrongVersion, requested).await,
            json!({"protocolVersion":1,"_meta":{"asked":1}}),
            "requested {requested}"
        );
    }
    // Asked for 0: no version it speaks is at or below it (ACP v2's `-32022`), and neither
    // the runtime's own answer nor a handler's changes that.
    for agent in [true, false] {
        let (ours, theirs) = channel();
        let _agent = if agent {
            sacp::agent::spawn(WrongVersion, theirs)
        } else {
            sacp::agent::spawn(Echo::default(), theirs)
        };
        let conn = Connection::builder().spawn(ours, Methods::new());
        let err = within(
            "initialize 0",
            conn.request_raw("initialize", Some(raw(r#"{"protocolVersion":0}"#))),
        )
        .await
        .unwrap_err();
        assert_eq!(err.code, -32022, "{err}");
        assert_eq!(err.data, Some(json!({"requested":0,"supported":[1]})));
        // The connection goes on: a second `initialize` is answered.
        let answer: Value = within(
            "initialize 1",
            conn.request_raw("initialize", Some(raw(r#"{"protocolVersion":1}"#))),
        )
        .await
        .unwrap()
        .parse()
        .unwrap();
        assert_eq!(answer["protocolVersion"], 1);
    }
}
