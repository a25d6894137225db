//! The conductor on the hot path: an editor driving `conductor agent` with N pass-through
//! proxies and the test agent, against the same editor driving the test agent directly,
//! measured in the same run.
//!
//! ```text
//! cargo bench -p sacp-chain --bench chain            # full run
//! cargo bench -p sacp-chain --bench chain -- 0.1     # a tenth of the work (smoke run)
//! cargo bench -p sacp-chain --bench chain -- 0.3 runs=3  # 3 interleaved runs, medians
//! cargo bench -p sacp-chain --bench chain -- 0.1 only=in-process  # direct + matching rows
//! ```
//!
//! Every process is real (release builds, cargo-built), talking over pipes. For each chain
//! (direct, then N = 0, 1, 3, 5) it reports:
//! - **latency**: sequential one-chunk prompts on one session, p50 and p99 of the round trip;
//! - **throughput**: one-chunk prompts with 64 in flight on 64 sessions, prompts per second;
//! - **notifications**: sequential prompts of 100 `agent_message_chunk` updates each, updates
//!   per second, with 1 open session and with 256 (prompts cycle over all of them); every
//!   update is checked: `lost` counts updates missing when their prompt's response arrived,
//!   `late` updates that arrived after it or out of order (both must be 0);
//! - **peak RSS** (`VmHWM`) of the conductor, the largest pass-through proxy, the agent, and
//!   the conductor and its proxies together (the tree); and the tree's private memory
//!   (`RssAnon`, after the run), the part of its RSS that is not the executables' and
//!   libraries' pages, which every process of the same binary counts again;
//! - **CPU µs and read/write syscalls per update**, per process, while streaming.
//!
//! With `SACP_BENCH_BASELINE=DIR` (the `target/release` of another build), a row `N = 3
//! baseline` runs N = 3 with that build's conductor, proxies and agent: a change against the
//! code before it, in the same run.
//!
//! A row `N = 3 traced` runs N = 3 with `--trace FILE` (no payloads, no viewer page open). The
//! cost of the trace file is then measured in interleaved rounds (two untraced chains and a
//! traced one side by side, started afresh a dozen times, see `trace_cost`), which the VM's
//! swings from row to row do not blur; the second untraced chain is the control, what the
//! noise alone gives. `only=traced` runs that alone (with `direct` and the traced row). A row `N = 1 typed` runs one typed proxy (`prefix-proxy`: every prompt and update read into
//! its type, each chunk rewritten, written losslessly), the cost of typed handling.
//! A last row runs N = 3 pass-through proxies *inside* the conductor's process
//! (`examples/one_binary.rs`, `Chain::proxy`) with the agent as a process. The table ends with
//! the performance goals (N = 3 against direct) met or not.
//!
//! The editor parses every line it reads (the envelope, and each update's text), like a real
//! editor would; it runs on one thread, as do the conductor and the components.

#![allow(clippy::print_stdout, missing_docs)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::oneshot;

const UPDATES_PER_PROMPT: u64 = 100;
const IN_FLIGHT: usize = 64;
const MANY_SESSIONS: usize = 256;
const PATIENCE: Duration = Duration::from_secs(120);

/// What one chain measured.
#[derive(Debug, Default, Clone)]
struct Figures {
    p50: Duration,
    p99: Duration,
    prompts_per_s: f64,
    updates_per_s_1: f64,
    updates_per_s_256: f64,
    lost: u64,
    late: u64,
    rss_conductor_kib: Option<u64>,
    rss_proxy_kib: Option<u64>,
    rss_agent_kib: Option<u64>,
    /// The conductor's and the proxies' peak RSS, summed.
    rss_tree_kib: Option<u64>,
    /// The conductor's and the proxies' `RssAnon` after the run, summed.
    anon_tree_kib: Option<u64>,
    /// Per process (name), during the 1-session streaming run: CPU µs and syscalls per update.
    costs: Vec<(String, f64, f64)>,
}

#[path = "support/processes.rs"]
mod processes;

use processes::{peak_rss_kib, process_tree, status_kib, usage};

fn main() {
    processes::block_on(run(processes::scale()));
}

