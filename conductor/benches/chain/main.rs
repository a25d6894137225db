//! The conductor on the hot path: an editor driving `conductor agent` with N pass-through
//! proxies and the test agent, against the same editor driving the test agent directly,
//! measured in the same run.
//!
//! ```text
//! cargo bench -p sacp-chain --bench chain            # full run
//! cargo bench -p sacp-chain --bench chain -- 0.1     # a tenth of the work (smoke run)
//! cargo bench -p sacp-chain --bench chain -- 0.3 runs=3  # 3 interleaved runs, medians
//! cargo bench -p sacp-chain --bench chain -- 0.1 only=in-process  # direct + matching rows
//! cargo bench -p sacp-chain --bench chain -- 0.3 only='N = 0$,N = 3$,WebSocket'  # exact rows too
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
//! With it too, `N = 0 rounds against the baseline` and `N = 3 …` (and `… over --listen …`)
//! measure this build against that one in interleaved rounds (below), idle and busy: its
//! conductor, proxies and agent against the baseline's, the ratio with a 95% interval and a
//! control (a second baseline chain), and whether this build keeps within 3% (5% over
//! `--listen`); `agent=this` ends both in this build's test agent, comparing the conductors
//! and proxies alone.
//!
//! Rows `N = 0, agent over WebSocket` and `N = 3, agent over WebSocket` reach the test agent
//! over the network (a WebSocket on loopback; the agent serves with `--listen`) instead of
//! spawning it: the cost of a remote hop against the spawned rows of the same run.
//!
//! Rows `N = 0 over --listen` and `N = 3 over --listen` serve the chain with `conductor agent
//! --listen` (the session layer between the network connection and the chain) and reach it
//! over a WebSocket through a conductor with no proxy (`conductor agent ws://…`, this build's
//! in every row); with `SACP_BENCH_BASELINE`, rows `… baseline` serve it with that build's
//! conductor, proxies and agent. `scripts/bench-baseline COMMIT` builds one.
//!
//! Rows `N = 3 over --listen, SQLite journal` and `…, PostgreSQL journal` (where
//! `SACP_TEST_POSTGRES` names a database) serve it with `--journal`: the journal's cost against
//! `N = 3 over --listen` in the same run, and the SQLite file's bytes per update. The
//! journal's cost is then measured as the trace's is, in interleaved rounds (below), idle and
//! beside two busy loops.
//!
//! A row `N = 3 traced` runs N = 3 with `--trace FILE` (no payloads, no viewer page open). The
//! cost of the trace file is then measured in interleaved rounds (two untraced chains and a
//! traced one side by side, started afresh a dozen times, see `rounds`), which the VM's
//! swings from row to row do not blur; the second untraced chain is the control, what the
//! noise alone gives. The rounds run on the idle machine, and again beside two busy loops
//! the bench starts and stops itself (`writers=idle,nice=10,normal` runs them with each of
//! these schedulings of the trace writer, `SACP_TRACE_WRITER`; `files=cached,direct` with
//! the file written through the page cache and around it, `SACP_TRACE_DIRECT`; `defers=off,10`
//! with each deferral of the writer's work, `SACP_TRACE_DEFER`); each reports
//! how many trace lines the writer dropped (`machine=idle` or `machine=busy` runs only those
//! rounds). `generations=K` sets how many generations of chains the rounds start.
//! `only=traced` runs that alone (with `direct` and the traced row).
//! A row `N = 1 typed` runs one typed proxy (`prefix-proxy`: every prompt and update read
//! into its type, each chunk rewritten, written losslessly), the cost of typed handling.
//! Rows `N = 1 in-process` and `N = 3 in-process` run pass-through proxies *inside* the
//! conductor's process (`examples/one_binary.rs`, `Chain::proxy`) with the agent as a process;
//! rows `N = 1 wasm` and `N = 3 wasm` run them as WebAssembly components (`wasm:`, built for
//! `wasm32-wasip2` by `sacp_examples::bins::components`), each in a sandbox of its own in the
//! conductor's process: against `N = 1` and `N = 3`, a component hop against a process hop
//! and a Rust hop. After the table, the time from a chain's start to its answer to
//! `initialize` with one proxy: a process, a component compiled afresh, and a component found
//! in the compiled-code cache. The table ends with the performance goals (N = 3 against
//! direct) met or not.
//!
//! The editor parses every line it reads (the envelope, and each update's text), like a real
//! editor would; it runs on one thread, as do the conductor and the components.

