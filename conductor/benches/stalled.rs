//! Memory while the editor stops reading: 1M updates through `conductor agent` with three
//! prompt-handling, update-transforming proxies (`prefix-proxy`), while the editor reads nothing
//! for 10 s, then everything.
//!
//! ```text
//! cargo bench -p sacp-chain --bench stalled            # 1,000,000 updates, 10 s stall
//! cargo bench -p sacp-chain --bench stalled -- 0.1     # a tenth of the updates, 1 s stall
//! ```
//!
//! Every process is real (release builds), talking over pipes. It reports the peak RSS
//! (`VmHWM`) of the conductor, each proxy and the agent, checks that every update arrived,
//! transformed, in order and before the answer, and ends with a PASS/FAIL line per target
//! (exit status 1 on a FAIL): nothing lost or out of order, every process under 64 MiB.

#![allow(clippy::print_stdout, missing_docs)]

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde::Deserialize;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;

const FULL_UPDATES: u64 = 1_000_000;
const FULL_STALL: Duration = Duration::from_secs(10);
const RSS_LIMIT_KIB: u64 = 64 * 1024;

use sacp_test_support::processes;

use processes::{children, peak_rss_kib};

fn main() {
    if !processes::block_on(run(processes::scale())) {
        std::process::exit(1);
    }
}

#[derive(Deserialize)]
struct Line {
    id: Option<u64>,
    method: Option<String>,
    params: Option<Params>,
}

#[derive(Deserialize)]
struct Params {
    update: Update,
}

#[derive(Deserialize)]
struct Update {
    content: Content,
}

#[derive(Deserialize)]
struct Content {
    text: String,
}

async fn run(scale: f64) -> bool {
    let updates = ((FULL_UPDATES as f64 * scale) as u64).max(1000);
    let stall = FULL_STALL.mul_f64(scale.min(1.0));
    let dir = sacp_examples::bins::built(&["sacp-examples"]).expect("build the components");
    let proxy = dir.join("prefix-proxy").to_string_lossy().into_owned();
    let mut args = vec!["agent".to_owned()];
    args.extend(std::iter::repeat_n(format!("{proxy} '+'"), 3));
    args.push(dir.join("test-agent").to_string_lossy().into_owned());
    println!(
        "stalled editor: {updates} updates through 3 prefix-proxies, the editor reads nothing \
         for {stall:?}\n"
    );

    let mut child = Command::new(PathBuf::from(env!("CARGO_BIN_EXE_conductor")))
        .args(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("start the conductor");
    let conductor = child.id().expect("a pid");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut lines = BufReader::with_capacity(1 << 16, child.stdout.take().expect("stdout")).lines();
    let script = [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}"#.to_owned(),
        format!(
            r#"{{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{{"sessionId":"session-1","prompt":[{{"type":"text","text":"stream {updates} 100"}}]}}}}"#
        ),
    ];
    for line in &script[..2] {
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
        lines.next_line().await.unwrap().expect("an answer");
    }
    let start = Instant::now();
    stdin
        .write_all(format!("{}\n", script[2]).as_bytes())
        .await
        .unwrap();
    tokio::time::sleep(stall).await;

    let (seen, wrong) = read_to_the_answer(&mut lines).await;
    let took = start.elapsed();
    let peak = |pid| peak_rss_kib(pid).unwrap_or(0);
    let mut peaks = vec![("conductor".to_owned(), peak(conductor))];
    for pid in children(conductor) {
        peaks.push((format!("{} ({pid})", processes::name(pid)), peak(pid)));
    }
    drop(stdin);
    let _ = tokio::time::timeout(Duration::from_secs(5), child.wait()).await;

    println!("| process | peak RSS |");
    println!("|---|---|");
    for (name, kib) in &peaks {
        println!("| {name} | {:.1} MiB |", *kib as f64 / 1024.0);
    }
    println!(
        "\n{seen} updates in {took:.1?} (with the stall), {:.0} updates/s once reading",
        seen as f64 / (took - stall).as_secs_f64()
    );
    let checks = [
        (
            "every update arrived, transformed, in order, before the answer".to_owned(),
            seen == updates && wrong == 0,
        ),
        (
            format!("every process under {} MiB", RSS_LIMIT_KIB / 1024),
            peaks.len() == 5 && peaks.iter().all(|(_, kib)| *kib < RSS_LIMIT_KIB),
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

/// Reads the chain's output to the prompt's answer: how many updates came, and how many lines
/// were not the next update, transformed.
async fn read_to_the_answer(
    lines: &mut tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
) -> (u64, u64) {
    let (mut seen, mut wrong) = (0u64, 0u64);
    loop {
        let line = tokio::time::timeout(Duration::from_secs(120), lines.next_line())
            .await
            .expect("the chain keeps streaming")
            .unwrap()
            .expect("the chain is running");
        let line: Line = serde_json::from_str(&line).expect("a JSON-RPC message");
        if line.id == Some(3) {
            break;
        }
        if line.method.as_deref() != Some("session/update") {
            wrong += 1;
            continue;
        }
        seen += 1;
        let text = line
            .params
            .map(|p| p.update.content.text)
            .unwrap_or_default();
        if !text.starts_with(&format!("+++chunk {seen}.")) {
            wrong += 1;
        }
    }
    (seen, wrong)
}