async fn run(scale: f64) {
    let dir = sacp_examples::bins::built(&["sacp-examples"]).expect("build the test components");
    let agent = dir.join("test-agent");
    let proxy = dir.join("passthrough-proxy");
    let conductor = PathBuf::from(env!("CARGO_BIN_EXE_conductor"));
    let counts = Counts::scaled(scale);
    let runs = runs();
    println!(
        "chain benchmark: {} latency prompts, {} throughput prompts ({IN_FLIGHT} in flight), \
         {} streaming prompts x {UPDATES_PER_PROMPT} updates; {runs} run(s), medians\n",
        counts.latency, counts.throughput, counts.streaming
    );

    let one_binary = built_example("one_binary");
    let mut runs_rows: Vec<Vec<(String, Figures)>> = Vec::new();
    for run in 1..=runs {
        let mut rows = Vec::new();
        let direct = measure(&counts, &agent, &[], None).await;
        rows.push(("direct".to_owned(), direct));
        for n in [0, 1, 3, 5] {
            if !wanted(&format!("N = {n}")) {
                continue;
            }
            let mut args = vec!["agent".to_owned()];
            args.extend(std::iter::repeat_n(proxy.to_string_lossy().into_owned(), n));
            args.push(agent.to_string_lossy().into_owned());
            let figures = measure(&counts, &conductor, &args, Some(n)).await;
            rows.push((format!("N = {n}"), figures));
        }
        // N = 3 again, with `--trace` (no payloads, no viewer page): the cost of tracing.
        if wanted("N = 3 traced") {
            let trace =
                std::env::temp_dir().join(format!("sacp-bench-trace-{}.jsonl", std::process::id()));
            let mut args = vec![
                "agent".to_owned(),
                "--trace".to_owned(),
                trace.to_string_lossy().into_owned(),
            ];
            args.extend(std::iter::repeat_n(proxy.to_string_lossy().into_owned(), 3));
            args.push(agent.to_string_lossy().into_owned());
            let figures = measure(&counts, &conductor, &args, Some(3)).await;
            let _ = std::fs::remove_file(&trace);
            rows.push(("N = 3 traced".to_owned(), figures));
        }
        // N = 3 with another build's conductor, proxies and agent (`SACP_BENCH_BASELINE=DIR`,
        // a `target/release` of an earlier commit, say): the same chain before a change,
        // measured in the same run.
        if let Some(base) = std::env::var_os("SACP_BENCH_BASELINE").map(PathBuf::from)
            && wanted("N = 3 baseline")
        {
            let mut args = vec!["agent".to_owned()];
            let base_proxy = base
                .join("passthrough-proxy")
                .to_string_lossy()
                .into_owned();
            args.extend(std::iter::repeat_n(base_proxy, 3));
            args.push(base.join("test-agent").to_string_lossy().into_owned());
            let figures = measure(&counts, &base.join("conductor"), &args, Some(3)).await;
            rows.push(("N = 3 baseline".to_owned(), figures));
        }
        // One typed proxy: `prefix-proxy` reads every prompt and every update into its type
        // and rewrites each chunk's text; what it sends is written losslessly.
        if wanted("N = 1 typed") {
            let args = [
                "agent".to_owned(),
                format!("{} '» '", proxy.with_file_name("prefix-proxy").display()),
                agent.to_string_lossy().into_owned(),
            ];
            let figures = measure(&counts, &conductor, &args, Some(1)).await;
            rows.push(("N = 1 typed".to_owned(), figures));
        }
        // Three pass-through proxies inside the conductor's process, the agent a process.
        if wanted("N = 3 in-process") {
            let args = ["3".to_owned(), agent.to_string_lossy().into_owned()];
            let figures = measure(&counts, &one_binary, &args, Some(3)).await;
            rows.push(("N = 3 in-process".to_owned(), figures));
        }
        if runs > 1 {
            let d = &rows[0].1;
            let line: Vec<String> = rows
                .iter()
                .skip(1)
                .map(|(name, f)| {
                    format!(
                        "{name}: p50 {:.2}x, prompts/s {:.0}%, updates/s {:.0}%",
                        f.p50.as_secs_f64() / d.p50.as_secs_f64(),
                        100.0 * f.prompts_per_s / d.prompts_per_s,
                        100.0 * f.updates_per_s_1 / d.updates_per_s_1
                    )
                })
                .collect();
            println!("run {run}: {}", line.join("; "));
        }
        runs_rows.push(rows);
    }
    if runs > 1 {
        println!();
    }
    // The cost of the trace file, in pairs (see `trace_cost`).
    let trace_cost = if wanted("N = 3 traced") {
        Some(trace_cost(&counts, &conductor, &proxy, &agent).await)
    } else {
        None
    };
    let rows = medians(&runs_rows);
    let direct = rows[0].1.clone();

    println!(
        "| chain | p50 latency | p99 latency | p50 vs direct | prompts/s (64 in flight) | vs direct \
         | updates/s, 1 session | vs direct | updates/s, 256 sessions | 256 vs 1 | lost / late \
         | RSS conductor | RSS proxy (max) | RSS agent | tree RSS (conductor + proxies) \
         | tree private (RssAnon) |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for (name, f) in &rows {
        println!(
            "| {name} | {} | {} | {:.2}x | {:.0} | {:.0}% | {:.0} | {:.0}% | {:.0} | {:.0}% | {} / {} | {} | {} | {} | {} | {} |",
            micros(f.p50),
            micros(f.p99),
            f.p50.as_secs_f64() / direct.p50.as_secs_f64(),
            f.prompts_per_s,
            100.0 * f.prompts_per_s / direct.prompts_per_s,
            f.updates_per_s_1,
            100.0 * f.updates_per_s_1 / direct.updates_per_s_1,
            f.updates_per_s_256,
            100.0 * f.updates_per_s_256 / f.updates_per_s_1,
            f.lost,
            f.late,
            mib(f.rss_conductor_kib),
            mib(f.rss_proxy_kib),
            mib(f.rss_agent_kib),
            mib(f.rss_tree_kib),
            mib(f.anon_tree_kib),
        );
    }

    println!(
        "\nCost per update while streaming on 1 session (CPU time / read+write syscalls, by process):"
    );
    for (name, f) in &rows {
        let costs: Vec<String> = f
            .costs
            .iter()
            .map(|(process, cpu, calls)| format!("{process} {cpu:.2} µs / {calls:.2}"))
            .collect();
        println!("- {name}: {}", costs.join(", "));
    }

    if let Some(cost) = &trace_cost {
        cost.report();
    }
    let row = |wanted: &str| rows.iter().find(|(name, _)| name == wanted).map(|(_, f)| f);
    if let (Some(now), Some(base)) = (row("N = 3"), row("N = 3 baseline")) {
        println!(
            "\nThis build against the baseline at N = 3 (this / baseline, this run): {}",
            ratios(now, base)
        );
    }
    if let (Some((_, plain)), Some((_, typed))) = (
        rows.iter().find(|(name, _)| name == "N = 1"),
        rows.iter().find(|(name, _)| name == "N = 1 typed"),
    ) {
        println!(
            "\nOne typed hop against one pass-through (N = 1 typed / N = 1, this run): prompts/s \
             {:.3}x, updates/s {:.3}x (1 session), p50 {:.3}x",
            typed.prompts_per_s / plain.prompts_per_s,
            typed.updates_per_s_1 / plain.updates_per_s_1,
            typed.p50.as_secs_f64() / plain.p50.as_secs_f64(),
        );
    }
    let (Some((_, n3)), Some((_, in_process))) = (
        rows.iter().find(|(name, _)| name == "N = 3"),
        rows.iter().find(|(name, _)| name == "N = 3 in-process"),
    ) else {
        // A partial run (`only=`): no goals, no checks.
        return;
    };
    let ratio = |f: &Figures| f.p50.as_secs_f64() / direct.p50.as_secs_f64();
    println!("\nThe performance issue's goals (N = 3, ratios to direct in this run):");
    let goals = [
        (
            "p50 latency <= 8x",
            ratio(n3) <= 8.0,
            format!("{:.2}x", ratio(n3)),
        ),
        (
            "prompts/s >= 15%",
            n3.prompts_per_s >= 0.15 * direct.prompts_per_s,
            format!("{:.0}%", 100.0 * n3.prompts_per_s / direct.prompts_per_s),
        ),
        (
            "updates/s >= 25%",
            n3.updates_per_s_1 >= 0.25 * direct.updates_per_s_1,
            format!(
                "{:.0}%",
                100.0 * n3.updates_per_s_1 / direct.updates_per_s_1
            ),
        ),
        (
            "tree RSS (conductor + 3 proxies) <= 12 MiB",
            n3.rss_tree_kib.is_some_and(|k| k <= 12 * 1024),
            format!(
                "{} (private memory: {})",
                mib(n3.rss_tree_kib),
                mib(n3.anon_tree_kib)
            ),
        ),
        (
            "in-process: p50 latency <= 3x",
            ratio(in_process) <= 3.0,
            format!("{:.2}x", ratio(in_process)),
        ),
        (
            "in-process: updates/s >= 60%",
            in_process.updates_per_s_1 >= 0.60 * direct.updates_per_s_1,
            format!(
                "{:.0}%",
                100.0 * in_process.updates_per_s_1 / direct.updates_per_s_1
            ),
        ),
    ];
    for (what, met, measured) in goals {
        println!(
            "{} {what}: {measured}",
            if met { "met    " } else { "not met" }
        );
    }
    let checks = [
        (
            "p50 latency at N = 3 <= 15x direct",
            n3.p50.as_secs_f64() <= 15.0 * direct.p50.as_secs_f64(),
        ),
        (
            "throughput at N = 3 >= 10% of direct",
            n3.prompts_per_s >= 0.10 * direct.prompts_per_s,
        ),
        (
            "updates/s at N = 3 >= 15% of direct",
            n3.updates_per_s_1 >= 0.15 * direct.updates_per_s_1,
        ),
        (
            "updates/s at N = 3 with 256 sessions >= 80% of 1 session",
            n3.updates_per_s_256 >= 0.80 * n3.updates_per_s_1,
        ),
        (
            "no update lost or late, any chain",
            rows.iter().all(|(_, f)| f.lost == 0 && f.late == 0),
        ),
        (
            "conductor RSS <= 8 MiB, any chain",
            rows.iter()
                .all(|(_, f)| f.rss_conductor_kib.is_none_or(|k| k <= 8 * 1024)),
        ),
        (
            "pass-through proxy RSS <= 4 MiB, any chain",
            rows.iter()
                // (`N = 1 typed` runs a typed proxy, not a pass-through; `N = 3 traced` the
                // same proxies with a trace file.)
                .filter(|(name, _)| !name.contains("typed") && !name.contains("traced"))
                .all(|(_, f)| f.rss_proxy_kib.is_none_or(|k| k <= 4 * 1024)),
        ),
    ];
    println!();
    let mut failed = false;
    for (what, ok) in checks {
        println!("{} {what}", if ok { "PASS" } else { "FAIL" });
        failed |= !ok;
    }
    if failed {
        std::process::exit(1);
    }
}