#![allow(clippy::print_stdout, missing_docs)]

use std::path::PathBuf;
use std::time::Duration;

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
    /// The same, per prompt, during the throughput run.
    prompt_costs: Vec<(String, f64, f64)>,
}

use sacp_test_support::processes;

mod editor;
mod measure;
mod report;
mod rounds;
mod rows;

use editor::BenchEditor;
use measure::Counts;
use rounds::{Setting, Treatment, cost};

/// A server of ACP on a free port of loopback (the test agent or a conductor with `--listen`),
/// killed when dropped.
struct ListeningAgent {
    child: std::process::Child,
    /// Its WebSocket URL.
    ws: String,
}

impl ListeningAgent {
    const TOKEN: &str = "b3nch";

    /// The test agent serving with `--listen`.
    fn start(agent: &std::path::Path) -> ListeningAgent {
        Self::serving(agent, &["--listen", "127.0.0.1:0", "--token", Self::TOKEN])
    }

    /// `conductor agent --listen` serving `components` (the session layer in front of them),
    /// with `extra` arguments (`--journal …`).
    fn conductor_with(
        conductor: &std::path::Path,
        extra: &[String],
        components: &[String],
    ) -> ListeningAgent {
        let token = std::env::temp_dir().join(format!("sacp-bench-token-{}", std::process::id()));
        std::fs::write(&token, Self::TOKEN).expect("write the token file");
        let mut args = vec![
            "agent".to_owned(),
            "--listen".to_owned(),
            "127.0.0.1:0".to_owned(),
            "--listen-token-file".to_owned(),
            token.to_string_lossy().into_owned(),
        ];
        args.extend_from_slice(extra);
        args.extend_from_slice(components);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        Self::serving(conductor, &args)
    }

    /// The arguments of a conductor with no proxy whose agent is this server.
    fn editor_args(&self) -> Vec<String> {
        vec![
            "agent".to_owned(),
            "--header".to_owned(),
            format!("Authorization: Bearer {}", Self::TOKEN),
            self.ws.clone(),
        ]
    }

    fn serving(program: &std::path::Path, args: &[&str]) -> ListeningAgent {
        use std::io::BufRead as _;
        let mut child = std::process::Command::new(program)
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start the listening server");
        let mut url = String::new();
        std::io::BufReader::new(child.stdout.take().expect("its stdout"))
            .read_line(&mut url)
            .expect("its URL");
        let ws = url.trim().replacen("http", "ws", 1);
        ListeningAgent { child, ws }
    }
}

impl Drop for ListeningAgent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn main() {
    if std::env::args().any(|a| a == "--spin") {
        rounds::spin();
    }
    processes::block_on(run(processes::scale()));
}

/// The binaries of this build that the rows run.
struct Bins {
    agent: PathBuf,
    proxy: PathBuf,
    conductor: PathBuf,
    one_binary: PathBuf,
    /// The example proxies built as WebAssembly components, when the rows want them and they
    /// build (the `wasm32-wasip2` target installed).
    components: Option<PathBuf>,
}

