//! Soak: a million messages through `conductor agent` with three pass-through proxies, both
//! ways at once, with random cancellations; every message checked, memory sampled throughout.
//!
//! ```text
//! cargo bench -p sacp-chain --bench soak            # 1,000,000 messages
//! cargo bench -p sacp-chain --bench soak -- 0.1     # a tenth
//! ```
//!
//! Three kinds of traffic run side by side, on sessions of their own:
//! - **up**: prompts `stream 500 60` (each update checked: all there, in order, before the
//!   answer);
//! - **down**: echo prompts carrying 300 bytes of numbered text, 16 in flight (each answer
//!   checked: its own text came back, once);
//! - **cancel**: prompts `sleep 20`, each at random cancelled with `session/cancel` (answer
//!   `cancelled`), with `$/cancel_request` (error `-32800`) or not at all (`end_turn`), after a
//!   random 0–30 ms; a cancel sent within 15 ms must win, a later one may come too late.
//!
//! The resident memory of every process is sampled each second; it must be flat: the last
//! sample of each process within 8 MiB of its sample at a quarter of the run. It ends with a
//! PASS/FAIL line per check (exit status 1 on a FAIL).

#![allow(clippy::print_stdout, missing_docs)]

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{ChildStdin, Command};
use tokio::sync::oneshot;

const FULL: u64 = 1_000_000;
const STREAM: u64 = 500;
const PATIENCE: Duration = Duration::from_secs(60);
const FLAT_KIB: u64 = 8 * 1024;
/// How often the memory of every process is sampled.
const SAMPLE_EVERY: Duration = Duration::from_secs(1);

use sacp_test_support::processes;

use processes::{children, rss_kib};

fn main() {
    if !processes::block_on(run(((FULL as f64) * processes::scale()) as u64)) {
        std::process::exit(1);
    }
}

#[derive(Default)]
struct State {
    next_id: u64,
    waiting: HashMap<u64, oneshot::Sender<Value>>,
    /// Per session: updates received during the current prompt, and whether they were in order.
    updates: HashMap<String, (u64, bool)>,
    /// Messages that belong to nothing the editor asked for.
    stray: u64,
}

#[derive(Clone)]
struct Editor {
    stdin: Arc<tokio::sync::Mutex<ChildStdin>>,
    state: Arc<Mutex<State>>,
    /// Messages that crossed the chain (each way), counted by the editor.
    messages: Arc<AtomicU64>,
}

impl Editor {
    async fn send(&self, message: Value) {
        let line = format!("{message}\n");
        self.stdin
            .lock()
            .await
            .write_all(line.as_bytes())
            .await
            .expect("the conductor reads");
        self.messages.fetch_add(1, Ordering::Relaxed);
    }

    /// Sends a request; returns its id and where its response will come.
    async fn start(&self, method: &str, params: Value) -> (u64, oneshot::Receiver<Value>) {
        let (tx, rx) = oneshot::channel();
        let id = {
            let mut state = self.state.lock().unwrap();
            state.next_id += 1;
            let id = state.next_id;
            state.waiting.insert(id, tx);
            id
        };
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        (id, rx)
    }

    async fn request(&self, method: &str, params: Value) -> Value {
        let (_, rx) = self.start(method, params).await;
        tokio::time::timeout(PATIENCE, rx)
            .await
            .expect("an answer in time")
            .expect("an answer")
    }

    async fn prompt(&self, session: &str, text: &str) -> Value {
        self.state
            .lock()
            .unwrap()
            .updates
            .insert(session.to_owned(), (0, true));
        self.request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]}),
        )
        .await
    }

    fn take_updates(&self, session: &str) -> (u64, bool) {
        self.state
            .lock()
            .unwrap()
            .updates
            .insert(session.to_owned(), (0, true))
            .unwrap_or((0, false))
    }

    fn on_line(&self, line: &str) {
        let message: Value = serde_json::from_str(line).expect("JSON from the conductor");
        self.messages.fetch_add(1, Ordering::Relaxed);
        let mut state = self.state.lock().unwrap();
        if message.get("method").is_some() {
            let session = message["params"]["sessionId"].as_str().unwrap_or_default();
            let text = message["params"]["update"]["content"]["text"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            match state.updates.get_mut(session) {
                Some((count, in_order)) => {
                    *count += 1;
                    if text.starts_with("chunk ") && !text.starts_with(&format!("chunk {count}.")) {
                        *in_order = false;
                    }
                }
                None => state.stray += 1,
            }
            return;
        }
        let id = message["id"].as_u64().expect("a numeric id of ours");
        match state.waiting.remove(&id) {
            Some(tx) => {
                let _ = tx.send(message);
            }
            None => state.stray += 1,
        }
    }
}