/// The cost of `--trace` is measured in this many generations of chains, each measured in
/// [`ROUNDS`] rounds.
const GENERATIONS: usize = 12;
const ROUNDS: usize = 12;

/// The chains of [`trace_cost`]: untraced, traced, and untraced again (the control).
const CHAINS: [(&str, bool); 3] = [("untraced", false), ("traced", true), ("control", false)];

/// The orders of three: a round measures its chains in one, a generation starts them in one.
const ORDERS: [[usize; 3]; 6] = [
    [0, 1, 2],
    [1, 2, 0],
    [2, 0, 1],
    [0, 2, 1],
    [2, 1, 0],
    [1, 0, 2],
];

/// What one chain did in the rounds of [`trace_cost`], summed.
#[derive(Debug, Default, Clone, Copy)]
struct Slices {
    updates_1: f64,
    /// CPU ns of the conductor (all its threads), and of it and its components, while
    /// streaming on 1 session.
    conductor_ns: f64,
    tree_ns: f64,
}

/// The cost of `--trace` at N = 3: each chain's sums, and for each generation the rates
/// (prompts/s, updates/s with 1 and with 256 sessions) of each chain in each round.
#[derive(Debug, Default)]
struct TraceCost {
    sums: [Slices; 3],
    generations: Vec<Vec<[[f64; 3]; 3]>>,
}

