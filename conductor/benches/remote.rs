//! ACP over the network against stdio: the same client driving the test agent (a release
//! build, a real process) over its stdin/stdout, over one WebSocket and over one Streamable
//! HTTP connection on loopback (`test-agent --listen`), measured in the same run.
//!
//! ```text
//! cargo bench -p sacp-chain --bench remote            # full run
//! cargo bench -p sacp-chain --bench remote -- 0.2     # a fifth of the work (smoke run)
//! cargo bench -p sacp-chain --bench remote -- busy    # with two busy loops beside it
//! ```
//!
//! For each hop it reports:
//! - **latency**: sequential one-chunk prompts on one session, p50 and p99 of the round trip;
//! - **prompts/s**: one-chunk prompts with 16 in flight on 16 sessions;
//! - **updates/s**: sequential prompts of 1,000 updates each, on one session.
//!
//! The hops are measured in rounds, the order of the three rotating from round to round, and
//! each network figure is compared with the stdio figure of the same round; the ratios' median
//! is what the goals are judged by (WebSocket p50 ≤ 1.5x stdio, updates/s ≥ 70 % of stdio).
//! The client is `sacp`'s own connection (`sacp::remote::Remote` for the network),
//! counting every update it gets.
//!
//! `busy` starts two busy loops (one per core here) for the whole run: the cost of the network
//! transports when the machine has other work.

#![allow(clippy::print_stdout, clippy::print_stderr, missing_docs)]

use sacp_test_support::processes;

use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use sacp::jsonrpc::{ByteStream, Connection, Methods, RawJson};
use sacp::remote::Remote;
use tokio::io::AsyncBufReadExt;
use tokio::process::{Child, Command};
use tokio::sync::Notify;

const TOKEN: &str = "bench";
const IN_FLIGHT: usize = 16;
const UPDATES_PER_PROMPT: u64 = 1000;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Hop {
    Stdio,
    WebSocket,
    Http,
}

impl Hop {
    fn name(self) -> &'static str {
        match self {
            Hop::Stdio => "stdio",
            Hop::WebSocket => "WebSocket",
            Hop::Http => "Streamable HTTP",
        }
    }
}

#[derive(Debug, Default, Clone, Copy)]
struct Figures {
    p50: Duration,
    p99: Duration,
    prompts_per_s: f64,
    updates_per_s: f64,
}

/// Every update the client got.
#[derive(Default)]
struct Counter {
    updates: AtomicU64,
    changed: Notify,
}

/// A client connection to the agent over `hop`, and its update counter.
struct Client {
    conn: Connection,
    counter: Arc<Counter>,
    _child: Option<Child>,
}

impl Client {
    async fn start(hop: Hop, agent: &str, url: &str) -> Client {
        let counter = Arc::new(Counter::default());
        let methods = {
            let counter = counter.clone();
            Methods::new().on_raw_notification("session/update", move |_params, _cx| {
                counter.updates.fetch_add(1, Ordering::Relaxed);
                counter.changed.notify_waiters();
                async { Ok(()) }
            })
        };
        let builder = Connection::builder().name("agent");
        let (conn, child) = match hop {
            Hop::Stdio => {
                let mut child = Command::new(agent)
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .kill_on_drop(true)
                    .spawn()
                    .expect("the test agent starts");
                let transport =
                    ByteStream::new(child.stdout.take().unwrap(), child.stdin.take().unwrap());
                (builder.spawn(transport, methods), Some(child))
            }
            Hop::WebSocket | Hop::Http => {
                let url = if hop == Hop::WebSocket {
                    url.replacen("http", "ws", 1)
                } else {
                    url.to_owned()
                };
                let transport = Remote::new(url)
                    .header("Authorization", &format!("Bearer {TOKEN}"))
                    .unwrap()
                    .connect()
                    .await
                    .expect("the server is reachable");
                (builder.spawn(transport, methods), None)
            }
        };
        let init = r#"{"protocolVersion":1,"clientCapabilities":{}}"#;
        conn.request_raw("initialize", Some(RawJson::from_string(init).unwrap()))
            .await
            .expect("initialize");
        Client {
            conn,
            counter,
            _child: child,
        }
    }

