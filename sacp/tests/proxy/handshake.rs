//! The capability handshake, with and without an `initialize` handler of the proxy's own.

use std::sync::Arc;

use sacp::acp::{InitializeRequest, InitializeResponse};
use sacp::jsonrpc::RawJson;
use sacp::proxy::Cx;
use serde_json::{Value, json};

use crate::common::*;

struct PassThrough;

#[sacp::proxy]
impl PassThrough {}

/// A pass-through that declares v1 only.
struct V1Only;

#[sacp::proxy(protocol = 1)]
impl V1Only {}

fn agent_initialize() -> Answer {
    Arc::new(|method, _, _| {
        Box::pin(async move {
            assert_eq!(method, "initialize");
            RawJson::from_string(
                r#"{"protocolVersion":1,"agentCapabilities":{"loadSession":true},"_meta":{"vendor":"x"}}"#,
            )
        })
    })
}

#[tokio::test]
async fn accepts_the_offer_forwards_initialize_and_says_so() {
    let chain = chain(PassThrough, agent_initialize(), empty_answers());
    let result: Value = chain
        .request_as_editor(
            "initialize",
            r#"{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true}},"_meta":{"proxy":true,"trace":"t"}}"#,
        )
        .await
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(
        result,
        json!({"protocolVersion":1,"agentCapabilities":{"loadSession":true},"_meta":{"vendor":"x","proxy":true}})
    );
    let lines = chain.transcript.lines();
    assert_eq!(
        lines,
        [
            r#"agent <- request initialize {"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true}},"_meta":{"trace":"t"}}"#
        ],
        "the offer is hop-local: the successor does not see it"
    );
}

#[tokio::test]
async fn a_v1_proxy_passes_initialize_on_asking_for_v1() {
    // A v2 editor: the proxy speaks v1 only, so it asks its successor for 1, written as v1
    // writes it (v2's `info` is `clientInfo`; of its capabilities, what v1 defines alike; the
    // rest as it came), and the successor's answer comes back.
    let v2 = chain(V1Only, agent_initialize(), empty_answers());
    let result: Value = v2
        .request_as_editor(
            "initialize",
            r#"{"protocolVersion":2,"info":{"name":"ed","version":"2"},"capabilities":{"auth":{"terminal":true},"future":null},"x":1,"_meta":{"proxy":true}}"#,
        )
        .await
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(result["protocolVersion"], 1);
    assert_eq!(
        v2.transcript.lines(),
        [
            r#"agent <- request initialize {"protocolVersion":1,"x":1,"clientInfo":{"name":"ed","version":"2"},"clientCapabilities":{"auth":{"terminal":true}}}"#
        ]
    );
    // Asked for 0: nothing it speaks fits; it says so itself and passes nothing on.
    let zero = chain(V1Only, agent_initialize(), empty_answers());
    let err = zero
        .request_as_editor(
            "initialize",
            r#"{"protocolVersion":0,"_meta":{"proxy":true}}"#,
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, -32022, "{err}");
    assert_eq!(err.data, Some(json!({"requested":0,"supported":[1]})));
    assert!(zero.transcript.lines().is_empty());
}