/// The cost of `--trace` at N = 3, measured interleaved. Three chains run side by side, each
/// idle while another is measured: untraced, traced, and a second untraced one, the control.
/// The measures are cut into rounds of a few tens of milliseconds; a round measures each
/// chain in turn, in an order that goes through all six. The VM's swings last seconds, so
/// they fall on all three alike.
///
/// Two things remain, and the control measures both (the two untraced chains differ by them
/// alone): the noise from one round to the next, often 15%, and the luck of a chain's
/// processes (where they run, where their memory lies): two untraced chains started side by
/// side can differ by 5% for as long as they live. So the chains are started afresh for each
/// of [`GENERATIONS`] generations, and the report gives each ratio with a 95% interval drawn
/// from the generations' spread, the control's next to it.
async fn trace_cost(counts: &Counts, conductor: &Path, proxy: &Path, agent: &Path) -> TraceCost {
    let trace =
        std::env::temp_dir().join(format!("sacp-bench-rounds-{}.jsonl", std::process::id()));
    let chain = |traced: bool| {
        let mut args = vec!["agent".to_owned()];
        if traced {
            args.extend(["--trace".to_owned(), trace.to_string_lossy().into_owned()]);
        }
        args.extend(std::iter::repeat_n(proxy.to_string_lossy().into_owned(), 3));
        args.push(agent.to_string_lossy().into_owned());
        args
    };
    // A round's share of the rows' work: its throughput part takes a few tens of ms.
    let prompts = (counts.throughput / 10).max(IN_FLIGHT);
    let streamed = (counts.streaming / 20).max(1);
    let updates = (streamed as u64 * UPDATES_PER_PROMPT) as f64;
    let mut cost = TraceCost::default();
    for generation in 0..GENERATIONS {
        let mut chains: [Option<(BenchEditor, Vec<String>)>; 3] = Default::default();
        for which in ORDERS[generation % ORDERS.len()] {
            let editor = BenchEditor::initialized(conductor, &chain(CHAINS[which].1)).await;
            let mut sessions = Vec::new();
            while sessions.len() < MANY_SESSIONS {
                sessions.push(editor.new_session().await);
            }
            for _ in 0..counts.warmup {
                editor.prompt(&sessions[0], "hi").await;
            }
            chains[which] = Some((editor, sessions));
        }
        let chains = chains.map(|c| c.expect("every chain is started"));
        let mut rounds = Vec::new();
        for round in 0..ROUNDS {
            let mut rates = [[0.0; 3]; 3];
            for which in ORDERS[round % ORDERS.len()] {
                let (editor, sessions) = &chains[which];
                let sums = &mut cost.sums[which];
                let cpu = || {
                    let conductor = usage(editor.pid()).map_or(0, |u| u.0);
                    let components: u64 = process_tree(editor.pid())
                        .iter()
                        .filter_map(|(pid, _)| usage(*pid))
                        .map(|u| u.0)
                        .sum();
                    (conductor, conductor + components)
                };
                let start = Instant::now();
                throughput(editor, &sessions[..IN_FLIGHT], prompts).await;
                let done = prompts.div_ceil(IN_FLIGHT) as f64 * IN_FLIGHT as f64;
                rates[which][0] = done / start.elapsed().as_secs_f64();

                let before = cpu();
                let start = Instant::now();
                stream(editor, &sessions[..1], streamed).await;
                let secs = start.elapsed().as_secs_f64();
                let after = cpu();
                sums.updates_1 += updates;
                sums.conductor_ns += (after.0 - before.0) as f64;
                sums.tree_ns += (after.1 - before.1) as f64;
                rates[which][1] = updates / secs;

                let start = Instant::now();
                stream(editor, sessions, streamed).await;
                rates[which][2] = updates / start.elapsed().as_secs_f64();
            }
            rounds.push(rates);
        }
        cost.generations.push(rounds);
        for (name, (editor, _)) in CHAINS.iter().map(|c| c.0).zip(chains) {
            let (lost, late) = editor.losses();
            assert_eq!(
                (lost, late),
                (0, 0),
                "updates lost or late in the trace rounds ({name} chain)"
            );
            editor.close().await;
        }
        let _ = std::fs::remove_file(&trace);
    }
    cost
}

