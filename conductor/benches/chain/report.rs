//! The report: the table of the rows, each process's costs, the rounds' verdicts, this
//! build against others, and the performance goals and checks.

use crate::measure::Counts;
use crate::rounds::Cost;
use crate::{Figures, IN_FLIGHT, UPDATES_PER_PROMPT, mib, micros, ratios};

/// Prints the report of `rows` (medians) and `costs` (the rounds'); exits with 1 when a check
/// fails.
pub(crate) fn print(
    rows: &[(String, Figures)],
    costs: &[Cost],
    counts: &Counts,
    journal_bytes: Option<u64>,
) {
    let direct = rows[0].1.clone();
    table(rows, &direct);
    per_process(rows);
    for cost in costs {
        cost.report();
    }
    comparisons(rows, counts, journal_bytes);
    goals(rows, &direct);
}

/// The table: a row a chain.
fn table(rows: &[(String, Figures)], direct: &Figures) {
    println!(
        "| chain | p50 latency | p99 latency | p50 vs direct | prompts/s (64 in flight) | vs direct \
         | updates/s, 1 session | vs direct | updates/s, 256 sessions | 256 vs 1 | lost / late \
         | RSS conductor | RSS proxy (max) | RSS agent | tree RSS (conductor + proxies) \
         | tree private (RssAnon) |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for (name, f) in rows {
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
}

/// Each process's CPU and syscalls per update and per prompt.
fn per_process(rows: &[(String, Figures)]) {
    println!(
        "\nCost per update while streaming on 1 session (CPU time / read+write syscalls, by process):"
    );
    for (name, f) in rows {
        let costs: Vec<String> = f
            .costs
            .iter()
            .map(|(process, cpu, calls)| format!("{process} {cpu:.2} µs / {calls:.2}"))
            .collect();
        println!("- {name}: {}", costs.join(", "));
    }
    println!(
        "\nCost per prompt, {IN_FLIGHT} in flight (CPU time / read+write syscalls, by process):"
    );
    for (name, f) in rows {
        let costs: Vec<String> = f
            .prompt_costs
            .iter()
            .map(|(process, cpu, calls)| format!("{process} {cpu:.2} µs / {calls:.2}"))
            .collect();
        println!("- {name}: {}", costs.join(", "));
    }
}

/// This build against the baseline, the journals against none, a typed hop against a
/// pass-through.
fn comparisons(rows: &[(String, Figures)], counts: &Counts, journal_bytes: Option<u64>) {
    let row = |wanted: &str| rows.iter().find(|(name, _)| name == wanted).map(|(_, f)| f);
    if let (Some(now), Some(base)) = (row("N = 3"), row("N = 3 baseline")) {
        println!(
            "\nThis build against the baseline at N = 3 (this / baseline, this run): {}",
            ratios(now, base)
        );
    }
    for n in [0, 3] {
        let (this, base) = (
            format!("N = {n} over --listen"),
            format!("N = {n} over --listen baseline"),
        );
        if let (Some(now), Some(base)) = (row(&this), row(&base)) {
            println!(
                "\nThis build's --listen against the baseline's at N = {n} (this / baseline, \
                 this run): {}",
                ratios(now, base)
            );
        }
    }
    for store in ["SQLite", "PostgreSQL"] {
        let this = format!("N = 3 over --listen, {store} journal");
        if let (Some(now), Some(base)) = (row(&this), row("N = 3 over --listen")) {
            println!(
                "\nThe {store} journal against none, N = 3 over --listen (journal / none, this \
                 run): {}",
                ratios(now, base)
            );
        }
    }
    if let Some(bytes) = journal_bytes {
        // Every prompt of the row gave one update but the streaming ones (100 each, with 1
        // session and with 256).
        let updates =
            counts.latency + counts.throughput + 2 * counts.streaming * UPDATES_PER_PROMPT as usize;
        println!(
            "The SQLite journal after its row: {bytes} bytes for {updates} updates (and their \
             prompts and turn ends): {:.0} bytes per update",
            bytes as f64 / updates as f64
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
}

/// The performance goals (N = 3 against direct) and the regression checks; exits with 1
/// when a check fails.
fn goals(rows: &[(String, Figures)], direct: &Figures) {
    let row = |wanted: &str| rows.iter().find(|(name, _)| name == wanted).map(|(_, f)| f);
    let (Some(n0), Some(n3), Some(in_process)) =
        (row("N = 0"), row("N = 3"), row("N = 3 in-process"))
    else {
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
    checks(rows, n0, n3);
}

/// The regression checks; exits with 1 when one fails.
fn checks(rows: &[(String, Figures)], n0: &Figures, n3: &Figures) {
    // The regression checks compare N = 3 with N = 0 (the conductor and the agent, no proxy),
    // not with direct: an editor and an agent alone stay on their two cores and wake each other
    // at no cost, while any chain of three processes or more wakes a sleeping core on most
    // hops. On a 2-core VM that put N = 0 at 10x direct's latency and N = 3 at 40x, where a
    // many-core machine measured 8x for N = 3: a check against direct measured the machine's
    // wake-ups. Against N = 0 it measures what three proxies add: 16 pipe transfers a prompt
    // against 4 (4x is the floor), and three more processes on the streaming path.
    let checks = [
        (
            "p50 latency at N = 3 <= 6x N = 0",
            n3.p50.as_secs_f64() <= 6.0 * n0.p50.as_secs_f64(),
        ),
        (
            "throughput at N = 3 >= 15% of N = 0",
            n3.prompts_per_s >= 0.15 * n0.prompts_per_s,
        ),
        (
            "updates/s at N = 3 >= 20% of N = 0",
            n3.updates_per_s_1 >= 0.20 * n0.updates_per_s_1,
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
