//! Taking a session back: how long a `session/load` of a detached session takes to bring its
//! history back, against `conductor agent --listen` (release builds, the test agent).
//!
//! ```text
//! cargo bench -p sacp-chain --bench sessions            # 10,000 kept updates, 20 loads
//! cargo bench -p sacp-chain --bench sessions -- 0.1     # 1,000 kept updates
//! cargo bench -p sacp-chain --bench sessions -- busy    # beside two busy loops
//! ```
//!
//! A client over WebSocket opens a session, streams N updates in it (`stream N`, the session's
//! record keeps them all: about 1.2 MB for 10,000) and leaves. Then, 20 times, a new connection
//! loads the session and leaves again: from the `session/load` sent to the first replayed update
//! received, to the last one, and to the load's answer (p50 and max of the 20).

#![allow(clippy::print_stdout, missing_docs)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use sacp::jsonrpc::{Connection, Methods, RawJson};
use sacp::remote::Remote;
use sacp_test_support::processes::{self, BusyLoops};
use tokio::sync::Notify;

const TOKEN: &str = "s3ssions";
const LOADS: usize = 20;

/// Every update a client got, and when the first came.
#[derive(Default)]
struct Seen {
    updates: AtomicU64,
    first: std::sync::Mutex<Option<Instant>>,
    changed: Notify,
}

async fn client(url: &str, seen: Arc<Seen>) -> Connection {
    let methods = Methods::new().on_raw_notification("session/update", move |_params, _cx| {
        let seen = seen.clone();
        async move {
            seen.first.lock().unwrap().get_or_insert_with(Instant::now);
            seen.updates.fetch_add(1, Ordering::Relaxed);
            seen.changed.notify_waiters();
            Ok(())
        }
    });
    let transport = Remote::new(url)
        .header("Authorization", &format!("Bearer {TOKEN}"))
        .unwrap()
        .connect()
        .await
        .expect("the conductor is reachable");
    let conn = Connection::builder()
        .name("editor")
        .spawn(transport, methods);
    let init = r#"{"protocolVersion":1,"clientCapabilities":{}}"#;
    conn.request_raw("initialize", Some(RawJson::from_string(init).unwrap()))
        .await
        .expect("initialize");
    conn
}

fn raw(value: serde_json::Value) -> Option<RawJson> {
    Some(RawJson::to_raw(&value).unwrap())
}

fn main() {
    let scale = processes::scale();
    let busy = std::env::args().any(|a| a == "busy");
    let kept = ((10_000.0 * scale) as u64).max(100);
    let dir = sacp_examples::bins::built(&["sacp-examples"]).expect("the test agent builds");
    let _loops = busy.then(|| BusyLoops::start(2));
    processes::block_on(async move {
        let token =
            std::env::temp_dir().join(format!("sacp-bench-sessions-{}", std::process::id()));
        std::fs::write(&token, TOKEN).unwrap();
        let mut server = tokio::process::Command::new(env!("CARGO_BIN_EXE_conductor"))
            .args([
                "agent",
                "--listen",
                "127.0.0.1:0",
                "--no-journal",
                "--listen-token-file",
            ])
            .arg(&token)
            .arg(dir.join("test-agent"))
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("the conductor starts");
        let mut lines = tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(
            server.stdout.take().unwrap(),
        ));
        let url = lines.next_line().await.unwrap().expect("the URL");
        let ws = url.replacen("http", "ws", 1);

        // The session, its updates, and the client leaving.
        let first = client(&ws, Arc::default()).await;
        let answer = first
            .request_raw(
                "session/new",
                raw(serde_json::json!({"cwd": "/tmp", "mcpServers": []})),
            )
            .await
            .unwrap();
        let session = answer.parse::<serde_json::Value>().unwrap()["sessionId"]
            .as_str()
            .unwrap()
            .to_owned();
        let prompt = serde_json::json!({
            "sessionId": session,
            "prompt": [{"type": "text", "text": format!("stream {kept}")}],
        });
        first
            .request_raw("session/prompt", raw(prompt))
            .await
            .unwrap();
        first.close();
        let _ = first.closed().await;

        // Each load: the prompt's text and the updates come back.
        let expected = kept + 1;
        let (mut to_first, mut to_last, mut to_answer) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..LOADS {
            let seen = Arc::new(Seen::default());
            let conn = client(&ws, seen.clone()).await;
            let load = serde_json::json!({"sessionId": session, "cwd": "/tmp", "mcpServers": []});
            let start = Instant::now();
            conn.request_raw("session/load", raw(load)).await.unwrap();
            to_answer.push(start.elapsed());
            replayed(&seen, expected).await;
            to_last.push(start.elapsed());
            let first = seen.first.lock().unwrap().expect("an update came");
            to_first.push(first - start);
            conn.close();
            let _ = conn.closed().await;
        }
        let report = |what: &str, times: &mut Vec<Duration>| {
            times.sort();
            println!(
                "  {what}: p50 {:.2} ms, max {:.2} ms",
                times[times.len() / 2].as_secs_f64() * 1e3,
                times[times.len() - 1].as_secs_f64() * 1e3
            );
        };
        println!(
            "session/load of a detached session with {kept} kept updates, {LOADS} loads over \
             WebSocket{}:",
            if busy { ", beside two busy loops" } else { "" }
        );
        report("to the first replayed update", &mut to_first);
        report("to the load's answer (after the replay)", &mut to_answer);
        report("to the last replayed update", &mut to_last);
        let _ = server.kill().await;
        let _ = std::fs::remove_file(&token);
    });
}

/// Waits until `expected` updates were replayed to `seen`'s client.
async fn replayed(seen: &Seen, expected: u64) {
    loop {
        let changed = seen.changed.notified();
        tokio::pin!(changed);
        changed.as_mut().enable();
        if seen.updates.load(Ordering::Relaxed) >= expected {
            break;
        }
        tokio::time::timeout(Duration::from_secs(60), changed)
            .await
            .expect("the replay goes on");
    }
}