/// A round's traced / untraced ratio of measure `i`: against both untraced chains.
fn traced_ratio(round: &[[f64; 3]; 3], i: usize) -> f64 {
    round[1][i] / (round[0][i] * round[2][i]).sqrt()
}

/// A round's control / untraced ratio of measure `i`: what the noise alone gives.
fn control_ratio(round: &[[f64; 3]; 3], i: usize) -> f64 {
    round[2][i] / round[0][i]
}

/// The geometric mean of `ratios` (a generation's rounds' each) and its 95% interval, drawn
/// from the spread of the generations' own geometric means (Student's t).
fn mean_and_interval(ratios: &[Vec<f64>]) -> (f64, f64, f64) {
    let logs: Vec<f64> = ratios
        .iter()
        .map(|g| g.iter().map(|r| r.ln()).sum::<f64>() / g.len() as f64)
        .collect();
    let n = logs.len() as f64;
    let mean = logs.iter().sum::<f64>() / n;
    let variance = logs.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
    // t(0.975) for n - 1 degrees of freedom (from 11 on, near enough).
    let t = match logs.len() {
        0..=2 => 12.71,
        3 => 4.30,
        4 => 3.18,
        5 => 2.78,
        6 => 2.57,
        7 => 2.45,
        8 => 2.36,
        9 => 2.31,
        10 => 2.26,
        11 => 2.23,
        _ => 2.20,
    };
    let half = t * (variance / n).sqrt();
    (mean.exp(), (mean - half).exp(), (mean + half).exp())
}

impl TraceCost {
    fn report(&self) {
        let of = |i: usize, ratio: fn(&[[f64; 3]; 3], usize) -> f64| -> Vec<Vec<f64>> {
            self.generations
                .iter()
                .map(|g| g.iter().map(|r| ratio(r, i)).collect())
                .collect()
        };
        let figure = |i: usize| {
            let (t, t_lo, t_hi) = mean_and_interval(&of(i, traced_ratio));
            let (c, c_lo, c_hi) = mean_and_interval(&of(i, control_ratio));
            format!(
                "{t:.3}x (95% interval {t_lo:.3}–{t_hi:.3}); control {c:.3}x ({c_lo:.3}–{c_hi:.3})"
            )
        };
        let per_update = |ns: f64, s: &Slices| ns / 1e3 / s.updates_1;
        let [u, t, c] = &self.sums;
        let untraced = |ns: fn(&Slices) -> f64| (ns(u) + ns(c)) / 1e3 / (u.updates_1 + c.updates_1);
        let tree_untraced = untraced(|s| s.tree_ns);
        println!(
            "\nThe cost of --trace at N = 3 ({} generations of chains, {} interleaved rounds \
             each; traced / untraced, as the geometric mean of the rounds' ratios; the control \
             is a second untraced chain against the first):\n\
             - prompts/s {}\n\
             - updates/s, 1 session {}\n\
             - updates/s, 256 sessions {}\n\
             - CPU per update, 1 session: the conductor (all its threads) {:.2} µs untraced, \
             {:.2} µs traced; it and its components {:.2} µs, {:.2} µs ({:.3}x)",
            self.generations.len(),
            ROUNDS,
            figure(0),
            figure(1),
            figure(2),
            untraced(|s| s.conductor_ns),
            per_update(t.conductor_ns, t),
            tree_untraced,
            per_update(t.tree_ns, t),
            per_update(t.tree_ns, t) / tree_untraced,
        );
        // The goal is on throughput, all three measures of it together: the least of three
        // noisy figures would be low on noise alone.
        let (all, all_lo, all_hi) = mean_and_interval(
            &self
                .generations
                .iter()
                .map(|g| {
                    g.iter()
                        .flat_map(|r| (0..3).map(|i| traced_ratio(r, i)))
                        .collect()
                })
                .collect::<Vec<_>>(),
        );
        println!(
            "- throughput, the three together: {all:.3}x (95% interval {all_lo:.3}–{all_hi:.3}); \
             the goal, it loses <= 5% with --trace: {}",
            if all >= 0.95 { "met" } else { "NOT met" },
        );
    }
}

/// Builds an example of this package with the running bench's profile; its path.
fn built_example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the bench's own path");
    let mut dir = exe.parent().expect("a directory").to_path_buf();
    if dir.ends_with("deps") {
        dir.pop();
    }
    let profile = dir
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("release")
        .to_owned();
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = std::process::Command::new(cargo);
    command.current_dir(env!("CARGO_MANIFEST_DIR")).args([
        "build",
        "--quiet",
        "-p",
        "sacp-chain",
        "--example",
        name,
    ]);
    match profile.as_str() {
        "debug" => {}
        "release" => {
            command.arg("--release");
        }
        other => {
            command.args(["--profile", other]);
        }
    }
    let status = command.status().expect("run cargo");
    assert!(status.success(), "cannot build the example {name}");
    dir.join("examples").join(name)
}