async fn run(scale: f64) {
    let dir = sacp_examples::bins::built(&["sacp-examples"]).expect("build the test components");
    let counts = Counts::scaled(scale);
    let runs = runs();
    println!(
        "chain benchmark: {} latency prompts, {} throughput prompts ({IN_FLIGHT} in flight), \
         {} streaming prompts x {UPDATES_PER_PROMPT} updates; {runs} run(s), medians\n",
        counts.latency, counts.throughput, counts.streaming
    );
    let bins = Bins {
        agent: dir.join("test-agent"),
        proxy: dir.join("passthrough-proxy"),
        conductor: PathBuf::from(env!("CARGO_BIN_EXE_conductor")),
        one_binary: built_example("one_binary"),
        components: (wanted("N = 1 wasm") || wanted("N = 3 wasm"))
            .then(|| {
                sacp_examples::bins::components()
                    .inspect_err(|why| println!("no WebAssembly rows: {why}\n"))
                    .ok()
            })
            .flatten(),
    };
    let mut runs_rows: Vec<Vec<(String, Figures)>> = Vec::new();
    // The SQLite journal's size after its row (the last run's).
    let mut journal_bytes: Option<u64> = None;
    for run in 1..=runs {
        let rows = rows::one_run(&bins, &counts, &mut journal_bytes).await;
        if runs > 1 {
            rows::print_run(run, &rows);
        }
        runs_rows.push(rows);
    }
    if runs > 1 {
        println!();
    }
    let costs = round_costs(&bins, &counts).await;
    report::print(&medians(&runs_rows), &costs, &counts, journal_bytes);
    if let Some([process, cold, warm]) = rows::start_times(&bins, 5).await {
        println!(
            "\nstart to the answer to initialize, one pass-through proxy (medians of 5): as a \
             process {:.1} ms; as a WebAssembly component {:.1} ms compiled afresh, {:.1} ms \
             compiled before (cached)",
            process.as_secs_f64() * 1e3,
            cold.as_secs_f64() * 1e3,
            warm.as_secs_f64() * 1e3
        );
    }
}

/// The rounds asked for: the trace's cost, the journal's, and this build against the
/// baseline's, on the idle machine and beside busy loops (`machine=idle` or `machine=busy`:
/// only those).
async fn round_costs(bins: &Bins, counts: &Counts) -> Vec<rounds::Cost> {
    let (conductor, proxy, agent) = (&bins.conductor, &bins.proxy, &bins.agent);
    // `machine=idle` or `machine=busy`: only the rounds on the idle machine, or beside the
    // busy loops.
    let machines: Vec<bool> = match arg("machine").as_deref() {
        None => vec![false, true],
        Some("idle") => vec![false],
        Some("busy") => vec![true],
        Some(other) => panic!("machine={other}: it is `idle` or `busy`"),
    };
    let mut costs = Vec::new();
    // The cost of the trace file, in interleaved rounds (see `rounds`): on an idle
    // machine, and beside busy loops (with every scheduling of the trace writer when
    // `only=writers`).
    if wanted("N = 3 traced") {
        for setting in trace_settings(&machines) {
            let treatment = Treatment::Trace(setting);
            costs.push(cost(counts, conductor, proxy, agent, treatment).await);
        }
    }
    // The cost of the session journal, the same way: each store of the rows above.
    for (store, spec) in journals() {
        if !wanted(&format!("N = 3 over --listen, {store} journal")) {
            continue;
        }
        let Some(spec) = spec else { continue };
        for &busy in &machines {
            let treatment = Treatment::Journal {
                store,
                spec: spec.clone(),
                busy,
            };
            costs.push(cost(counts, conductor, proxy, agent, treatment).await);
        }
    }
    // This build against the baseline's, the same way: rows `N = 0 rounds against the
    // baseline`, `N = 3 …`, and `… over --listen`.
    if let Some(dir) = std::env::var_os("SACP_BENCH_BASELINE").map(PathBuf::from) {
        for listen in [false, true] {
            for n in [0, 3] {
                let over = if listen { " over --listen" } else { "" };
                if !wanted(&format!("N = {n}{over} rounds against the baseline")) {
                    continue;
                }
                for &busy in &machines {
                    let treatment = Treatment::Build {
                        dir: dir.clone(),
                        n,
                        listen,
                        busy,
                        // `agent=this`: this build's test agent behind both.
                        same_agent: arg("agent").as_deref() == Some("this"),
                    };
                    costs.push(cost(counts, conductor, proxy, agent, treatment).await);
                }
            }
        }
    }
    costs
}

