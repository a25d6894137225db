//! Acceptance 3: order is kept, nothing is lost.

use std::sync::atomic::Ordering;

use crate::common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_thousand_notifications_then_the_response_arrive_in_order() {
    for kind in KINDS {
        let p = pair(kind);
        let count = 100_000;
        let n = within("the stream's response", p.a.request(Stream { count }))
            .await
            .unwrap();
        assert_eq!(n, count);
        // The response is delivered only after everything sent before it was handled.
        assert_eq!(
            p.seen_a.ticks.load(Ordering::SeqCst),
            count,
            "{kind:?}: ticks lost or late"
        );
        assert_eq!(
            p.seen_a.out_of_order.load(Ordering::SeqCst),
            0,
            "{kind:?}: ticks out of order"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notifications_sent_before_a_request_are_handled_before_it() {
    let p = pair(Kind::Duplex);
    for seq in 0..10_000 {
        p.a.notify(Tick { seq }).await.unwrap();
    }
    // The request's handler runs after all ticks, so by the time it answers they are counted.
    within(
        "echo after ticks",
        p.a.request(Echo(serde_json::json!([1]))),
    )
    .await
    .unwrap();
    assert_eq!(p.seen_b.ticks.load(Ordering::SeqCst), 10_000);
    assert_eq!(p.seen_b.out_of_order.load(Ordering::SeqCst), 0);
}