/// `a`'s throughput and p50 against `b`'s, for the summary lines.
fn ratios(a: &Figures, b: &Figures) -> String {
    format!(
        "prompts/s {:.3}x, updates/s {:.3}x (1 session), {:.3}x (256 sessions), p50 {:.3}x",
        a.prompts_per_s / b.prompts_per_s,
        a.updates_per_s_1 / b.updates_per_s_1,
        a.updates_per_s_256 / b.updates_per_s_256,
        a.p50.as_secs_f64() / b.p50.as_secs_f64(),
    )
}

/// Whether the row `name` is measured: all of them, unless `only=WORD,...` names some (by a
/// part of their name); `direct` always is.
fn wanted(name: &str) -> bool {
    match std::env::args().find_map(|a| a.strip_prefix("only=").map(str::to_owned)) {
        None => true,
        Some(only) => only.split(',').any(|part| name.contains(part)),
    }
}

/// How many times to run every chain (`runs=K` on the command line), 1 by default.
fn runs() -> usize {
    std::env::args()
        .find_map(|a| a.strip_prefix("runs=")?.parse().ok())
        .unwrap_or(1)
        .max(1)
}

/// Row by row, the median of each figure over the runs (the runs measured the same rows, in
/// the same order).
fn medians(runs: &[Vec<(String, Figures)>]) -> Vec<(String, Figures)> {
    fn median<T: Clone + PartialOrd>(mut values: Vec<T>) -> T {
        values.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
        values[values.len() / 2].clone()
    }
    (0..runs[0].len())
        .map(|row| {
            let all: Vec<&Figures> = runs.iter().map(|rows| &rows[row].1).collect();
            let of = |get: &dyn Fn(&Figures) -> f64| median(all.iter().map(|f| get(f)).collect());
            let kib = |get: &dyn Fn(&Figures) -> Option<u64>| {
                median(all.iter().map(|f| get(f)).collect())
            };
            let costs = all[0]
                .costs
                .iter()
                .enumerate()
                .map(|(i, (name, _, _))| {
                    let cost = |pick: fn(&(String, f64, f64)) -> f64| {
                        median(
                            all.iter()
                                .filter_map(|f| f.costs.get(i).map(pick))
                                .collect(),
                        )
                    };
                    (name.clone(), cost(|c| c.1), cost(|c| c.2))
                })
                .collect();
            let figures = Figures {
                p50: median(all.iter().map(|f| f.p50).collect()),
                p99: median(all.iter().map(|f| f.p99).collect()),
                prompts_per_s: of(&|f| f.prompts_per_s),
                updates_per_s_1: of(&|f| f.updates_per_s_1),
                updates_per_s_256: of(&|f| f.updates_per_s_256),
                lost: all.iter().map(|f| f.lost).sum(),
                late: all.iter().map(|f| f.late).sum(),
                rss_conductor_kib: kib(&|f| f.rss_conductor_kib),
                rss_proxy_kib: kib(&|f| f.rss_proxy_kib),
                rss_agent_kib: kib(&|f| f.rss_agent_kib),
                rss_tree_kib: kib(&|f| f.rss_tree_kib),
                anon_tree_kib: kib(&|f| f.anon_tree_kib),
                costs,
            };
            (runs[0][row].0.clone(), figures)
        })
        .collect()
}

fn micros(d: Duration) -> String {
    format!("{:.0} µs", d.as_secs_f64() * 1e6)
}

fn mib(kib: Option<u64>) -> String {
    kib.map_or_else(
        || "-".to_owned(),
        |k| format!("{:.1} MiB", k as f64 / 1024.0),
    )
}

struct Counts {
    warmup: usize,
    latency: usize,
    throughput: usize,
    streaming: usize,
}

impl Counts {
    fn scaled(scale: f64) -> Counts {
        let n = |full: f64| ((full * scale).round() as usize).max(10);
        Counts {
            warmup: n(200.0),
            latency: n(2000.0),
            throughput: n(12_800.0),
            streaming: n(400.0),
        }
    }
}

