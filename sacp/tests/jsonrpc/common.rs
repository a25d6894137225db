//! A small test protocol, a service that implements it, and helpers.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use sacp::jsonrpc::{
    ByteStream, Connection, Error, JsonRpcNotification, JsonRpcRequest, Methods, Transport, channel,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, ReadHalf, WriteHalf};

pub use crate::patience::{Tally, within};

#[derive(Serialize, Deserialize, Debug, PartialEq)]
pub struct Echo(pub Value);
impl JsonRpcRequest for Echo {
    const METHOD: &'static str = "test/echo";
    type Response = Value;
}

#[derive(Serialize, Deserialize, Debug)]
pub struct Double {
    pub n: u64,
}
impl JsonRpcRequest for Double {
    const METHOD: &'static str = "test/double";
    type Response = u64;
}

/// The handler asks its peer to double `n` and answers that plus one.
#[derive(Serialize, Deserialize, Debug)]
pub struct AskBack {
    pub n: u64,
}
impl JsonRpcRequest for AskBack {
    const METHOD: &'static str = "test/ask_back";
    type Response = u64;
}

/// The handler sends `count` `Tick`s, then answers `count`.
#[derive(Serialize, Deserialize, Debug)]
pub struct Stream {
    pub count: u64,
}
impl JsonRpcRequest for Stream {
    const METHOD: &'static str = "test/stream";
    type Response = u64;
}

/// Never answered: the handler waits until it is cancelled.
#[derive(Serialize, Deserialize, Debug)]
pub struct Hang {}
impl JsonRpcRequest for Hang {
    const METHOD: &'static str = "test/hang";
    type Response = ();
}

/// Always fails with `-32000` and data.
#[derive(Serialize, Deserialize, Debug)]
pub struct Fail {}
impl JsonRpcRequest for Fail {
    const METHOD: &'static str = "test/fail";
    type Response = ();
}

#[derive(Serialize, Deserialize, Debug)]
pub struct Tick {
    pub seq: u64,
}
impl JsonRpcNotification for Tick {
    const METHOD: &'static str = "test/tick";
}

/// What a service saw.
#[derive(Default, Debug)]
pub struct Seen {
    pub ticks: AtomicU64,
    /// Counts ticks that arrived out of order.
    pub out_of_order: AtomicUsize,
    pub tick_events: Tally,
    pub hangs_started: Tally,
    pub hangs_dropped: Tally,
}

struct OnDrop(Arc<Seen>);
impl Drop for OnDrop {
    fn drop(&mut self) {
        self.0.hangs_dropped.add();
    }
}

/// The test service: every side of every test runs one.
pub fn service(seen: Arc<Seen>) -> Methods {
    let ticks = seen.clone();
    let hangs = seen.clone();
    Methods::new()
        .on_request(|Echo(v), _cx| async move { Ok(v) })
        .on_request(|d: Double, _cx| async move { Ok(d.n * 2) })
        .on_request(|a: AskBack, cx: Connection| async move {
            Ok(cx.request(Double { n: a.n }).await? + 1)
        })
        .on_request(|s: Stream, cx: Connection| async move {
            for seq in 0..s.count {
                cx.notify(Tick { seq }).await?;
            }
            Ok(s.count)
        })
        .on_request(move |_: Hang, _cx| {
            let seen = hangs.clone();
            async move {
                seen.hangs_started.add();
                let _guard = OnDrop(seen);
                std::future::pending::<()>().await;
                Ok(())
            }
        })
        .on_request(|_: Fail, _cx| async move {
            Err(Error::new(-32000, "it failed on purpose")
                .with_data(serde_json::json!({"why": "test"})))
        })
        .on_notification(move |t: Tick, _cx| {
            let seen = ticks.clone();
            async move {
                let before = seen.ticks.fetch_add(1, Ordering::SeqCst);
                if before != t.seq {
                    seen.out_of_order.fetch_add(1, Ordering::SeqCst);
                }
                seen.tick_events.add();
                Ok(())
            }
        })
}

/// Two connections, each running the test service, over the given transports.
pub struct Pair {
    pub a: Connection,
    pub b: Connection,
    pub seen_a: Arc<Seen>,
    pub seen_b: Arc<Seen>,
}

pub fn pair_over<T: Transport, U: Transport>(ta: T, tb: U) -> Pair {
    let seen_a = Arc::new(Seen::default());
    let seen_b = Arc::new(Seen::default());
    Pair {
        a: Connection::builder()
            .name("a")
            .spawn(ta, service(seen_a.clone())),
        b: Connection::builder()
            .name("b")
            .spawn(tb, service(seen_b.clone())),
        seen_a,
        seen_b,
    }
}

/// The transports every behaviour is checked over.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    Channel,
    Duplex,
}

pub const KINDS: [Kind; 2] = [Kind::Channel, Kind::Duplex];

pub fn pair(kind: Kind) -> Pair {
    match kind {
        Kind::Channel => {
            let (x, y) = channel();
            pair_over(x, y)
        }
        Kind::Duplex => {
            let (x, y) = tokio::io::duplex(64 * 1024);
            pair_over(ByteStream::duplex(x), ByteStream::duplex(y))
        }
    }
}

/// The far end of a byte stream, driven line by line by the test.
pub struct RawPeer {
    lines: tokio::io::Lines<BufReader<ReadHalf<DuplexStream>>>,
    writer: WriteHalf<DuplexStream>,
}

impl RawPeer {
    pub async fn send(&mut self, line: &str) {
        self.send_bytes(line.as_bytes()).await;
    }

    pub async fn send_bytes(&mut self, bytes: &[u8]) {
        within("writing to the connection", async {
            self.writer.write_all(bytes).await.unwrap();
            self.writer.write_all(b"\n").await.unwrap();
            self.writer.flush().await.unwrap();
        })
        .await
    }

    /// The next message the connection wrote.
    pub async fn recv(&mut self) -> Value {
        let line = self.recv_line().await;
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    /// The next line, as it was written.
    pub async fn recv_line(&mut self) -> String {
        within("a line from the connection", self.lines.next_line())
            .await
            .unwrap()
            .expect("the connection closed its output")
    }

    /// `None` at the end of the connection's output.
    pub async fn recv_or_end(&mut self) -> Option<Value> {
        let line = within("a line or the end", self.lines.next_line())
            .await
            .unwrap()?;
        Some(serde_json::from_str(&line).unwrap())
    }

    /// Closes the test's writing side: the connection reads end of stream.
    pub async fn close_writing(&mut self) {
        self.writer.shutdown().await.unwrap();
    }
}

/// A connection running the test service, and the raw far end of its byte stream.
pub fn raw_peer_of(max_line: Option<usize>) -> (Connection, RawPeer, Arc<Seen>) {
    let (ours, theirs) = tokio::io::duplex(1 << 20);
    let mut transport = ByteStream::duplex(ours);
    if let Some(max) = max_line {
        transport = transport.max_line_length(max);
    }
    let seen = Arc::new(Seen::default());
    let conn = Connection::builder()
        .name("under-test")
        .spawn(transport, service(seen.clone()));
    let (r, w) = tokio::io::split(theirs);
    (
        conn,
        RawPeer {
            lines: BufReader::new(r).lines(),
            writer: w,
        },
        seen,
    )
}