#[tokio::test]
async fn a_bare_proxy_keeps_a_v2_chain_at_v2() {
    // Nothing typed: it reads nothing it forwards, so it speaks every version the SDK knows,
    // and passes a v2 `initialize` on as it came.
    let agent: Answer = Arc::new(|_, _, _| {
        Box::pin(async {
            RawJson::from_string(r#"{"protocolVersion":2,"info":{"name":"a","version":"1"}}"#)
        })
    });
    let v2 = chain(PassThrough, agent, empty_answers());
    let asked = r#"{"protocolVersion":2,"info":{"name":"ed","version":"2"},"capabilities":{}}"#;
    let result: Value = v2
        .request_as_editor(
            "initialize",
            r#"{"protocolVersion":2,"info":{"name":"ed","version":"2"},"capabilities":{},"_meta":{"proxy":true}}"#,
        )
        .await
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(result["protocolVersion"], 2, "{result}");
    assert_eq!(
        v2.transcript.lines(),
        [format!("agent <- request initialize {asked}")]
    );
}

#[tokio::test]
async fn refuses_to_run_when_not_offered_the_capability() {
    let chain = chain(PassThrough, agent_initialize(), empty_answers());
    for params in [
        r#"{"protocolVersion":1,"clientCapabilities":{}}"#,
        r#"{"protocolVersion":1,"clientCapabilities":{},"_meta":{"proxy":false}}"#,
    ] {
        let err = chain
            .request_as_editor("initialize", params)
            .await
            .unwrap_err();
        assert_eq!(err.code, sacp::jsonrpc::code::INVALID_PARAMS, "{err}");
        assert!(
            err.message
                .contains("did not offer it the proxy capability"),
            "{err}"
        );
    }
    assert!(
        chain.transcript.lines().is_empty(),
        "nothing was forwarded: {:?}",
        chain.transcript
    );
}

/// Reports the agent's capabilities in `agentInfo`-free form: it adds a `_meta` key of its own.
struct Annotating;

#[sacp::proxy]
impl Annotating {
    #[on_request]
    async fn initialize(
        &self,
        req: InitializeRequest,
        cx: &Cx,
    ) -> sacp::Result<InitializeResponse> {
        assert!(
            req.meta.as_ref().is_none_or(|m| !m.contains_key("proxy")),
            "the handler sees the request without the offer"
        );
        let mut response = cx.successor().request(req).await?;
        response
            .meta
            .get_or_insert_with(Default::default)
            .insert("annotated".into(), json!(true));
        Ok(response)
    }
}

#[tokio::test]
async fn a_handler_of_initialize_gets_the_offer_accepted_too() {
    let chain = chain(Annotating, agent_initialize(), empty_answers());
    let result: Value = chain
        .request_as_editor("initialize", OFFER)
        .await
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(
        result["_meta"],
        json!({"vendor":"x","annotated":true,"proxy":true})
    );
    assert_eq!(result["agentCapabilities"], json!({"loadSession":true}));

    let err = chain
        .request_as_editor("initialize", r#"{"protocolVersion":1}"#)
        .await
        .unwrap_err();
    assert!(err.message.contains("proxy capability"), "{err}");
}

#[tokio::test]
async fn under_a_conductor_of_another_dialect_it_answers_in_kind_and_speaks_its_envelopes() {
    let dialects = [
        ("_proxy/initialize", "_proxy/successor"),
        ("proxy/initialize", "proxy/successor"),
    ];
    for (init, envelope) in dialects {
        let agent: Answer = Arc::new(move |method, _, conn| {
            Box::pin(async move {
                match method.as_str() {
                    "initialize" => RawJson::from_string(r#"{"protocolVersion":1}"#),
                    _ => {
                        // An update from inside the answer, in the conductor's envelope.
                        let update = sacp::protocol::envelope::wrap(
                            "session/update",
                            Some(&raw(r#"{"sessionId":"s","update":{"u":1}}"#)),
                        );
                        conn.notify_raw(envelope, Some(update)).await.unwrap();
                        RawJson::from_string(r#"{"stopReason":"end_turn"}"#)
                    }
                }
            })
        });
        let chain = chain(PassThrough, agent, empty_answers());
        let result: Value = chain
            .request_as_editor(init, r#"{"protocolVersion":1,"clientCapabilities":{}}"#)
            .await
            .unwrap()
            .parse()
            .unwrap();
        // Its answer is its successor's, without our marker: that conductor expects none.
        assert_eq!(result, json!({"protocolVersion":1}), "{init}");
        let prompt = r#"{"sessionId":"s","prompt":[]}"#;
        let answer = chain.request_as_editor("session/prompt", prompt).await;
        assert!(answer.is_ok(), "{init}: {answer:?}");
        assert_eq!(
            chain.transcript.lines(),
            [
                format!(
                    r#"agent <- request initialize {{"protocolVersion":1,"clientCapabilities":{{}}}} via {envelope}"#
                ),
                format!(r#"agent <- request session/prompt {prompt} via {envelope}"#),
                r#"editor <- notification session/update {"sessionId":"s","update":{"u":1}}"#
                    .to_owned(),
            ],
            "{init}"
        );
    }
}

#[tokio::test]
async fn under_another_dialect_a_v1_proxy_also_asks_its_successor_for_v1() {
    for (init, envelope) in [
        ("_proxy/initialize", "_proxy/successor"),
        ("proxy/initialize", "proxy/successor"),
    ] {
        let chain = chain(V1Only, agent_initialize(), empty_answers());
        let result: Value = chain
            .request_as_editor(init, r#"{"protocolVersion":2,"clientCapabilities":{}}"#)
            .await
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(result["protocolVersion"], 1, "{init}");
        assert_eq!(
            chain.transcript.lines(),
            [format!(
                r#"agent <- request initialize {{"protocolVersion":1,"clientCapabilities":{{}}}} via {envelope}"#
            )],
            "{init}"
        );
        let err = chain
            .request_as_editor(init, r#"{"protocolVersion":0}"#)
            .await
            .unwrap_err();
        assert_eq!(err.code, -32022, "{init}: {err}");
    }
}
