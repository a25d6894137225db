//! Acceptance 5: when the peer goes away, every pending request fails promptly with the
//! "peer closed" error; nothing hangs.

use std::time::Duration;

use serde_json::json;
use tokio::task::JoinSet;

use crate::common::*;

const PROMPTLY: Duration = Duration::from_secs(1);

async fn all_fail_promptly(mut set: JoinSet<sacp::jsonrpc::Result<()>>, expected: usize) {
    let mut failed = 0;
    let all = async {
        while let Some(joined) = set.join_next().await {
            let err = joined.unwrap().unwrap_err();
            assert!(err.is_peer_closed(), "{err}");
            failed += 1;
        }
    };
    tokio::time::timeout(PROMPTLY, all)
        .await
        .expect("pending requests did not fail within 1 s");
    assert_eq!(failed, expected);
}

#[tokio::test]
async fn the_peers_stream_ending_fails_every_pending_request() {
    let (conn, mut peer, _) = raw_peer_of(None);
    let mut set = JoinSet::new();
    for _ in 0..50 {
        let pending = conn.request(Hang {});
        set.spawn(async move { pending.await });
    }
    for _ in 0..50 {
        peer.recv().await;
    }
    peer.close_writing().await;
    all_fail_promptly(set, 50).await;
    // Later requests fail at once too.
    let err = within("a request after close", conn.request(Double { n: 1 }))
        .await
        .unwrap_err();
    assert!(err.is_peer_closed(), "{err}");
    assert!(err.message.contains("under-test"), "{err}");
    // Once the connection has wound down, a notification fails too, naming the peer.
    within("the connection to end", conn.closed())
        .await
        .expect("a clean end of stream");
    let err = within("a notification after close", conn.notify(Tick { seq: 0 }))
        .await
        .unwrap_err();
    assert!(err.is_peer_closed(), "{err}");
}

#[tokio::test]
async fn a_peer_that_vanishes_fails_every_pending_request() {
    let (conn, mut peer, _) = raw_peer_of(None);
    let mut set = JoinSet::new();
    for _ in 0..20 {
        let pending = conn.request(Hang {});
        set.spawn(async move { pending.await });
    }
    peer.recv().await;
    drop(peer);
    all_fail_promptly(set, 20).await;
    // The end of the peer's stream came first: a clean end.
    within("the connection to end", conn.closed())
        .await
        .unwrap();
}

#[tokio::test]
async fn closing_a_connection_cancels_what_it_was_handling() {
    for kind in KINDS {
        let p = pair(kind);
        let mut set = JoinSet::new();
        for _ in 0..20 {
            let pending = p.a.request(Hang {});
            set.spawn(async move { pending.await });
        }
        p.seen_b.hangs_started.reaches(20, "hangs to start").await;
        p.b.close();
        let all = async {
            while let Some(joined) = set.join_next().await {
                assert_eq!(joined.unwrap().unwrap_err().code, -32800, "{kind:?}");
            }
        };
        tokio::time::timeout(PROMPTLY, all)
            .await
            .expect("cancelled requests did not fail within 1 s");
        p.seen_b
            .hangs_dropped
            .reaches(20, "the handlers to stop")
            .await;
        within("b to end", p.b.closed()).await.unwrap();
        // The peer's stream ending is a clean end.
        within("a to end", p.a.closed())
            .await
            .unwrap_or_else(|e| panic!("{kind:?}: {e}"));
    }
}

#[tokio::test]
async fn a_closed_channel_fails_every_pending_request() {
    let p = pair(Kind::Channel);
    let mut set = JoinSet::new();
    for _ in 0..20 {
        let pending = p.a.request(Hang {});
        set.spawn(async move { pending.await });
    }
    p.b.close();
    all_fail_promptly(set, 20).await;
    within("a to close", p.a.closed())
        .await
        .expect("the peer's stream ending is a clean end");
}

#[tokio::test]
async fn answers_are_still_written_after_the_peers_stream_ends() {
    // Like `printf '<request>' | agent`: the input ends, the answer must still go out.
    let (conn, mut peer, _) = raw_peer_of(None);
    peer.send(r#"{"jsonrpc":"2.0","id":1,"method":"test/double","params":{"n":5}}"#)
        .await;
    peer.close_writing().await;
    assert_eq!(
        peer.recv().await,
        json!({"jsonrpc":"2.0","id":1,"result":10})
    );
    assert_eq!(
        peer.recv_or_end().await,
        None,
        "the connection closes its output at the end"
    );
    within("close", conn.closed()).await.unwrap();
}
