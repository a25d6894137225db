//! `--trace FILE`: the chain's traffic, one JSON line per message per hop, and what happens to
//! its components — trace format 2, documented in [`crate::_chains`] ("Traces, and the live
//! viewer") and described by `conductor/trace.schema.json`.
//!
//! The first line names the chain (`"type": "chain"`: the conductor's version, the components
//! in order with name, command, dialect and pid, the start time). Then, in `seq` order:
//! - `message`: one hop of one message — `from`, `to`, `hop`, `direction`, `kind`, the real
//!   `method` (the envelope it travelled in, if any, in `via`), `id` as the receiver sees it,
//!   `session`, `size` (bytes of params, result or error), `pair` (the same on a request and its
//!   response on one hop), `flow` (the same on every hop of one message: exact when a proxy
//!   passes it on unchanged, by method, session and order where it transforms it; a response
//!   has its request's), `mcp` (the server or connection of MCP-over-ACP traffic), and with
//!   payloads the `payload` as written (secrets redacted, see [`redact`]);
//! - `spawn`, `exit` (with the status, and `crash` when it ended before the chain did),
//!   `stderr` (one line a component wrote), `dialect` (a proxy's, once found), `mode` (the
//!   conductor runs as a proxy).
//!
//! Every line has `seq` (from 0) and `t` (seconds since the trace started, monotonic): a
//! line's wall time is the first line's `start` plus its `t`. The file is created `0600`: it
//! holds prompts and files. Lines are handed to the writer whenever the conductor has nothing
//! else to do, at least every [`FLUSH_EVERY`] while it is busy, and at the end; while the chain
//! streams hard the writer puts them off until the stream slows down (see [`pace`]).
//! [`Trace::written`] says how far the file is, for the viewer ([`serve`]).

mod flows;
mod pace;
mod record;
mod redact;
mod scheduling;
pub(crate) mod serve;
mod sink;
pub(crate) mod summary;
mod writer;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::time::{Duration, Instant, SystemTime};

use sacp::jsonrpc::Message;
use sacp::protocol::dialect::Dialect;
use sacp::protocol::routing::{Hop, Node, RoutingTable, Transformed};
use tokio::sync::watch;

use self::record::Batch;
use self::scheduling::Scheduling;
use self::writer::{Command, Writer};

/// The trace format's version (the `v` of the first line).
pub(crate) const FORMAT: u32 = 2;

/// How long a line may wait in the buffer before it goes to the file (one write for every
/// line of that time: a write per routed batch would cost the chain more than the trace).
const FLUSH_EVERY: Duration = Duration::from_millis(20);

/// A component, as the first line names it.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct Member {
    pub(crate) position: usize,
    pub(crate) name: String,
    pub(crate) command: String,
    /// Declared, or `null` until found.
    pub(crate) dialect: Option<String>,
    pub(crate) pid: Option<u32>,
    /// For a component reached over the network: `websocket` or `http`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) transport: Option<&'static str>,
    /// For a component reached over the network: its URL, without credentials.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) url: Option<String>,
    /// For a WebAssembly component: what it is granted, in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) wasm: Option<String>,
}

/// How many lines the loop hands over at once (or fewer, when they are due): the writer
/// wakes once a batch, and a wake costs the busy loop a futex call and the other core an
/// interrupt. 1024 (against 256) took a saturated three-proxy stream from 0.83x to 0.90x of
/// its untraced throughput.
const BATCH: usize = 1024;
/// How much text a batch gathers before it is handed over.
const BATCH_TEXT: usize = 32 * 1024;
/// How many batches may wait for the writer (~140 KiB each, more with payloads); past them,
/// the loop drops what it makes until the writer has room again. A busy stream fills one a
/// millisecond. The writer leaves up to [`pace::Defer::until`] of them waiting while the
/// chain streams hard (see [`pace`]); the rest ride out the few milliseconds a scheduler may
/// leave the writer out (16 dropped none of a continuous 300,000-update turn on an idle
/// 2-core machine, 4 dropped 2–4% of it).
const BATCHES: usize = 48;
/// How many written batches are kept for the loop to fill again: past them, the loop
/// allocates a new one (one a few hundred lines).
const KEPT_BATCHES: usize = 16;

