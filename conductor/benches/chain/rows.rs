//! The rows of one run: each chain measured in turn (see `measure`).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::editor::BenchEditor;
use crate::measure::{Counts, measure};
use crate::{Bins, Figures, ListeningAgent, journals, wanted};

/// One run's rows, in the table's order: direct, then every chain asked for.
pub(crate) async fn one_run(
    bins: &Bins,
    counts: &Counts,
    journal_bytes: &mut Option<u64>,
) -> Vec<(String, Figures)> {
    let mut rows = Vec::new();
    let direct = measure(counts, &bins.agent, &[], None, None).await;
    rows.push(("direct".to_owned(), direct));
    spawned(bins, counts, &mut rows).await;
    listening(bins, counts, &mut rows, journal_bytes).await;
    variants(bins, counts, &mut rows).await;
    rows
}

/// Chains the editor spawns: N = 0, 1, 3, 5 pass-through proxies, and N = 0 and 3 with the
/// agent reached over a WebSocket.
async fn spawned(bins: &Bins, counts: &Counts, rows: &mut Vec<(String, Figures)>) {
    let (conductor, proxy, agent) = (&bins.conductor, &bins.proxy, &bins.agent);
    for n in [0, 1, 3, 5] {
        if !wanted(&format!("N = {n}")) {
            continue;
        }
        let mut args = vec!["agent".to_owned()];
        args.extend(std::iter::repeat_n(proxy.to_string_lossy().into_owned(), n));
        args.push(agent.to_string_lossy().into_owned());
        let figures = measure(counts, conductor, &args, Some(n), None).await;
        rows.push((format!("N = {n}"), figures));
    }
    // The agent reached over the network (a WebSocket on loopback to the test agent
    // serving with `--listen`) instead of spawned: the cost of a remote hop.
    for n in [0, 3] {
        let row = format!("N = {n}, agent over WebSocket");
        if !wanted(&row) {
            continue;
        }
        let server = ListeningAgent::start(agent);
        let mut args = vec![
            "agent".to_owned(),
            "--header".to_owned(),
            format!("Authorization: Bearer {}", ListeningAgent::TOKEN),
        ];
        args.extend(std::iter::repeat_n(proxy.to_string_lossy().into_owned(), n));
        args.push(server.ws.clone());
        let figures = measure(counts, conductor, &args, Some(n), None).await;
        rows.push((row, figures));
    }
}

/// Chains served with `--listen`: this build's, the baseline's, and this build's with each
/// journal.
async fn listening(
    bins: &Bins,
    counts: &Counts,
    rows: &mut Vec<(String, Figures)>,
    journal_bytes: &mut Option<u64>,
) {
    let (conductor, proxy, agent) = (&bins.conductor, &bins.proxy, &bins.agent);
    // The chain served with `--listen` (the session layer between the connection and the
    // chain), reached over a WebSocket on loopback through a conductor with no proxy of
    // its own — the same for every row — whose agent is that URL: this build's listening
    // conductor, and with `SACP_BENCH_BASELINE` that build's, with their own proxies and
    // agents.
    let baseline = std::env::var_os("SACP_BENCH_BASELINE").map(PathBuf::from);
    let builds = std::iter::once(("", conductor.clone(), proxy.clone(), agent.clone())).chain(
        baseline.iter().map(|base| {
            (
                " baseline",
                base.join("conductor"),
                base.join("passthrough-proxy"),
                base.join("test-agent"),
            )
        }),
    );
    for (label, listening, proxy, agent) in builds {
        for n in [0, 3] {
            let row = format!("N = {n} over --listen{label}");
            if !wanted(&row) {
                continue;
            }
            let mut components = vec![proxy.to_string_lossy().into_owned(); n];
            components.push(agent.to_string_lossy().into_owned());
            // This build keeps a journal by default: not in these rows (older builds have
            // none, and know no --no-journal).
            let extra = if label.is_empty() {
                vec!["--no-journal".to_owned()]
            } else {
                Vec::new()
            };
            let server = ListeningAgent::conductor_with(&listening, &extra, &components);
            let args = server.editor_args();
            let figures = measure(counts, conductor, &args, Some(0), Some(server.child.id())).await;
            rows.push((row, figures));
        }
    }
    // N = 3 over `--listen` with the session journal: SQLite, and PostgreSQL where
    // `SACP_TEST_POSTGRES` names a database.
    for (store, spec) in journals() {
        let row = format!("N = 3 over --listen, {store} journal");
        let Some(spec) = spec.filter(|_| wanted(&row)) else {
            continue;
        };
        let mut components = vec![proxy.to_string_lossy().into_owned(); 3];
        components.push(agent.to_string_lossy().into_owned());
        let extra = ["--journal".to_owned(), spec.clone()];
        let server = ListeningAgent::conductor_with(conductor, &extra, &components);
        let args = server.editor_args();
        let figures = measure(counts, conductor, &args, Some(0), Some(server.child.id())).await;
        drop(server);
        if store == "SQLite" {
            let bytes: u64 = ["", "-wal"]
                .iter()
                .filter_map(|suffix| std::fs::metadata(format!("{spec}{suffix}")).ok())
                .map(|m| m.len())
                .sum();
            *journal_bytes = Some(bytes);
            for suffix in ["", "-wal", "-shm"] {
                let _ = std::fs::remove_file(format!("{spec}{suffix}"));
            }
        }
        rows.push((row, figures));
    }
}