/// Runs every measure on a fresh `program args` (the editor's agent).
async fn measure(
    counts: &Counts,
    program: &Path,
    args: &[String],
    proxies: Option<usize>,
) -> Figures {
    let editor = BenchEditor::initialized(program, args).await;
    let first = editor.new_session().await;
    let mut figures = Figures::default();

    // Latency: sequential one-chunk prompts.
    for _ in 0..counts.warmup {
        editor.prompt(&first, "hi").await;
    }
    let mut times = Vec::with_capacity(counts.latency);
    for _ in 0..counts.latency {
        let start = Instant::now();
        editor.prompt(&first, "hi").await;
        times.push(start.elapsed());
    }
    times.sort();
    figures.p50 = times[times.len() / 2];
    figures.p99 = times[(times.len() * 99 / 100).min(times.len() - 1)];

    // Notifications with one open session.
    let mut processes = vec![(editor.pid(), "editor's peer".to_owned())];
    processes.extend(process_tree(editor.pid()));
    let before: Vec<_> = processes.iter().map(|(pid, _)| usage(*pid)).collect();
    figures.updates_per_s_1 = stream(&editor, std::slice::from_ref(&first), counts.streaming).await;
    let updates = (counts.streaming as u64 * UPDATES_PER_PROMPT) as f64;
    for ((pid, name), before) in processes.iter().zip(before) {
        if let (Some(b), Some(a)) = (before, usage(*pid)) {
            let cpu_us = (a.0 - b.0) as f64 / 1e3 / updates;
            let calls = (a.1 - b.1) as f64 / updates;
            figures.costs.push((name.clone(), cpu_us, calls));
        }
    }

    // Throughput: 64 sessions, a prompt in flight on each.
    let mut sessions = vec![first];
    while sessions.len() < IN_FLIGHT {
        sessions.push(editor.new_session().await);
    }
    figures.prompts_per_s = throughput(&editor, &sessions, counts.throughput).await;

    // Notifications with 256 open sessions.
    while sessions.len() < MANY_SESSIONS {
        sessions.push(editor.new_session().await);
    }
    figures.updates_per_s_256 = stream(&editor, &sessions, counts.streaming).await;

    let (lost, late) = editor.losses();
    figures.lost = lost;
    figures.late = late;
    let pids = process_tree(editor.pid());
    let rss = |pid: u32| peak_rss_kib(pid);
    match proxies {
        None => figures.rss_agent_kib = rss(editor.pid()),
        Some(_) => {
            let anon = |pid: u32| status_kib(pid, "RssAnon");
            figures.rss_conductor_kib = rss(editor.pid());
            figures.rss_tree_kib = figures.rss_conductor_kib;
            figures.anon_tree_kib = anon(editor.pid());
            for (pid, name) in pids {
                // (`comm` names are cut at 15 bytes.)
                if name.starts_with("passthrough") || name.starts_with("prefix") {
                    let proxy = rss(pid);
                    figures.rss_proxy_kib = figures.rss_proxy_kib.max(proxy);
                    figures.rss_tree_kib = figures.rss_tree_kib.zip(proxy).map(|(a, b)| a + b);
                    figures.anon_tree_kib =
                        figures.anon_tree_kib.zip(anon(pid)).map(|(a, b)| a + b);
                } else if name.starts_with("test-agent") {
                    figures.rss_agent_kib = rss(pid);
                }
            }
        }
    }
    editor.close().await;
    figures
}

/// About `prompts` one-chunk prompts, one in flight on each of `sessions` at a time; returns
/// prompts per second.
async fn throughput(editor: &BenchEditor, sessions: &[String], prompts: usize) -> f64 {
    let start = Instant::now();
    let per_session = prompts.div_ceil(sessions.len());
    let loops = sessions.iter().map(|session| {
        let editor = editor.clone();
        let session = session.clone();
        async move {
            for _ in 0..per_session {
                editor.prompt(&session, "hi").await;
            }
        }
    });
    futures_join_all(loops).await;
    (per_session * sessions.len()) as f64 / start.elapsed().as_secs_f64()
}

/// Sequential streaming prompts cycling over `sessions`; returns updates per second.
async fn stream(editor: &BenchEditor, sessions: &[String], prompts: usize) -> f64 {
    let text = format!("stream {UPDATES_PER_PROMPT}");
    let start = Instant::now();
    for i in 0..prompts {
        editor.prompt(&sessions[i % sessions.len()], &text).await;
    }
    (prompts as u64 * UPDATES_PER_PROMPT) as f64 / start.elapsed().as_secs_f64()
}

async fn futures_join_all<F: std::future::Future<Output = ()> + Send + 'static>(
    futures: impl Iterator<Item = F>,
) {
    let handles: Vec<_> = futures.map(tokio::spawn).collect();
    for handle in handles {
        handle.await.expect("a prompt loop panicked");
    }
}

/// The editor: writes requests, and a reader task routes every line it reads.
#[derive(Clone)]
struct BenchEditor {
    inner: Arc<Mutex<State>>,
    stdin: Arc<tokio::sync::Mutex<ChildStdin>>,
    child: Arc<Mutex<Option<Child>>>,
    pid: u32,
}

#[derive(Default)]
struct State {
    next_id: u64,
    /// The result of each request in flight, by id.
    pending: HashMap<u64, oneshot::Sender<Box<RawValue>>>,
    sessions: HashMap<String, Session>,
    lost: u64,
    late: u64,
}

#[derive(Default)]
struct Session {
    /// A prompt is in flight on it.
    busy: bool,
    /// Updates received during the current prompt.
    received: u64,
    /// What the current prompt expects: `Some(n)` for `stream n`.
    expecting: Option<u64>,
}

#[derive(Deserialize)]
struct Line<'a> {
    id: Option<u64>,
    #[serde(borrow)]
    method: Option<&'a str>,
    #[serde(borrow)]
    params: Option<&'a RawValue>,
    result: Option<Box<RawValue>>,
    #[serde(borrow)]
    error: Option<&'a RawValue>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct UpdateParams {
    session_id: String,
    update: UpdateBody,
}

#[derive(Deserialize)]
struct UpdateBody {
    content: Content,
}

