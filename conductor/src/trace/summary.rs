//! `conductor trace summarise FILE`: a trace in a few lines — the chain, messages per hop,
//! the slowest requests, errors, crashes and stderr.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

use serde_json::Value;

/// How many of the slowest requests are listed.
const SLOWEST: usize = 10;

/// The summary of a trace's text (format 2).
pub(crate) fn summarise(text: &str) -> Result<String, String> {
    let mut tally = Tally::default();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let record: Value =
            serde_json::from_str(line).map_err(|e| format!("line {} is not JSON: {e}", n + 1))?;
        match record["type"].as_str() {
            Some("chain") => tally.chain(&record)?,
            Some("message") => tally.message(&record),
            Some("exit") => tally.exit(&record),
            Some("stderr") => *tally.stderr.entry(field(&record, "name")).or_default() += 1,
            Some("dropped") => {
                tally.dropped.0 += record["lines"].as_u64().unwrap_or(0);
                tally.dropped.1 += 1;
            }
            _ => {}
        }
    }
    Ok(tally.report())
}

/// A string field of a record (empty if it has none).
fn field(record: &Value, key: &str) -> String {
    record[key].as_str().unwrap_or_default().to_owned()
}

/// What the summary counts, as the trace is read.
#[derive(Default)]
struct Tally {
    /// The chain's description, from its first line.
    header: String,
    /// hop -> kind -> count
    per_hop: BTreeMap<String, BTreeMap<String, u64>>,
    /// Requests not answered yet, by their pair: when, their method, their hop.
    asked: HashMap<String, (f64, String, String)>,
    /// Answered requests: how long, method, hop, `response` or `error`.
    durations: Vec<(f64, String, String, String)>,
    errors: Vec<String>,
    ends: Vec<String>,
    stderr: BTreeMap<String, u64>,
    messages: u64,
    /// `dropped` lines: the gaps where the writer could not keep up (lines, gaps).
    dropped: (u64, u64),
}

impl Tally {
    /// The chain's line: its format, its conductor, its components.
    fn chain(&mut self, record: &Value) -> Result<(), String> {
        if record["v"].as_u64() != Some(u64::from(super::FORMAT)) {
            return Err(format!(
                "this is trace format {}, not {}",
                record["v"],
                super::FORMAT
            ));
        }
        let out = &mut self.header;
        let _ = writeln!(
            out,
            "chain (conductor {}, started {}):",
            field(record, "conductor"),
            field(record, "start")
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
        Ok(())
    }

    /// One hop of a message: counted, and a request timed until its answer.
    fn message(&mut self, record: &Value) {
        self.messages += 1;
        let hop = format!("{} → {}", field(record, "from"), field(record, "to"));
        *self
            .per_hop
            .entry(hop.clone())
            .or_default()
            .entry(field(record, "kind"))
            .or_default() += 1;
        let t = record["t"].as_f64().unwrap_or(0.0);
        let pair = field(record, "pair");
        match record["kind"].as_str() {
            Some("request") if !pair.is_empty() => {
                self.asked.insert(pair, (t, field(record, "method"), hop));
            }
            Some(kind @ ("response" | "error")) => {
                if let Some((start, method, hop)) = self.asked.remove(&pair) {
                    self.durations
                        .push((t - start, method, hop, kind.to_owned()));
                }
                if kind == "error" {
                    let why = record["payload"]["message"]
                        .as_str()
                        .map(|m| format!(": {m}"))
                        .unwrap_or_default();
                    self.errors.push(format!(
                        "  seq {} {} {} ({}){why}",
                        record["seq"],
                        field(record, "method"),
                        hop,
                        record["payload"]["code"]
                    ));
                }
            }
            _ => {}
        }
    }

    /// A component's end.
    fn exit(&mut self, record: &Value) {
        self.ends.push(format!(
            "  {} ({}) {}{}",
            record["component"],
            field(record, "name"),
            field(record, "status"),
            if record["crash"] == true {
                " — crashed"
            } else {
                ""
            }
        ));
    }

    /// The summary's text.
    fn report(mut self) -> String {
        let mut out = std::mem::take(&mut self.header);
        let _ = writeln!(out, "{} messages", self.messages);
        if self.dropped.0 > 0 {
            let _ = writeln!(
                out,
                "{} lines dropped in {} gaps (the trace writer could not keep up; \
                 counts below miss them)",
                self.dropped.0, self.dropped.1
            );
        }
        let _ = writeln!(out, "per hop:");
        for (hop, kinds) in &self.per_hop {
            let kinds: Vec<String> = kinds.iter().map(|(k, n)| format!("{n} {k}")).collect();
            let _ = writeln!(out, "  {hop}: {}", kinds.join(", "));
        }
        self.durations.sort_by(|a, b| b.0.total_cmp(&a.0));
        let _ = writeln!(out, "slowest requests:");
        for (seconds, method, hop, kind) in self.durations.iter().take(SLOWEST) {
            let _ = writeln!(
                out,
                "  {:>10.3} ms  {method}  {hop}{}",
                seconds * 1000.0,
                if kind == "error" { " (error)" } else { "" }
            );
        }
        if !self.asked.is_empty() {
            let _ = writeln!(out, "{} requests never answered", self.asked.len());
        }
        let _ = writeln!(out, "errors: {}", self.errors.len());
        for error in self.errors.iter().take(20) {
            let _ = writeln!(out, "{error}");
        }
        if !self.ends.is_empty() {
            let _ = writeln!(out, "exits:");
            for end in &self.ends {
                let _ = writeln!(out, "{end}");
            }
        }
        for (name, lines) in &self.stderr {
            let _ = writeln!(out, "stderr of {name}: {lines} lines");
        }
        out
    }
}