/// An open trace: the event loop's side. Lines are made and written by a thread of their own
/// (the loop only copies a few fields out of each message it routes, see [`record`]), so
/// that tracing costs the chain little: see the chain bench's `N = 3 traced`.
#[derive(Debug)]
pub(crate) struct Trace {
    path: PathBuf,
    start: Instant,
    /// The wall clock at `start`: the first line's `start`.
    wall_start: SystemTime,
    payloads: bool,
    batch: Batch,
    /// When the oldest line not yet handed over was made.
    dirty_since: Option<Instant>,
    to_writer: SyncSender<Command>,
    /// Batches the writer is done with, for another round.
    spent: Receiver<Batch>,
    written: watch::Receiver<u64>,
    /// Lines made so far: written by the loop alone, read by the writer to see how fast the
    /// chain goes (see [`pace`]).
    made: Arc<AtomicU64>,
    /// The dialects said so far, by position - 1.
    dialects: Vec<Option<Dialect>>,
    mode_said: bool,
    /// Lines dropped (the writer was behind) and noted in the file.
    dropped: u64,
    /// Lines dropped whose note is still to reach the file (it leads the current batch).
    unreported: u64,
    writer_gone: bool,
    /// Batches handed over that the writer has not taken yet.
    waiting: Arc<AtomicUsize>,
}

impl Trace {
    /// Creates (or truncates) the trace file, readable by its owner only, and starts its
    /// writer.
    pub(crate) fn create(path: &Path, payloads: bool) -> std::io::Result<Trace> {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(path)?;
        // An existing file keeps its mode through `open`: make it the owner's. Not a pipe or
        // a device (`--trace /dev/stderr`, a FIFO a viewer reads): their mode is not the
        // trace's to change.
        if file.metadata()?.is_file() {
            file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        }
        let (start, wall_start) = (Instant::now(), SystemTime::now());
        let (written_tx, written) = watch::channel(0);
        let (to_writer, commands) = std::sync::mpsc::sync_channel(BATCHES);
        let (spent_tx, spent) = std::sync::mpsc::sync_channel(KEPT_BATCHES);
        let waiting = Arc::new(AtomicUsize::new(0));
        let made = Arc::new(AtomicU64::new(0));
        let pace = pace::Defer::from_env().map(pace::Pace::new);
        let writer = Writer::new(
            file,
            payloads,
            written_tx,
            spent_tx,
            waiting.clone(),
            (made.clone(), pace),
        );
        let scheduling = Scheduling::from_env();
        std::thread::Builder::new()
            .name("trace".into())
            .spawn(move || writer.run(commands, scheduling))?;
        Ok(Trace {
            path: path.to_owned(),
            start,
            wall_start,
            payloads,
            batch: Batch::with_capacity(BATCH),
            dirty_since: None,
            to_writer,
            spent,
            written,
            made,
            dialects: Vec::new(),
            mode_said: false,
            dropped: 0,
            unreported: 0,
            writer_gone: false,
            waiting,
        })
    }

    /// The `seq` of the last line so far.
    pub(crate) fn last_seq(&self) -> u64 {
        self.made.load(Ordering::Relaxed).saturating_sub(1)
    }

    /// The file.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// How many lines are in the file, as it grows.
    pub(crate) fn written(&self) -> watch::Receiver<u64> {
        self.written.clone()
    }

    /// Counts a line made. Only this thread writes the count: a load and a store, not a
    /// locked add.
    fn count_line(&self) {
        let made = self.made.load(Ordering::Relaxed) + 1;
        self.made.store(made, Ordering::Relaxed);
    }

    /// Counts the line just put in the batch, and hands the batch over when full.
    fn pushed(&mut self) {
        self.count_line();
        if self.dirty_since.is_none() {
            self.dirty_since = Some(Instant::now());
        }
        if self.batch.len() >= BATCH || self.batch.text.len() >= BATCH_TEXT {
            self.hand_over();
        }
    }

    /// Hands the batch to the writer — or, when the writer is behind (its queue is full),
    /// drops its lines: the chain never waits for the trace. A `dropped` line then takes
    /// their place, with how many lines were lost there (and before it, if that line was
    /// dropped too), so that the file says where it has a gap.
    fn hand_over(&mut self) {
        if self.batch.is_empty() {
            return;
        }
        let next = self
            .spent
            .try_recv()
            .unwrap_or_else(|_| Batch::with_capacity(BATCH));
        let batch = std::mem::replace(&mut self.batch, next);
        let lines = batch.len() as u64;
        // Counted before it is sent: the writer may take it at once.
        self.waiting.fetch_add(1, Ordering::Relaxed);
        let sent = self.to_writer.try_send(Command::Lines(batch));
        if sent.is_err() {
            self.waiting.fetch_sub(1, Ordering::Relaxed);
        }
        match sent {
            Ok(()) => {
                self.dropped += std::mem::take(&mut self.unreported);
            }
            Err(TrySendError::Full(Command::Lines(mut batch))) => {
                // The note of an earlier drop, if this batch began with it, is lost with it.
                let lost = lines - u64::from(self.unreported > 0);
                self.unreported += lost;
                batch.clear();
                let t = self.start.elapsed();
                batch.event(
                    t,
                    "dropped",
                    &serde_json::json!({ "lines": self.unreported }),
                );
                self.batch = batch;
                self.count_line();
            }
            Err(_) => {
                if !std::mem::replace(&mut self.writer_gone, true) {
                    tracing::warn!("the trace writer stopped: lines are lost");
                }
            }
        }
    }

