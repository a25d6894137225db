//! Acceptance 4: every kind of bad input gets the specified answer, and the connection keeps
//! serving afterwards.

use serde_json::{Value, json};

use crate::common::*;

/// Sends a good request with a fresh id and checks it is the next thing answered, which also
/// shows that nothing was sent in between.
async fn still_serving(peer: &mut RawPeer, id: u64) {
    peer.send(&format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"test/double","params":{{"n":{id}}}}}"#
    ))
    .await;
    let answer = peer.recv().await;
    assert_eq!(
        answer,
        json!({"jsonrpc": "2.0", "id": id, "result": id * 2})
    );
}

fn assert_error(answer: &Value, id: Value, code: i64) {
    assert_eq!(answer["jsonrpc"], "2.0", "{answer}");
    assert_eq!(answer["id"], id, "{answer}");
    assert_eq!(answer["error"]["code"], code, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty()),
        "{answer}"
    );
    assert!(answer.get("result").is_none(), "{answer}");
}

#[tokio::test]
async fn invalid_json_gets_parse_error_with_null_id() {
    let (_conn, mut peer, _) = raw_peer_of(None);
    peer.send(r#"{"jsonrpc":"2.0","id":1,"method":"#).await;
    assert_error(&peer.recv().await, Value::Null, -32700);
    still_serving(&mut peer, 2).await;
}

#[tokio::test]
async fn a_65_mib_line_is_dropped_and_answered() {
    let (_conn, mut peer, _) = raw_peer_of(None);
    // A well-formed request whose params make the line 65 MiB.
    let mut line = br#"{"jsonrpc":"2.0","id":1,"method":"test/echo","params":[""#.to_vec();
    line.resize(65 * 1024 * 1024, b'x');
    line.extend_from_slice(br#""]}"#);
    let (sent, answer) = tokio::join!(peer.send_bytes(&line), async {});
    let _ = (sent, answer);
    let answer = peer.recv().await;
    assert_error(&answer, Value::Null, -32600);
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("maximum line length"),
        "{answer}"
    );
    still_serving(&mut peer, 2).await;
}

#[tokio::test]
async fn the_line_limit_is_configurable() {
    let (_conn, mut peer, _) = raw_peer_of(Some(100));
    peer.send(&format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"test/echo","params":["{}"]}}"#,
        "y".repeat(200)
    ))
    .await;
    assert_error(&peer.recv().await, Value::Null, -32600);
    still_serving(&mut peer, 2).await;
}

#[tokio::test]
async fn json_that_is_not_an_object_is_an_invalid_request() {
    let (_conn, mut peer, _) = raw_peer_of(None);
    for (i, not_an_object) in [
        r#""a string""#,
        "42",
        "null",
        "[]",
        r#"[{"jsonrpc":"2.0","id":1,"method":"test/double"}]"#,
    ]
    .into_iter()
    .enumerate()
    {
        peer.send(not_an_object).await;
        assert_error(&peer.recv().await, Value::Null, -32600);
        still_serving(&mut peer, 100 + i as u64).await;
    }
}

