//! One chain measured: latency, throughput, streaming, memory and CPU per update.

use std::path::Path;
use std::time::Instant;

use crate::processes::{peak_rss_kib, process_tree, status_kib, usage};
use crate::{BenchEditor, Figures, IN_FLIGHT, MANY_SESSIONS, UPDATES_PER_PROMPT};

pub(crate) struct Counts {
    pub(crate) warmup: usize,
    pub(crate) latency: usize,
    pub(crate) throughput: usize,
    pub(crate) streaming: usize,
}

impl Counts {
    pub(crate) fn scaled(scale: f64) -> Counts {
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
pub(crate) async fn measure(
    counts: &Counts,
    program: &Path,
    args: &[String],
    proxies: Option<usize>,
    server: Option<u32>,
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
    if let Some(server) = server {
        processes.push((server, "listening server".to_owned()));
        processes.extend(process_tree(server));
    }
    let before: Vec<_> = processes.iter().map(|(pid, _)| usage(*pid)).collect();
    figures.updates_per_s_1 = stream(&editor, std::slice::from_ref(&first), counts.streaming).await;
    let updates = (counts.streaming as u64 * UPDATES_PER_PROMPT) as f64;
    figures.costs = costs(&processes, &before, updates);

    // Throughput: 64 sessions, a prompt in flight on each.
    let mut sessions = vec![first];
    while sessions.len() < IN_FLIGHT {
        sessions.push(editor.new_session().await);
    }
    let before: Vec<_> = processes.iter().map(|(pid, _)| usage(*pid)).collect();
    figures.prompts_per_s = throughput(&editor, &sessions, counts.throughput).await;
    figures.prompt_costs = costs(&processes, &before, counts.throughput as f64);

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

/// Each process's CPU µs and read/write syscalls since `before`, per one of `units`.
fn costs(
    processes: &[(u32, String)],
    before: &[Option<(u64, u64)>],
    units: f64,
) -> Vec<(String, f64, f64)> {
    processes
        .iter()
        .zip(before)
        .filter_map(|((pid, name), before)| {
            let (b, a) = ((*before)?, usage(*pid)?);
            Some((
                name.clone(),
                (a.0 - b.0) as f64 / 1e3 / units,
                (a.1 - b.1) as f64 / units,
            ))
        })
        .collect()
}

/// About `prompts` one-chunk prompts, one in flight on each of `sessions` at a time; returns
/// prompts per second.
pub(crate) async fn throughput(editor: &BenchEditor, sessions: &[String], prompts: usize) -> f64 {
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
pub(crate) async fn stream(editor: &BenchEditor, sessions: &[String], prompts: usize) -> f64 {
    let text = format!("stream {UPDATES_PER_PROMPT}");
    let start = Instant::now();
    for i in 0..prompts {
        editor.prompt(&sessions[i % sessions.len()], &text).await;
    }
    (prompts as u64 * UPDATES_PER_PROMPT) as f64 / start.elapsed().as_secs_f64()
}

pub(crate) async fn futures_join_all<F: std::future::Future<Output = ()> + Send + 'static>(
    futures: impl Iterator<Item = F>,
) {
    let handles: Vec<_> = futures.map(tokio::spawn).collect();
    for handle in handles {
        handle.await.expect("a prompt loop panicked");
    }
}