    /// How many lines were dropped so far because the writer was behind.
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped + self.unreported
    }

    /// The first line: the chain. Then a `spawn` line per started component.
    pub(crate) fn header(&mut self, mode: &str, connection: Option<&str>, members: &[Member]) {
        self.dialects = members
            .iter()
            .map(|m| m.dialect.as_deref().and_then(|d| d.parse().ok()))
            .collect();
        let names = members
            .iter()
            .map(|m| format!("{}:{}", m.position, m.name))
            .collect();
        let _ = self.to_writer.try_send(Command::Names(names));
        let start = humantime::format_rfc3339_micros(self.wall_start).to_string();
        let mut header = serde_json::json!({
            "v": FORMAT,
            "conductor": env!("CARGO_PKG_VERSION"),
            "mode": mode,
            "start": start,
            "components": members,
        });
        if let Some(connection) = connection {
            header["connection"] = connection.into();
        }
        self.event("chain", header);
        for member in members {
            if let Some(pid) = member.pid {
                self.event(
                    "spawn",
                    serde_json::json!({"component": member.position, "name": member.name, "pid": pid}),
                );
            }
        }
    }

    /// A component's exit: its status, and whether it ended before the chain did.
    pub(crate) fn exit(
        &mut self,
        position: usize,
        name: &str,
        status: &str,
        code: Option<i32>,
        crash: bool,
    ) {
        self.event(
            "exit",
            serde_json::json!({
                "component": position, "name": name, "status": status, "code": code, "crash": crash,
            }),
        );
    }

    /// What one hop negotiated (see [`crate::versions`]).
    pub(crate) fn version(&mut self, negotiated: &crate::versions::Negotiated, name: &str) {
        let component = match negotiated.answerer {
            Node::Component(p) => Some(p),
            _ => None,
        };
        let mut fields = serde_json::json!({
            "component": component,
            "name": name,
            "requested": negotiated.requested,
            "answered": negotiated.answered.as_ref().ok(),
            "fits": negotiated.fits(),
        });
        if let Err(code) = negotiated.answered {
            fields["error"] = code.into();
        }
        self.event("version", fields);
    }

    /// What a client did with a session (the session layer's note): attached, left,
    /// prompted, cancelled, answered a request of the agent's.
    pub(crate) fn session(&mut self, note: &crate::sessions::Note) {
        let mut fields = serde_json::json!({
            "session": note.session, "event": note.event, "connection": note.connection,
            "client": note.client, "role": note.role,
        });
        if let Some(method) = &note.method {
            fields["method"] = method.as_str().into();
        }
        self.event("session", fields);
    }

    /// One line a component wrote to its stderr.
    pub(crate) fn stderr(&mut self, position: usize, name: &str, line: &str) {
        self.event(
            "stderr",
            serde_json::json!({"component": position, "name": name, "line": line}),
        );
    }

    fn event(&mut self, kind: &'static str, fields: serde_json::Value) {
        let t = self.start.elapsed();
        self.batch.event(t, kind, &fields);
        self.pushed();
    }

    /// The time since the start, for [`Trace::record`]: read once for every message routed at
    /// the same time.
    pub(crate) fn now(&self) -> Duration {
        self.start.elapsed()
    }

    /// Records one hop of `message`, routed at `t` (see [`Trace::now`]).
    pub(crate) fn record(
        &mut self,
        t: Duration,
        table: &RoutingTable,
        hop: &Hop,
        message: &Message,
    ) {
        if table.proxy_mode() && !self.mode_said {
            self.mode_said = true;
            self.event("mode", serde_json::json!({"mode": "proxy"}));
        }
        self.batch.message(
            t,
            hop,
            table.agent_conn(),
            table.proxy_mode(),
            message,
            self.payloads,
        );
        self.pushed();
        if let (Some("initialize"), Node::Component(p), Message::Response(_)) =
            (hop.answers.as_deref(), hop.from, message)
        {
            self.note_dialect(table, p);
        }
    }

    /// Content the chain transformed on its way to a hop that does not take it (see
    /// `sacp::protocol::content`): `{"type": "transformed", "to", "direction", "method",
    /// "from", "into"}`.
    pub(crate) fn transformed(&mut self, table: &RoutingTable, one: &Transformed) {
        let to = match one.to {
            Node::Client if table.proxy_mode() => "client",
            Node::Client => "editor",
            Node::Outer => "successor",
            Node::Conductor => "conductor",
            Node::Bridge => "mcp-bridge",
            Node::Component(p) => table.name(p),
        };
        self.event(
            "transformed",
            serde_json::json!({
                "to": to,
                "direction": one.dir.as_str(),
                "method": one.method,
                "from": one.from,
                "into": one.into,
            }),
        );
    }

    /// Says a proxy's dialect once the routing table knows it.
    fn note_dialect(&mut self, table: &RoutingTable, position: usize) {
        let dialect = table.dialect(position);
        // The agent (the last component) speaks no proxy dialect.
        let proxies = self.dialects.len().saturating_sub(1);
        let Some(said) = self.dialects[..proxies].get_mut(position.wrapping_sub(1)) else {
            return;
        };
        if *said != Some(dialect) {
            *said = Some(dialect);
            self.event(
                "dialect",
                serde_json::json!({"component": position, "dialect": dialect.name()}),
            );
        }
    }

    /// When what is made is due in the file: [`FLUSH_EVERY`] after the oldest of it.
    pub(crate) fn due(&self) -> Option<Instant> {
        self.dirty_since.map(|since| since + FLUSH_EVERY)
    }

    /// Hands over what is made, to be written out now. When the writer is behind (the batch
    /// or the flush does not fit in its queue), the flush is due again [`FLUSH_EVERY`] later:
    /// what reached the file reaches the viewer's pages in the end, however the writer fell
    /// behind.
    pub(crate) fn flush(&mut self) {
        self.hand_over();
        let flushed = self.batch.is_empty()
            && match self.to_writer.try_send(Command::Flush(None)) {
                Ok(()) => true,
                Err(TrySendError::Full(_)) => false,
                Err(TrySendError::Disconnected(_)) => {
                    self.writer_gone = true;
                    true
                }
            };
        self.dirty_since = if flushed || self.writer_gone {
            None
        } else {
            Some(Instant::now())
        };
    }

    /// Writes out everything, and waits (five seconds at most: a trace nobody reads must not
    /// keep the conductor from ending) until it is in the file.
    pub(crate) async fn finish(&mut self) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        // The last lines wait for room, as long as the deadline allows.
        while !self.batch.is_empty() && tokio::time::Instant::now() < deadline {
            self.hand_over();
            if self.batch.is_empty() || self.writer_gone {
                break;
            }
            // Dropped (and noted): the note is what waits for room now.
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        self.dirty_since = None;
        if self.dropped() > 0 {
            tracing::warn!(
                dropped = self.dropped(),
                "the trace writer could not keep up: {} lines were dropped (see the `dropped` lines of {})",
                self.dropped(),
                self.path.display()
            );
        }
        let (done, written) = tokio::sync::oneshot::channel();
        let mut command = Command::Flush(Some(done));
        loop {
            match self.to_writer.try_send(command) {
                Ok(()) => {
                    let _ = tokio::time::timeout_at(deadline, written).await;
                    return;
                }
                Err(TrySendError::Full(back)) if tokio::time::Instant::now() < deadline => {
                    command = back;
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                Err(_) => return,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;

    use super::Trace;

    /// The count of batches waiting for the writer (which tells it whether to give way) is
    /// back at zero once everything is written, and every line is in the file or counted as
    /// dropped: no batch is counted twice or missed, whether it was sent or dropped.
    #[tokio::test]
    async fn every_batch_handed_over_is_counted_once() {
        let path =
            std::env::temp_dir().join(format!("sacp-trace-waiting-{}.jsonl", std::process::id()));
        let mut trace = Trace::create(&path, false).expect("create the trace");
        const LINES: u64 = 50_000;
        for i in 0..LINES {
            trace.stderr(1, "agent", &format!("line {i}"));
            if i % 7_000 == 0 {
                trace.flush();
            }
        }
        trace.finish().await;
        assert_eq!(trace.waiting.load(Ordering::Relaxed), 0);
        let text = std::fs::read_to_string(&path).expect("read the trace");
        let _ = std::fs::remove_file(&path);
        let notes = text.matches(r#""type":"dropped""#).count() as u64;
        let stderr = text.lines().count() as u64 - notes;
        assert_eq!(stderr + trace.dropped(), LINES, "{notes} drop notes");
    }
}