#[tokio::test]
async fn a_response_to_an_unknown_id_is_ignored() {
    let (_conn, mut peer, _) = raw_peer_of(None);
    peer.send(r#"{"jsonrpc":"2.0","id":999,"result":{"x":1}}"#)
        .await;
    peer.send(r#"{"jsonrpc":"2.0","id":"nobody-asked","error":{"code":-1,"message":"m"}}"#)
        .await;
    still_serving(&mut peer, 1).await;
}

#[tokio::test]
async fn an_unknown_method_gets_method_not_found_with_its_id() {
    let (_conn, mut peer, _) = raw_peer_of(None);
    peer.send(r#"{"jsonrpc":"2.0","id":"req-1","method":"no/such/method","params":{}}"#)
        .await;
    let answer = peer.recv().await;
    assert_error(&answer, json!("req-1"), -32601);
    assert_eq!(answer["error"]["data"]["method"], "no/such/method");
    // An unknown notification is not answered at all.
    peer.send(r#"{"jsonrpc":"2.0","method":"no/such/notification","params":{}}"#)
        .await;
    still_serving(&mut peer, 2).await;
}

#[tokio::test]
async fn a_handler_error_becomes_an_error_response_with_its_data() {
    let (_conn, mut peer, _) = raw_peer_of(None);
    peer.send(r#"{"jsonrpc":"2.0","id":5,"method":"test/fail"}"#)
        .await;
    let answer = peer.recv().await;
    assert_error(&answer, json!(5), -32000);
    assert_eq!(answer["error"]["message"], "it failed on purpose");
    assert_eq!(answer["error"]["data"], json!({"why": "test"}));
    still_serving(&mut peer, 6).await;
}

#[tokio::test]
async fn params_that_do_not_deserialize_get_invalid_params() {
    let (_conn, mut peer, seen) = raw_peer_of(None);
    peer.send(r#"{"jsonrpc":"2.0","id":1,"method":"test/double","params":{"n":"not a number"}}"#)
        .await;
    assert_error(&peer.recv().await, json!(1), -32602);
    peer.send(r#"{"jsonrpc":"2.0","id":2,"method":"test/double"}"#)
        .await;
    assert_error(&peer.recv().await, json!(2), -32602);
    // A notification with bad params is not answered (and not counted).
    peer.send(r#"{"jsonrpc":"2.0","method":"test/tick","params":{"seq":"x"}}"#)
        .await;
    still_serving(&mut peer, 3).await;
    assert_eq!(seen.ticks.load(std::sync::atomic::Ordering::SeqCst), 0);
}

#[tokio::test]
async fn invalid_requests_are_answered_with_their_id_when_it_can_be_read() {
    let (_conn, mut peer, _) = raw_peer_of(None);
    peer.send(r#"{"jsonrpc":"2.0","id":7,"method":42}"#).await;
    assert_error(&peer.recv().await, json!(7), -32600);
    peer.send(r#"{"jsonrpc":"1.0","id":"v","method":"test/double"}"#)
        .await;
    assert_error(&peer.recv().await, json!("v"), -32600);
    peer.send(r#"{"jsonrpc":"2.0","id":{"an":"object"},"method":"test/double"}"#)
        .await;
    assert_error(&peer.recv().await, Value::Null, -32600);
    peer.send(r#"{"jsonrpc":"2.0","params":{}}"#).await;
    assert_error(&peer.recv().await, Value::Null, -32600);
    still_serving(&mut peer, 8).await;
}

#[tokio::test]
async fn peer_ids_are_echoed_exactly() {
    let (_conn, mut peer, _) = raw_peer_of(None);
    for id in [
        json!(-5),
        json!("x y"),
        json!(""),
        json!(9_007_199_254_740_993i64),
        Value::Null,
    ] {
        peer.send(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"test/double","params":{{"n":1}}}}"#
        ))
        .await;
        assert_eq!(
            peer.recv().await,
            json!({"jsonrpc":"2.0","id": id,"result":2})
        );
    }
}

#[tokio::test]
async fn every_message_must_be_json_rpc_2_0_to_the_letter() {
    let (_conn, mut peer, _) = raw_peer_of(None);
    for (line, id) in [
        // No `jsonrpc`, or not "2.0": refused with the request's id.
        (
            r#"{"id":1,"method":"test/double","params":{"n":4}}"#,
            json!(1),
        ),
        (
            r#"{"jsonrpc":"1.0","id":2,"method":"test/double","params":{"n":4}}"#,
            json!(2),
        ),
        // Params that are neither an object nor an array.
        (
            r#"{"jsonrpc":"2.0","id":3,"method":"test/double","params":-1}"#,
            json!(3),
        ),
        (
            r#"{"jsonrpc":"2.0","id":"s","method":"test/double","params":"x"}"#,
            json!("s"),
        ),
        (
            r#"{"jsonrpc":"2.0","id":4,"method":"test/double","params":true}"#,
            json!(4),
        ),
        // A notification has no id to answer with.
        (
            r#"{"jsonrpc":"2.0","method":"test/tick","params":7}"#,
            Value::Null,
        ),
    ] {
        peer.send(line).await;
        let answer = peer.recv().await;
        assert_eq!(answer["id"], id, "{line}: {answer}");
        assert_eq!(answer["error"]["code"], -32600, "{line}: {answer}");
    }
    // "2.0" however it is escaped is "2.0"; `null` params are absent; the connection lives.
    peer.send(r#"{"jsonrpc":"2.\u0030","id":5,"method":"test/double","params":{"n":4}}"#)
        .await;
    assert_eq!(
        peer.recv().await,
        json!({"jsonrpc":"2.0","id":5,"result":8})
    );
    peer.send(r#"{"jsonrpc":"2.0","id":6,"method":"test/echo","params":null}"#)
        .await;
    let answer = peer.recv().await;
    assert_eq!(answer["id"], 6, "{answer}");
}

#[tokio::test]
async fn any_id_is_echoed_byte_for_byte() {
    let (_conn, mut peer, _) = raw_peer_of(None);
    for id in [
        "1180591620717411303424",
        "1.5",
        "-0",
        "1e3",
        r#""\u00e9t\u00e9""#,
        "9223372036854775807",
    ] {
        peer.send(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"test/double","params":{{"n":1}}}}"#
        ))
        .await;
        let line = peer.recv_line().await;
        assert_eq!(
            line,
            format!(r#"{{"jsonrpc":"2.0","id":{id},"result":2}}"#),
            "the id {id} came back changed"
        );
    }
}