async fn run(total: u64) -> bool {
    let (mut child, editor, reader, sessions) = start().await;
    let conductor = child.id().expect("a pid");
    println!(
        "soak: {total} messages through 3 pass-through proxies, both ways, with cancellations\n"
    );
    let start = Instant::now();
    let watch = Watch {
        failures: Arc::default(),
        messages: editor.messages.clone(),
        total,
    };
    // Up: streams, checked update by update.
    let up = streams_up(editor.clone(), sessions[0].clone(), watch.clone());
    // Down: echoes, 16 in flight over 4 sessions.
    let down: Vec<_> = (0..16)
        .map(|lane| {
            echoes_down(
                editor.clone(),
                sessions[1 + lane % 4].clone(),
                lane,
                watch.clone(),
            )
        })
        .collect();
    // Cancellations: `sleep 20`, cancelled one way, the other, or not at all.
    let cancels = cancellations(editor.clone(), sessions[5].clone(), watch.clone());

    // Memory, each second, of every process.
    let mut samples: Vec<(u64, Vec<(String, u64)>)> = Vec::new();
    while !up.is_finished() || down.iter().any(|d| !d.is_finished()) || !cancels.is_finished() {
        tokio::time::sleep(SAMPLE_EVERY).await;
        let mut rss = vec![("conductor".to_owned(), rss_kib(conductor).unwrap_or(0))];
        for pid in children(conductor) {
            let name = processes::name(pid);
            rss.push((format!("{name} {pid}"), rss_kib(pid).unwrap_or(0)));
        }
        samples.push((editor.messages.load(Ordering::Relaxed), rss));
        if start.elapsed() > Duration::from_secs(900) {
            watch.fail("the soak did not finish within 15 minutes".into());
            break;
        }
    }
    let streams = up.await.unwrap_or(0);
    let mut echoes = 0;
    for d in down {
        echoes += d.await.unwrap_or(0);
    }
    let outcomes = cancels.await.unwrap_or_default();
    let messages = editor.messages.load(Ordering::Relaxed);
    let took = start.elapsed();
    drop(editor.stdin.lock().await);
    let _ = tokio::time::timeout(Duration::from_secs(5), child.wait()).await;
    reader.abort();

    let stray = editor.state.lock().unwrap().stray;
    println!(
        "{messages} messages in {took:.1?} ({:.0}/s): {streams} streams of {STREAM}, {echoes} echoes, \
         cancellations: {} session/cancel, {} $/cancel_request, {} left to finish",
        messages as f64 / took.as_secs_f64(),
        outcomes[0],
        outcomes[1],
        outcomes[2]
    );
    let flat = memory_flat(&samples);
    let failures = watch.failures.lock().unwrap().clone();
    for failure in &failures {
        println!("failure: {failure}");
    }
    let checks = [
        (
            "zero lost, late or reordered (every answer and update checked)",
            failures.is_empty() && stray == 0,
        ),
        (
            "memory flat (end within 8 MiB of a quarter in, every process)",
            flat,
        ),
    ];
    println!();
    let mut ok = true;
    for (what, passed) in checks {
        println!("{} {what}", if passed { "PASS" } else { "FAIL" });
        ok &= passed;
    }
    ok
}

/// What the soak's tasks share: the first failures, and whether to keep going.
#[derive(Clone)]
struct Watch {
    failures: Arc<Mutex<Vec<String>>>,
    messages: Arc<AtomicU64>,
    total: u64,
}

impl Watch {
    /// Notes a failure (the first ten are kept).
    fn fail(&self, what: String) {
        let mut failures = self.failures.lock().unwrap();
        if failures.len() < 10 {
            failures.push(what);
        }
    }

    /// Whether fewer than the soak's messages went through yet.
    fn keep_going(&self) -> bool {
        self.messages.load(Ordering::Relaxed) < self.total
    }
}

/// The conductor with three pass-through proxies and the test agent, initialized, with six
/// sessions; the task that reads its output.
async fn start() -> (
    tokio::process::Child,
    Editor,
    tokio::task::JoinHandle<()>,
    Vec<String>,
) {
    let dir = sacp_examples::bins::built(&["sacp-examples"]).expect("build the components");
    let proxy = dir.join("passthrough-proxy").to_string_lossy().into_owned();
    let mut args = vec!["agent".to_owned()];
    args.extend(std::iter::repeat_n(proxy, 3));
    args.push(dir.join("test-agent").to_string_lossy().into_owned());
    let mut child = Command::new(PathBuf::from(env!("CARGO_BIN_EXE_conductor")))
        .args(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("start the conductor");
    let editor = Editor {
        stdin: Arc::new(tokio::sync::Mutex::new(child.stdin.take().expect("stdin"))),
        state: Arc::default(),
        messages: Arc::default(),
    };
    let mut lines = BufReader::with_capacity(1 << 16, child.stdout.take().expect("stdout")).lines();
    let reader = {
        let editor = editor.clone();
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                editor.on_line(&line);
            }
        })
    };
    editor
        .request(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {}}),
        )
        .await;
    let mut sessions = Vec::new();
    for _ in 0..6 {
        let new = editor
            .request("session/new", json!({"cwd": "/tmp", "mcpServers": []}))
            .await;
        let session = new["result"]["sessionId"].as_str().unwrap().to_owned();
        editor
            .state
            .lock()
            .unwrap()
            .updates
            .insert(session.clone(), (0, true));
        sessions.push(session);
    }
    (child, editor, reader, sessions)
}