    async fn session(&self) -> String {
        let params = RawJson::from_string(r#"{"cwd":"/tmp","mcpServers":[]}"#).unwrap();
        let answer = self
            .conn
            .request_raw("session/new", Some(params))
            .await
            .unwrap();
        answer.parse::<serde_json::Value>().unwrap()["sessionId"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    async fn prompt(&self, session: &str, text: &str) {
        let params =
            serde_json::json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]});
        let params = RawJson::to_raw(&params).unwrap();
        self.conn
            .request_raw("session/prompt", Some(params))
            .await
            .expect("the prompt is answered");
    }

    /// Waits until `n` updates came in all.
    async fn updates_reach(&self, n: u64) {
        loop {
            let changed = self.counter.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if self.counter.updates.load(Ordering::Relaxed) >= n {
                return;
            }
            changed.await;
        }
    }
}

async fn measure(hop: Hop, agent: &str, url: &str, scale: f64) -> Figures {
    let client = Client::start(hop, agent, url).await;
    let session = client.session().await;
    // Latency: one chunk per prompt, one at a time.
    let samples = ((2000.0 * scale) as usize).max(50);
    let mut times = Vec::with_capacity(samples);
    for _ in 0..20 {
        client.prompt(&session, "x").await;
    }
    for _ in 0..samples {
        let started = Instant::now();
        client.prompt(&session, "x").await;
        times.push(started.elapsed());
    }
    times.sort();
    let (p50, p99) = (times[times.len() / 2], times[times.len() * 99 / 100]);
    // Prompts/s: 16 sessions, one prompt in flight on each.
    let mut sessions = Vec::new();
    for _ in 0..IN_FLIGHT {
        sessions.push(client.session().await);
    }
    let per_session = ((400.0 * scale) as usize).max(20);
    let started = Instant::now();
    let runs = sessions.iter().map(|s| {
        let client = &client;
        async move {
            for _ in 0..per_session {
                client.prompt(s, "x").await;
            }
        }
    });
    futures_util::future::join_all(runs).await;
    let prompts_per_s = (IN_FLIGHT * per_session) as f64 / started.elapsed().as_secs_f64();
    // Updates/s: prompts of 1,000 updates, one at a time.
    let prompts = ((40.0 * scale) as u64).max(4);
    let before = client.counter.updates.load(Ordering::Relaxed);
    let started = Instant::now();
    for _ in 0..prompts {
        client
            .prompt(&session, &format!("stream {UPDATES_PER_PROMPT}"))
            .await;
    }
    client
        .updates_reach(before + prompts * UPDATES_PER_PROMPT)
        .await;
    let updates_per_s = (prompts * UPDATES_PER_PROMPT) as f64 / started.elapsed().as_secs_f64();
    client.conn.close();
    let _ = client.conn.closed().await;
    Figures {
        p50,
        p99,
        prompts_per_s,
        updates_per_s,
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(|a, b| a.total_cmp(b));
    values[values.len() / 2]
}

fn main() {
    let scale = processes::scale();
    let busy = std::env::args().any(|a| a == "busy");
    // `SACP_BENCH_AGENT`: a test agent already built (for a profiler's runs).
    let agent = match std::env::var("SACP_BENCH_AGENT") {
        Ok(agent) => agent,
        Err(_) => {
            let dir =
                sacp_examples::bins::built(&["sacp-examples"]).expect("the test agent builds");
            dir.join("test-agent").to_string_lossy().into_owned()
        }
    };
    let _loops = busy.then(|| processes::BusyLoops::start(2));
    processes::block_on(async move {
        let mut server = Command::new(&agent)
            .args(["--listen", "127.0.0.1:0", "--token", TOKEN])
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("the test agent listens");
        let mut lines = tokio::io::BufReader::new(server.stdout.take().unwrap()).lines();
        let url = lines.next_line().await.unwrap().expect("its URL");
        let rounds = 5;
        let hops = [Hop::Stdio, Hop::WebSocket, Hop::Http];
        // `latency-only=ws` (or `stdio`, `http`): just that hop's latency loop, for a profiler.
        if let Some(only) =
            std::env::args().find_map(|a| a.strip_prefix("latency-only=").map(str::to_owned))
        {
            let hop = match only.as_str() {
                "stdio" => Hop::Stdio,
                "ws" => Hop::WebSocket,
                _ => Hop::Http,
            };
            let client = Client::start(hop, &agent, &url).await;
            let session = client.session().await;
            let started = Instant::now();
            let mut n = 0u64;
            while started.elapsed() < Duration::from_secs(10) {
                client.prompt(&session, "x").await;
                n += 1;
            }
            println!("{}: {:.1} µs per prompt", hop.name(), 10e6 / n as f64);
            return;
        }
        let mut figures: Vec<Vec<(Hop, Figures)>> = Vec::new();
        for round in 0..rounds {
            let mut measured = Vec::new();
            for i in 0..hops.len() {
                let hop = hops[(i + round) % hops.len()];
                measured.push((
                    hop,
                    measure(hop, &agent, &url, scale / rounds as f64 * 2.0).await,
                ));
            }
            eprintln!(
                "round {round}: {}",
                measured
                    .iter()
                    .map(|(h, f)| format!(
                        "{} p50 {:.1} µs, {:.0} prompts/s, {:.0} updates/s",
                        h.name(),
                        f.p50.as_secs_f64() * 1e6,
                        f.prompts_per_s,
                        f.updates_per_s
                    ))
                    .collect::<Vec<_>>()
                    .join("; ")
            );
            figures.push(measured);
        }
        report(&figures, &hops, rounds, busy);
        let _ = server.kill().await;
    });
}

/// The table of every hop's medians and its ratios to stdio, and the goals.
fn report(figures: &[Vec<(Hop, Figures)>], hops: &[Hop], rounds: usize, busy: bool) {
    let of = |round: &[(Hop, Figures)], hop: Hop| round.iter().find(|(h, _)| *h == hop).unwrap().1;
    println!(
        "ACP over the network against stdio ({rounds} rounds, the order rotating{}):",
        if busy {
            ", two busy loops beside it"
        } else {
            ""
        }
    );
    println!(
        "{:<16} {:>10} {:>10} {:>12} {:>12}   {:>8} {:>10} {:>10}",
        "hop", "p50 µs", "p99 µs", "prompts/s", "updates/s", "p50 x", "prompts x", "updates x"
    );
    for &hop in hops {
        let p50 = median(
            figures
                .iter()
                .map(|r| of(r, hop).p50.as_secs_f64() * 1e6)
                .collect(),
        );
        let p99 = median(
            figures
                .iter()
                .map(|r| of(r, hop).p99.as_secs_f64() * 1e6)
                .collect(),
        );
        let prompts = median(figures.iter().map(|r| of(r, hop).prompts_per_s).collect());
        let updates = median(figures.iter().map(|r| of(r, hop).updates_per_s).collect());
        let ratio = |f: &dyn Fn(&Figures) -> f64| {
            median(
                figures
                    .iter()
                    .map(|r| f(&of(r, hop)) / f(&of(r, Hop::Stdio)))
                    .collect(),
            )
        };
        let p50_x = ratio(&|f| f.p50.as_secs_f64());
        let prompts_x = ratio(&|f| f.prompts_per_s);
        let updates_x = ratio(&|f| f.updates_per_s);
        println!(
            "{:<16} {p50:>10.1} {p99:>10.1} {prompts:>12.0} {updates:>12.0}   {p50_x:>7.2}x {prompts_x:>9.2}x {updates_x:>9.2}x",
            hop.name()
        );
    }
    let ws = |f: &dyn Fn(&Figures) -> f64| {
        median(
            figures
                .iter()
                .map(|r| f(&of(r, Hop::WebSocket)) / f(&of(r, Hop::Stdio)))
                .collect(),
        )
    };
    let p50_x = ws(&|f| f.p50.as_secs_f64());
    let updates_x = ws(&|f| f.updates_per_s);
    let met = |ok: bool| if ok { "met" } else { "NOT met" };
    println!(
        "goals: WebSocket p50 {p50_x:.2}x stdio (≤ 1.5x: {}), WebSocket updates/s {:.0}% of stdio (≥ 70%: {})",
        met(p50_x <= 1.5),
        updates_x * 100.0,
        met(updates_x >= 0.7)
    );
}
