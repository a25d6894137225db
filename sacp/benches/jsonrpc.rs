//! Throughput of `sacp::jsonrpc` on one core: both connections run on one current-thread
//! Tokio runtime, so every figure includes both ends' work.
//!
//! ```text
//! cargo bench -p sacp-sdk --bench jsonrpc            # full run
//! cargo bench -p sacp-sdk --bench jsonrpc -- 0.1     # a tenth of the work (smoke run)
//! ```
//!
//! Reports, over the in-process channel transport and over a pair of OS pipes:
//! - sequential round trips per second (one request in flight);
//! - requests per second with 64 in flight;
//! - notifications per second (N notifications, then a request whose response is delivered
//!   only after all N were handled, so the figure counts handled notifications, not queued ones).

#![allow(clippy::print_stdout, missing_docs)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use sacp::jsonrpc::{
    ByteStream, Connection, JsonRpcNotification, JsonRpcRequest, Methods, Transport, channel,
};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
struct Ping {
    session_id: String,
    n: u64,
}
impl JsonRpcRequest for Ping {
    const METHOD: &'static str = "bench/ping";
    type Response = u64;
}

/// Shaped like an ACP `session/update` agent message chunk.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Update {
    session_id: String,
    update: Chunk,
}
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Chunk {
    session_update: String,
    content: Text,
}
#[derive(Serialize, Deserialize)]
struct Text {
    r#type: String,
    text: String,
}
impl JsonRpcNotification for Update {
    const METHOD: &'static str = "session/update";
}

struct Ends {
    client: Connection,
    handled: Arc<AtomicU64>,
    _server: Connection,
}

fn ends<T: Transport, U: Transport>(a: T, b: U) -> Ends {
    let handled = Arc::new(AtomicU64::new(0));
    let counter = handled.clone();
    let server = Connection::builder().name("server").spawn(
        a,
        Methods::new()
            .on_request(|p: Ping, _cx| async move { Ok(p.n) })
            .on_notification(move |_: Update, _cx| {
                counter.fetch_add(1, Ordering::Relaxed);
                async { Ok(()) }
            }),
    );
    let client = Connection::builder()
        .name("client")
        .spawn(b, Methods::new());
    Ends {
        client,
        handled,
        _server: server,
    }
}

fn channel_ends() -> Ends {
    let (a, b) = channel();
    ends(a, b)
}

fn pipe_ends() -> Ends {
    use tokio::net::unix::pipe;
    let (to_server_tx, to_server_rx) = pipe::pipe().expect("pipe");
    let (to_client_tx, to_client_rx) = pipe::pipe().expect("pipe");
    ends(
        ByteStream::new(to_server_rx, to_client_tx),
        ByteStream::new(to_client_rx, to_server_tx),
    )
}

async fn round_trips(e: &Ends, count: u64) -> f64 {
    let start = Instant::now();
    for n in 0..count {
        let got = e
            .client
            .request(Ping {
                session_id: "sess_1".into(),
                n,
            })
            .await
            .expect("ping");
        assert_eq!(got, n);
    }
    count as f64 / start.elapsed().as_secs_f64()
}

async fn in_flight(e: &Ends, count: u64, window: usize) -> f64 {
    let start = Instant::now();
    let mut pending = std::collections::VecDeque::with_capacity(window);
    for n in 0..count {
        if pending.len() == window {
            let p: sacp::jsonrpc::PendingResponse<u64> = pending.pop_front().unwrap();
            p.await.expect("ping");
        }
        pending.push_back(e.client.request(Ping {
            session_id: "sess_1".into(),
            n,
        }));
    }
    for p in pending {
        p.await.expect("ping");
    }
    count as f64 / start.elapsed().as_secs_f64()
}

async fn notifications(e: &Ends, count: u64) -> f64 {
    let before = e.handled.load(Ordering::Relaxed);
    let start = Instant::now();
    for _ in 0..count {
        let update = Update {
            session_id: "sess_1".into(),
            update: Chunk {
                session_update: "agent_message_chunk".into(),
                content: Text {
                    r#type: "text".into(),
                    text: "Hello, world! ".into(),
                },
            },
        };
        e.client.notify(update).await.expect("notify");
    }
    e.client
        .request(Ping {
            session_id: "sess_1".into(),
            n: 0,
        })
        .await
        .expect("barrier");
    let elapsed = start.elapsed();
    assert_eq!(
        e.handled.load(Ordering::Relaxed) - before,
        count,
        "notifications lost"
    );
    count as f64 / elapsed.as_secs_f64()
}

fn main() {
    let scale: f64 = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(1.0);
    let n = |base: u64| ((base as f64 * scale) as u64).max(100);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        println!(
            "sacp::jsonrpc on one core (both ends on one current-thread runtime), scale {scale}"
        );
        println!(
            "{:<10} {:>16} {:>22} {:>18}",
            "transport", "round trips/s", "requests/s (64 in flight)", "notifications/s"
        );
        for (name, make) in [
            ("channel", channel_ends as fn() -> Ends),
            ("pipe", pipe_ends),
        ] {
            let e = make();
            // Warm up allocators and buffers.
            round_trips(&e, n(2_000)).await;
            notifications(&e, n(20_000)).await;
            let rt_s = best(3, || round_trips(&e, n(20_000))).await;
            let inflight = best(3, || in_flight(&e, n(100_000), 64)).await;
            let notif = best(3, || notifications(&e, n(500_000))).await;
            println!("{name:<10} {rt_s:>16.0} {inflight:>22.0} {notif:>18.0}");
        }
    });
    // Let the runtime wind the connections down before exiting.
    rt.shutdown_timeout(Duration::from_millis(100));
}

/// The best of `runs` measurements (the least disturbed by the rest of the machine).
async fn best<F, Fut>(runs: usize, mut f: F) -> f64
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = f64>,
{
    let mut best: f64 = 0.0;
    for _ in 0..runs {
        best = best.max(f().await);
    }
    best
}