/// N = 3 traced, N = 3 of the baseline, one typed proxy, and N = 3 inside the conductor.
async fn variants(bins: &Bins, counts: &Counts, rows: &mut Vec<(String, Figures)>) {
    let (conductor, proxy, agent) = (&bins.conductor, &bins.proxy, &bins.agent);
    let one_binary = &bins.one_binary;
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
        let figures = measure(counts, conductor, &args, Some(3), None).await;
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
        let figures = measure(counts, &base.join("conductor"), &args, Some(3), None).await;
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
        let figures = measure(counts, conductor, &args, Some(1), None).await;
        rows.push(("N = 1 typed".to_owned(), figures));
    }
    // Pass-through proxies inside the conductor's process, the agent a process: as Rust
    // proxies (`Chain::proxy`), and as WebAssembly components (`wasm:`, each in its own
    // sandbox), against the same number of proxy processes (the rows `N = 1`, `N = 3`).
    for n in [1, 3] {
        let row = format!("N = {n} in-process");
        if wanted(&row) {
            let args = [n.to_string(), agent.to_string_lossy().into_owned()];
            let figures = measure(counts, one_binary, &args, Some(n), None).await;
            rows.push((row, figures));
        }
        let row = format!("N = {n} wasm");
        if let Some(components) = bins.components.as_ref().filter(|_| wanted(&row)) {
            let mut args = vec!["agent".to_owned()];
            let wasm = format!(
                "wasm:{}",
                components.join("passthrough-proxy.wasm").display()
            );
            args.extend(std::iter::repeat_n(wasm, n));
            args.push(agent.to_string_lossy().into_owned());
            let figures = measure(counts, conductor, &args, Some(n), None).await;
            rows.push((row, figures));
        }
    }
}

/// How long a chain with one pass-through proxy takes from its start to the answer to
/// `initialize`: the proxy a process, and a WebAssembly component compiled afresh (an empty
/// cache) and found compiled (the cache the first run filled). Medians of `runs`.
pub(crate) async fn start_times(bins: &Bins, runs: usize) -> Option<[Duration; 3]> {
    let components = bins.components.as_ref()?;
    let agent = bins.agent.to_string_lossy().into_owned();
    let process = bins.proxy.to_string_lossy().into_owned();
    let wasm = format!(
        "wasm:{}",
        components.join("passthrough-proxy.wasm").display()
    );
    let mut times: [Vec<Duration>; 3] = Default::default();
    for run in 0..runs {
        let cache =
            std::env::temp_dir().join(format!("sacp-bench-cache-{}-{run}", std::process::id()));
        let cache_env = cache.to_string_lossy().into_owned();
        for (i, proxy) in [&process, &wasm, &wasm].into_iter().enumerate() {
            let args = ["agent".to_owned(), proxy.clone(), agent.clone()];
            let started = Instant::now();
            let editor = BenchEditor::initialized_with(
                &bins.conductor,
                &args,
                &[("XDG_CACHE_HOME", &cache_env)],
            )
            .await;
            times[i].push(started.elapsed());
            drop(editor);
        }
        let _ = std::fs::remove_dir_all(&cache);
    }
    Some(times.map(|mut t| {
        t.sort();
        t[t.len() / 2]
    }))
}

/// One run's rows against direct, when there are several runs.
pub(crate) fn print_run(run: usize, rows: &[(String, Figures)]) {
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
