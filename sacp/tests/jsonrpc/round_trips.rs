//! Acceptance 1 and 2: requests, notifications and concurrency in both directions.

use serde_json::json;
use tokio::task::JoinSet;

use crate::common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_response_and_notification_over_every_transport() {
    for kind in KINDS {
        let p = pair(kind);
        let v = within("echo", p.a.request(Echo(json!({"k": [1, "two", null]}))))
            .await
            .unwrap();
        assert_eq!(v, json!({"k": [1, "two", null]}), "{kind:?}");
        assert_eq!(
            within("double", p.b.request(Double { n: 21 }))
                .await
                .unwrap(),
            42,
            "{kind:?}"
        );
        within("a tick", p.a.notify(Tick { seq: 0 })).await.unwrap();
        p.seen_b.tick_events.reaches(1, "the tick").await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_requests_both_ways() {
    for kind in KINDS {
        let p = pair(kind);
        let mut set = JoinSet::new();
        for i in 0..200u64 {
            let (from, n) = if i % 2 == 0 {
                (p.a.clone(), i)
            } else {
                (p.b.clone(), i)
            };
            set.spawn(async move { (n, from.request(Double { n }).await) });
        }
        let mut answered = 0;
        while let Some(joined) = within("200 concurrent requests", set.join_next()).await {
            let (n, result) = joined.unwrap();
            assert_eq!(result.unwrap(), n * 2, "{kind:?}");
            answered += 1;
        }
        assert_eq!(answered, 200);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handlers_awaiting_their_own_peer_do_not_deadlock() {
    for kind in KINDS {
        let p = pair(kind);
        let mut set = JoinSet::new();
        for n in 0..100u64 {
            // Half from each side, so both dispatchers are busy awaiting the other at once.
            let from = if n % 2 == 0 { p.a.clone() } else { p.b.clone() };
            set.spawn(async move { (n, from.request(AskBack { n }).await) });
        }
        let mut answered = 0;
        while let Some(joined) =
            within("100 requests whose handlers call back", set.join_next()).await
        {
            let (n, result) = joined.unwrap();
            assert_eq!(result.unwrap(), n * 2 + 1, "{kind:?}");
            answered += 1;
        }
        assert_eq!(answered, 100);
    }
}

#[tokio::test]
async fn raw_requests_carry_any_json() {
    let p = pair(Kind::Duplex);
    let text = r#"{"b": 1.50, "a": "\u00e9"}"#;
    let params = sacp::jsonrpc::RawJson::from_string(text).unwrap();
    let back = within("raw echo", p.a.request_raw("test/echo", Some(params)))
        .await
        .unwrap();
    assert_eq!(
        back.parse::<serde_json::Value>().unwrap(),
        json!({"b": 1.5, "a": "é"})
    );
}