/// The settings of the trace writer the trace's rounds run with (`writers=`, `files=`,
/// `defers=`), on each machine of `machines`.
fn trace_settings(machines: &[bool]) -> Vec<Setting> {
    // `writers=idle,nice=10,normal`: each of these schedulings of the trace writer, on
    // the idle machine and beside the busy loops; else the conductor's default.
    let writers = values("writers");
    // `files=cached,direct`: the file written through the page cache, then around it.
    let files: Vec<Option<bool>> = match arg("files") {
        Some(list) => list
            .split(',')
            .map(|f| match f {
                "direct" => Some(true),
                "cached" => Some(false),
                other => panic!("files={other}: each is `cached` or `direct`"),
            })
            .collect(),
        None => vec![None],
    };
    // `defers=off,10:20000:24`: each of these deferrals of the writer's work
    // (`SACP_TRACE_DEFER`).
    let defers = values("defers");
    let mut settings = Vec::new();
    for writer in writers {
        for &defer in &defers {
            for &direct in &files {
                for &busy in machines {
                    settings.push(Setting {
                        busy,
                        writer,
                        defer,
                        direct,
                    });
                }
            }
        }
    }
    settings
}

/// Builds an example of this package with the running bench's profile; its path.
/// The journals of the rows and rounds: a SQLite file, and PostgreSQL where
/// `SACP_TEST_POSTGRES` names a database.
fn journals() -> [(&'static str, Option<String>); 2] {
    [
        (
            "SQLite",
            Some(
                std::env::temp_dir()
                    .join(format!("sacp-bench-journal-{}.db", std::process::id()))
                    .to_string_lossy()
                    .into_owned(),
            ),
        ),
        ("PostgreSQL", std::env::var("SACP_TEST_POSTGRES").ok()),
    ]
}

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
    let mut command = sacp_examples::bins::cargo();
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
    let mut line = format!(
        "prompts/s {:.3}x, updates/s {:.3}x (1 session), {:.3}x (256 sessions), p50 {:.3}x",
        a.prompts_per_s / b.prompts_per_s,
        a.updates_per_s_1 / b.updates_per_s_1,
        a.updates_per_s_256 / b.updates_per_s_256,
        a.p50.as_secs_f64() / b.p50.as_secs_f64(),
    );
    // The listening server's own CPU, where the rows have one.
    let server = |costs: &[(String, f64, f64)]| {
        costs
            .iter()
            .find(|(name, _, _)| name == "listening server")
            .map(|c| c.1)
    };
    if let (Some(pa), Some(pb), Some(ua), Some(ub)) = (
        server(&a.prompt_costs),
        server(&b.prompt_costs),
        server(&a.costs),
        server(&b.costs),
    ) {
        line += &format!(
            "; the listening server's CPU per prompt {:.3}x, per update {:.3}x",
            pa / pb,
            ua / ub
        );
    }
    line
}

/// The value of `key=value` on the command line.
pub(crate) fn arg(key: &str) -> Option<String> {
    std::env::args().find_map(|a| Some(a.strip_prefix(key)?.strip_prefix('=')?.to_owned()))
}

/// `name=a,b,…` on the command line: each value, for an environment variable of the
/// conductor; the conductor's default (`None`) without it.
fn values(name: &str) -> Vec<Option<&'static str>> {
    match arg(name) {
        Some(list) => list
            .split(',')
            .map(|v| Some(&*Box::leak(v.to_owned().into_boxed_str())))
            .collect(),
        None => vec![None],
    }
}

/// Whether the row `name` runs: every row without `only=`; with it, the rows that contain one
/// of its comma-separated parts, or that are one ending in `$` (`only=N = 3$,WebSocket`).
fn wanted(name: &str) -> bool {
    match arg("only") {
        None => true,
        Some(only) => only.split(',').any(|part| match part.strip_suffix('$') {
            Some(exact) => name == exact,
            None => name.contains(part),
        }),
    }
}

/// How many times to run every chain (`runs=K` on the command line), 1 by default.
fn runs() -> usize {
    arg("runs")
        .and_then(|runs| runs.parse().ok())
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
            let costs_of = |of: fn(&Figures) -> &Vec<(String, f64, f64)>| {
                of(all[0])
                    .iter()
                    .enumerate()
                    .map(|(i, (name, _, _))| {
                        let cost = |pick: fn(&(String, f64, f64)) -> f64| {
                            median(all.iter().filter_map(|f| of(f).get(i).map(pick)).collect())
                        };
                        (name.clone(), cost(|c| c.1), cost(|c| c.2))
                    })
                    .collect()
            };
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
                costs: costs_of(|f| &f.costs),
                prompt_costs: costs_of(|f| &f.prompt_costs),
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