/// Streams on `session`, checked update by update; how many.
fn streams_up(editor: Editor, session: String, watch: Watch) -> tokio::task::JoinHandle<u64> {
    tokio::spawn(async move {
        let mut prompts = 0u64;
        while watch.keep_going() {
            let answer = editor
                .prompt(&session, &format!("stream {STREAM} 60"))
                .await;
            let (count, in_order) = editor.take_updates(&session);
            if answer["result"]["stopReason"] != "end_turn" || count != STREAM || !in_order {
                watch.fail(format!(
                    "stream {prompts}: {count} updates, in order {in_order}: {answer}"
                ));
            }
            prompts += 1;
        }
        prompts
    })
}

/// Echoes on `session` from lane `lane`, one at a time; how many.
fn echoes_down(
    editor: Editor,
    session: String,
    lane: usize,
    watch: Watch,
) -> tokio::task::JoinHandle<u64> {
    tokio::spawn(async move {
        let mut n = 0u64;
        while watch.keep_going() {
            let text = format!("echo {lane}-{n} {}", "d".repeat(300));
            let (_, rx) = editor
                .start(
                    "session/prompt",
                    json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]}),
                )
                .await;
            let answer = tokio::time::timeout(PATIENCE, rx)
                .await
                .ok()
                .and_then(Result::ok);
            if answer.as_ref().map(|a| &a["result"]["stopReason"]) != Some(&json!("end_turn")) {
                watch.fail(format!("echo {lane}-{n}: {answer:?}"));
            }
            n += 1;
        }
        n
    })
}

/// `sleep 20` prompts on `session`, cancelled with `session/cancel`, with `$/cancel_request`,
/// or left to finish, at random; how many of each.
fn cancellations(
    editor: Editor,
    session: String,
    watch: Watch,
) -> tokio::task::JoinHandle<[u64; 3]> {
    tokio::spawn(async move {
        let mut n = 0u64;
        let mut outcomes = [0u64; 3];
        let mut random = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move || {
            // xorshift64: random enough for a schedule, and the same every run.
            random ^= random << 13;
            random ^= random >> 7;
            random ^= random << 17;
            random
        };
        while watch.keep_going() {
            let (id, rx) = editor
                .start(
                    "session/prompt",
                    json!({"sessionId": session, "prompt": [{"type": "text", "text": "sleep 20"}]}),
                )
                .await;
            let how = next() % 3;
            let after = next() % 30;
            tokio::time::sleep(Duration::from_millis(after)).await;
            match how {
                0 => editor.send(json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}})).await,
                1 => editor.send(json!({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": id}})).await,
                _ => {}
            }
            let answer = tokio::time::timeout(PATIENCE, rx)
                .await
                .ok()
                .and_then(Result::ok);
            let finished = |a: &Value| a["result"]["stopReason"] == "end_turn";
            let ok = match (how, &answer) {
                (0, Some(a)) => {
                    a["result"]["stopReason"] == "cancelled" || (after >= 15 && finished(a))
                }
                (1, Some(a)) => a["error"]["code"] == -32800 || (after >= 15 && finished(a)),
                (_, Some(a)) => finished(a),
                (_, None) => false,
            };
            if !ok {
                watch.fail(format!("cancel {n} ({how}): {answer:?}"));
            }
            outcomes[how as usize] += 1;
            n += 1;
        }
        outcomes
    })
}

/// Whether every process's RSS at the end is within [`FLAT_KIB`] of its RSS a quarter in,
/// printing both.
fn memory_flat(samples: &[(u64, Vec<(String, u64)>)]) -> bool {
    let quarter = samples.get(samples.len() / 4).cloned();
    let last = samples.last().cloned();
    let (Some((_, first)), Some((_, last))) = (&quarter, &last) else {
        return false;
    };
    println!("\n| process | RSS at a quarter | RSS at the end |");
    println!("|---|---|---|");
    let mut flat = true;
    for (name, end) in last {
        let early = first.iter().find(|(n, _)| n == name).map_or(0, |(_, k)| *k);
        println!(
            "| {name} | {:.1} MiB | {:.1} MiB |",
            early as f64 / 1024.0,
            *end as f64 / 1024.0
        );
        flat &= *end <= early + FLAT_KIB;
    }
    flat
}
