//! Acceptance 6: `$/cancel_request` both ways, explicit cancellation, and timeouts.

use std::time::Duration;

use serde_json::json;

use crate::common::*;

#[tokio::test]
async fn an_incoming_cancel_stops_the_handler_and_answers_32800() {
    let (_conn, mut peer, seen) = raw_peer_of(None);
    peer.send(r#"{"jsonrpc":"2.0","id":"h","method":"test/hang"}"#)
        .await;
    seen.hangs_started.reaches(1, "the handler to start").await;
    peer.send(r#"{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":"h"}}"#)
        .await;
    let answer = peer.recv().await;
    assert_eq!(answer["id"], "h");
    assert_eq!(answer["error"]["code"], -32800);
    seen.hangs_dropped
        .reaches(1, "the handler to be dropped")
        .await;
    // Cancelling it again (it is answered) does nothing; the connection keeps serving.
    peer.send(r#"{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":"h"}}"#)
        .await;
    peer.send(r#"{"jsonrpc":"2.0","id":2,"method":"test/double","params":{"n":2}}"#)
        .await;
    assert_eq!(
        peer.recv().await,
        json!({"jsonrpc":"2.0","id":2,"result":4})
    );
}

#[tokio::test]
async fn cancelling_one_request_leaves_the_others_running() {
    let (_conn, mut peer, seen) = raw_peer_of(None);
    peer.send(r#"{"jsonrpc":"2.0","id":1,"method":"test/hang"}"#)
        .await;
    peer.send(r#"{"jsonrpc":"2.0","id":2,"method":"test/hang"}"#)
        .await;
    seen.hangs_started
        .reaches(2, "both handlers to start")
        .await;
    peer.send(r#"{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":2}}"#)
        .await;
    let answer = peer.recv().await;
    assert_eq!(
        (answer["id"].clone(), answer["error"]["code"].clone()),
        (json!(2), json!(-32800))
    );
    seen.hangs_dropped.reaches(1, "one handler to stop").await;
    // Request 1 is still running while others are served.
    peer.send(r#"{"jsonrpc":"2.0","id":3,"method":"test/double","params":{"n":1}}"#)
        .await;
    assert_eq!(
        peer.recv().await,
        json!({"jsonrpc":"2.0","id":3,"result":2})
    );
    assert_eq!(seen.hangs_dropped.get(), 1);
    peer.send(r#"{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":1}}"#)
        .await;
    let answer = peer.recv().await;
    assert_eq!(
        (answer["id"].clone(), answer["error"]["code"].clone()),
        (json!(1), json!(-32800))
    );
}

#[tokio::test]
async fn dropping_an_outgoing_request_sends_cancel_request() {
    let (conn, mut peer, _) = raw_peer_of(None);
    let pending = conn.request(Double { n: 1 });
    let request = peer.recv().await;
    assert_eq!(request["method"], "test/double");
    drop(pending);
    let cancel = peer.recv().await;
    assert_eq!(
        cancel,
        json!({"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId": request["id"]}})
    );
    // A late answer to the cancelled request is dropped quietly.
    peer.send(&format!(
        r#"{{"jsonrpc":"2.0","id":{},"result":2}}"#,
        request["id"]
    ))
    .await;
}

#[tokio::test]
async fn explicit_cancel_sends_cancel_request_and_an_answered_request_sends_none() {
    let (conn, mut peer, _) = raw_peer_of(None);
    let answered = conn.request(Double { n: 1 });
    let first = peer.recv().await;
    peer.send(&format!(
        r#"{{"jsonrpc":"2.0","id":{},"result":2}}"#,
        first["id"]
    ))
    .await;
    assert_eq!(within("the answer", answered).await.unwrap(), 2);

    let pending = conn.request(Double { n: 2 });
    let id = pending.id().cloned().unwrap();
    let second = peer.recv().await;
    assert_eq!(second["id"], serde_json::to_value(&id).unwrap());
    pending.cancel();
    let cancel = peer.recv().await;
    assert_eq!(cancel["method"], "$/cancel_request");
    assert_eq!(cancel["params"]["requestId"], second["id"]);
}

#[tokio::test]
async fn cancellation_travels_between_two_connections() {
    for kind in KINDS {
        let p = pair(kind);
        let pending = p.a.request(Hang {});
        p.seen_b.hangs_started.reaches(1, "the hang to start").await;
        drop(pending);
        p.seen_b
            .hangs_dropped
            .reaches(1, "the far handler to stop")
            .await;
        // The far side still serves.
        assert_eq!(
            within("double", p.a.request(Double { n: 3 }))
                .await
                .unwrap(),
            6,
            "{kind:?}"
        );
    }
}

#[tokio::test]
async fn a_timeout_fails_the_request_and_cancels_it_at_the_peer() {
    let p = pair(Kind::Duplex);
    let started = tokio::time::Instant::now();
    let err = within(
        "the timeout",
        p.a.request(Hang {}).timeout(Duration::from_millis(100)),
    )
    .await
    .unwrap_err();
    assert!(err.is_timeout(), "{err}");
    assert_eq!(err.code, -32800);
    assert!(started.elapsed() >= Duration::from_millis(100));
    p.seen_b
        .hangs_dropped
        .reaches(1, "the far handler to stop")
        .await;
}

#[tokio::test]
async fn a_connection_wide_timeout_applies_to_every_request() {
    let (x, y) = sacp::jsonrpc::channel();
    let seen = std::sync::Arc::new(Seen::default());
    let a = sacp::jsonrpc::Connection::builder()
        .request_timeout(Duration::from_millis(50))
        .spawn(x, service(seen.clone()));
    let _b = sacp::jsonrpc::Connection::builder().spawn(y, service(seen.clone()));
    let err = within("the timeout", a.request(Hang {})).await.unwrap_err();
    assert!(err.is_timeout(), "{err}");
    // A request that answers in time is unaffected.
    assert_eq!(
        within("double", a.request(Double { n: 1 })).await.unwrap(),
        2
    );
}

#[tokio::test]
async fn a_malformed_cancel_is_ignored() {
    let (_conn, mut peer, _) = raw_peer_of(None);
    peer.send(r#"{"jsonrpc":"2.0","method":"$/cancel_request","params":{"id":1}}"#)
        .await;
    peer.send(r#"{"jsonrpc":"2.0","method":"$/cancel_request"}"#)
        .await;
    peer.send(r#"{"jsonrpc":"2.0","id":1,"method":"test/double","params":{"n":1}}"#)
        .await;
    assert_eq!(
        peer.recv().await,
        json!({"jsonrpc":"2.0","id":1,"result":2})
    );
}
