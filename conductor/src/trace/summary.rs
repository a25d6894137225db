//! `conductor trace summarise FILE`: a trace in a few lines — the chain, messages per hop,
//! the slowest requests, errors, crashes and stderr.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

use serde_json::Value;

/// How many of the slowest requests are listed.
const SLOWEST: usize = 10;

/// The summary of a trace's text (format 2).
pub(crate) fn summarise(text: &str) -> Result<String, String> {
    let mut out = String::new();
    // hop -> (direction, kind) -> count
    let mut per_hop: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
    let mut asked: HashMap<String, (f64, String, String)> = HashMap::new();
    let mut durations: Vec<(f64, String, String, String)> = Vec::new();
    let mut errors: Vec<String> = Vec::new();
    let mut ends: Vec<String> = Vec::new();
    let mut stderr: BTreeMap<String, u64> = BTreeMap::new();
    let mut messages = 0u64;
    // `dropped` lines: the gaps where the writer could not keep up (lines, gaps).
    let mut dropped = (0u64, 0u64);
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let record: Value =
            serde_json::from_str(line).map_err(|e| format!("line {} is not JSON: {e}", n + 1))?;
        let field = |key: &str| record[key].as_str().unwrap_or_default().to_owned();
        match record["type"].as_str() {
            Some("chain") => {
                if record["v"].as_u64() != Some(u64::from(super::FORMAT)) {
                    return Err(format!(
                        "this is trace format {}, not {}",
                        record["v"],
                        super::FORMAT
                    ));
                }
                let _ = writeln!(
                    out,
                    "chain (conductor {}, started {}):",
                    field("conductor"),
                    field("start")
                );
                for c in record["components"].as_array().into_iter().flatten() {
                    let _ = writeln!(
                        out,
                        "  {}. {} — {}{}",
                        c["position"],
                        c["name"].as_str().unwrap_or("?"),
                        c["command"].as_str().unwrap_or("?"),
                        c["dialect"]
                            .as_str()
                            .map(|d| format!(" [{d}]"))
                            .unwrap_or_default()
                    );
                }
            }
            Some("message") => {
                messages += 1;
                let hop = format!("{} → {}", field("from"), field("to"));
                *per_hop
                    .entry(hop.clone())
                    .or_default()
                    .entry(field("kind"))
                    .or_default() += 1;
                let t = record["t"].as_f64().unwrap_or(0.0);
                let pair = field("pair");
                match record["kind"].as_str() {
                    Some("request") if !pair.is_empty() => {
                        asked.insert(pair, (t, field("method"), hop));
                    }
                    Some(kind @ ("response" | "error")) => {
                        if let Some((start, method, hop)) = asked.remove(&pair) {
                            durations.push((t - start, method, hop, kind.to_owned()));
                        }
                        if kind == "error" {
                            let why = record["payload"]["message"]
                                .as_str()
                                .map(|m| format!(": {m}"))
                                .unwrap_or_default();
                            errors.push(format!(
                                "  seq {} {} {} ({}){why}",
                                record["seq"],
                                field("method"),
                                hop,
                                record["payload"]["code"]
                            ));
                        }
                    }
                    _ => {}
                }
            }
            Some("exit") => ends.push(format!(
                "  {} ({}) {}{}",
                record["component"],
                field("name"),
                field("status"),
                if record["crash"] == true {
                    " — crashed"
                } else {
                    ""
                }
            )),
            Some("stderr") => *stderr.entry(field("name")).or_default() += 1,
            Some("dropped") => {
                dropped.0 += record["lines"].as_u64().unwrap_or(0);
                dropped.1 += 1;
            }
            _ => {}
        }
    }
    let _ = writeln!(out, "{messages} messages");
    if dropped.0 > 0 {
        let _ = writeln!(
            out,
            "{} lines dropped in {} gaps (the trace writer could not keep up; \
             counts below miss them)",
            dropped.0, dropped.1
        );
    }
    let _ = writeln!(out, "per hop:");
    for (hop, kinds) in &per_hop {
        let kinds: Vec<String> = kinds.iter().map(|(k, n)| format!("{n} {k}")).collect();
        let _ = writeln!(out, "  {hop}: {}", kinds.join(", "));
    }
    durations.sort_by(|a, b| b.0.total_cmp(&a.0));
    let _ = writeln!(out, "slowest requests:");
    for (seconds, method, hop, kind) in durations.iter().take(SLOWEST) {
        let _ = writeln!(
            out,
            "  {:>10.3} ms  {method}  {hop}{}",
            seconds * 1000.0,
            if kind == "error" { " (error)" } else { "" }
        );
    }
    if !asked.is_empty() {
        let _ = writeln!(out, "{} requests never answered", asked.len());
    }
    let _ = writeln!(out, "errors: {}", errors.len());
    for error in errors.iter().take(20) {
        let _ = writeln!(out, "{error}");
    }
    if !ends.is_empty() {
        let _ = writeln!(out, "exits:");
        for end in &ends {
            let _ = writeln!(out, "{end}");
        }
    }
    for (name, lines) in &stderr {
        let _ = writeln!(out, "stderr of {name}: {lines} lines");
    }
    Ok(out)
}