#[derive(Deserialize)]
struct Content {
    text: String,
}

impl BenchEditor {
    fn start(program: &Path, args: &[String]) -> BenchEditor {
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("start {}: {e}", program.display()));
        let pid = child.id().expect("a pid");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let inner = Arc::new(Mutex::new(State::default()));
        let state = inner.clone();
        tokio::spawn(async move {
            let mut reader = BufReader::with_capacity(64 * 1024, stdout);
            let mut line = Vec::new();
            loop {
                line.clear();
                match reader.read_until(b'\n', &mut line).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => on_line(&state, &line),
                }
            }
        });
        BenchEditor {
            inner,
            stdin: Arc::new(tokio::sync::Mutex::new(stdin)),
            child: Arc::new(Mutex::new(Some(child))),
            pid,
        }
    }

    /// Starts `program args` and initializes it.
    async fn initialized(program: &Path, args: &[String]) -> BenchEditor {
        let editor = BenchEditor::start(program, args);
        editor
            .request(
                "initialize",
                r#"{"protocolVersion":1,"clientCapabilities":{}}"#.to_owned(),
            )
            .await;
        editor
    }

    fn pid(&self) -> u32 {
        self.pid
    }

    async fn request(&self, method: &str, params: String) -> Box<RawValue> {
        let (tx, rx) = oneshot::channel();
        let id = {
            let mut state = self.inner.lock().unwrap();
            state.next_id += 1;
            let id = state.next_id;
            state.pending.insert(id, tx);
            id
        };
        let line =
            format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{params}}}"#)
                + "\n";
        self.stdin
            .lock()
            .await
            .write_all(line.as_bytes())
            .await
            .expect("write to the agent");
        match tokio::time::timeout(PATIENCE, rx).await {
            Ok(Ok(result)) => result,
            Ok(Err(_)) => panic!("{method} failed (see the line above)"),
            Err(_) => panic!("{method} timed out"),
        }
    }

    async fn new_session(&self) -> String {
        let result = self
            .request(
                "session/new",
                r#"{"cwd":"/tmp","mcpServers":[]}"#.to_owned(),
            )
            .await;
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct New {
            session_id: String,
        }
        let new: New = serde_json::from_str(result.get()).expect("a session id");
        self.inner
            .lock()
            .unwrap()
            .sessions
            .insert(new.session_id.clone(), Session::default());
        new.session_id
    }

    async fn prompt(&self, session: &str, text: &str) {
        {
            let mut state = self.inner.lock().unwrap();
            let s = state.sessions.get_mut(session).expect("a known session");
            s.busy = true;
            s.received = 0;
            s.expecting = text.strip_prefix("stream ").and_then(|n| n.parse().ok());
        }
        let params =
            format!(r#"{{"sessionId":"{session}","prompt":[{{"type":"text","text":"{text}"}}]}}"#);
        self.request("session/prompt", params).await;
        let mut state = self.inner.lock().unwrap();
        let s = state.sessions.get_mut(session).expect("a known session");
        s.busy = false;
        let expected = s.expecting.unwrap_or(1);
        let missing = expected.saturating_sub(s.received);
        state.lost += missing;
    }

    fn losses(&self) -> (u64, u64) {
        let state = self.inner.lock().unwrap();
        (state.lost, state.late)
    }

    async fn close(self) {
        drop(self.stdin);
        let child = self.child.lock().unwrap().take();
        if let Some(mut child) = child {
            let _ = tokio::time::timeout(Duration::from_secs(5), child.wait()).await;
        }
    }
}

fn on_line(state: &Mutex<State>, line: &[u8]) {
    let parsed: Line<'_> = match serde_json::from_slice(line) {
        Ok(parsed) => parsed,
        Err(e) => panic!("unreadable line ({e}): {}", String::from_utf8_lossy(line)),
    };
    let mut state = state.lock().unwrap();
    match (parsed.method, parsed.id) {
        (Some("session/update"), None) => {
            let params = parsed.params.expect("update params");
            let update: UpdateParams = serde_json::from_str(params.get()).expect("an update");
            let Some(session) = state.sessions.get_mut(&update.session_id) else {
                panic!("an update for an unknown session");
            };
            if !session.busy {
                state.late += 1;
                return;
            }
            session.received += 1;
            let in_order = match session.expecting {
                // `ends_with`: a transforming proxy in the chain may prefix each chunk.
                Some(_) => update
                    .update
                    .content
                    .text
                    .ends_with(&format!("chunk {}", session.received)),
                None => session.received == 1,
            };
            if !in_order {
                state.late += 1;
            }
        }
        (None, Some(id)) => {
            let Some(waiting) = state.pending.remove(&id) else {
                panic!(
                    "a response to no request: {}",
                    String::from_utf8_lossy(line)
                );
            };
            match parsed.result {
                Some(result) => {
                    let _ = waiting.send(result);
                }
                None => {
                    eprintln!("error response: {}", parsed.error.map_or("?", |e| e.get()));
                    drop(waiting);
                }
            }
        }
        _ => panic!("unexpected message: {}", String::from_utf8_lossy(line)),
    }
}
