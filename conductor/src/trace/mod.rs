//! `--trace FILE`: the chain's traffic, one JSON line per message per hop, and what happens to
//! its components — trace format 2, documented in the README ("Traces") and described by
//! `conductor/trace.schema.json`.
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
//! Every line has `seq` (from 0), `t` (seconds since the conductor started, monotonic) and
//! `time` (wall clock, RFC 3339). The file is created `0600`: it holds prompts and files.
//! Lines are buffered and written whenever the conductor has nothing else to do, at least every
//! [`FLUSH_EVERY`] while it is busy, and at the end; [`Trace::written`] says how far, for the
//! viewer ([`serve`]).

mod flows;
mod redact;
pub(crate) mod serve;
pub(crate) mod summary;

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use sacp::jsonrpc::{Message, RawJson, ResponseBody};
use sacp::protocol::dialect::Dialect;
use sacp::protocol::routing::{Hop, Node, RoutingTable};
use tokio::sync::watch;

use self::flows::Flows;

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
}

/// One hop, as the writer needs it.
#[derive(Debug)]
pub(super) struct HopOf {
    pub(super) from: Node,
    pub(super) to: Node,
    pub(super) dir: sacp::protocol::routing::Dir,
    pub(super) answers: Option<Box<str>>,
    pub(super) key: Option<(sacp::protocol::routing::Conn, i64)>,
    /// The agent's position, and whether the conductor runs as a proxy (then it has none).
    pub(super) agent: usize,
    pub(super) proxy_mode: bool,
}

/// What the event loop hands the writer: a line to make.
#[derive(Debug)]
enum Item {
    Message {
        t: Duration,
        hop: HopOf,
        message: Message,
    },
    Event {
        t: Duration,
        kind: &'static str,
        fields: serde_json::Value,
    },
}

#[derive(Debug)]
enum Command {
    Items(Vec<Item>),
    /// Into the file now; say so when done.
    Flush(Option<tokio::sync::oneshot::Sender<()>>),
}

/// How many lines the loop hands over at once (or fewer, when they are due).
const BATCH: usize = 256;
/// How many batches may wait for the writer before the loop waits for it.
const BATCHES: usize = 64;

/// An open trace: the event loop's side. Lines are made and written by a thread of their own
/// (the loop only hands over what it routed, a reference count and a few fields a message),
/// so that tracing costs the chain little: see the chain bench's `N = 3 traced`.
#[derive(Debug)]
pub(crate) struct Trace {
    path: PathBuf,
    start: Instant,
    batch: Vec<Item>,
    /// When the oldest line not yet handed over was made.
    dirty_since: Option<Instant>,
    to_writer: std::sync::mpsc::SyncSender<Command>,
    written: watch::Receiver<u64>,
    /// Lines made so far.
    made: u64,
    /// The dialects said so far, by position - 1.
    dialects: Vec<Option<Dialect>>,
    mode_said: bool,
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
        // An existing file keeps its mode through `open`: make it the owner's.
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        let start = Instant::now();
        let (written_tx, written) = watch::channel(0);
        let (to_writer, commands) = std::sync::mpsc::sync_channel(BATCHES);
        let writer = Writer {
            out: BufWriter::with_capacity(256 * 1024, file),
            payloads,
            line: Vec::with_capacity(512),
            seq: 0,
            wall_start: SystemTime::now(),
            clock: (u64::MAX, String::new()),
            names: Vec::new(),
            flows: Flows::default(),
            written: written_tx,
        };
        std::thread::Builder::new()
            .name("trace".into())
            .spawn(move || writer.run(commands))?;
        Ok(Trace {
            path: path.to_owned(),
            start,
            batch: Vec::with_capacity(BATCH),
            dirty_since: None,
            to_writer,
            written,
            made: 0,
            dialects: Vec::new(),
            mode_said: false,
        })
    }

    /// The `seq` of the last line so far.
    pub(crate) fn last_seq(&self) -> u64 {
        self.made.saturating_sub(1)
    }

    /// The file.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// How many lines are in the file, as it grows.
    pub(crate) fn written(&self) -> watch::Receiver<u64> {
        self.written.clone()
    }

    fn push(&mut self, item: Item) {
        self.made += 1;
        self.batch.push(item);
        if self.dirty_since.is_none() {
            self.dirty_since = Some(Instant::now());
        }
        if self.batch.len() >= BATCH {
            self.hand_over();
        }
    }

    fn hand_over(&mut self) {
        if self.batch.is_empty() {
            return;
        }
        let items = std::mem::replace(&mut self.batch, Vec::with_capacity(BATCH));
        if self.to_writer.send(Command::Items(items)).is_err() {
            tracing::warn!("the trace writer stopped: lines are lost");
        }
    }

    /// The first line: the chain. Then a `spawn` line per started component.
    pub(crate) fn header(&mut self, mode: &str, members: &[Member]) {
        self.dialects = members
            .iter()
            .map(|m| m.dialect.as_deref().and_then(|d| d.parse().ok()))
            .collect();
        let start = humantime::format_rfc3339_micros(SystemTime::now()).to_string();
        self.event(
            "chain",
            serde_json::json!({
                "v": FORMAT,
                "conductor": env!("CARGO_PKG_VERSION"),
                "mode": mode,
                "start": start,
                "components": members,
            }),
        );
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

    /// One line a component wrote to its stderr.
    pub(crate) fn stderr(&mut self, position: usize, name: &str, line: &str) {
        self.event(
            "stderr",
            serde_json::json!({"component": position, "name": name, "line": line}),
        );
    }

    fn event(&mut self, kind: &'static str, fields: serde_json::Value) {
        let t = self.start.elapsed();
        self.push(Item::Event { t, kind, fields });
    }

    /// Records one hop of `message`.
    pub(crate) fn record(&mut self, router: &RoutingTable, hop: &Hop, message: &Message) {
        if router.proxy_mode() && !self.mode_said {
            self.mode_said = true;
            self.event("mode", serde_json::json!({"mode": "proxy"}));
        }
        let t = self.start.elapsed();
        self.push(Item::Message {
            t,
            hop: HopOf {
                from: hop.from,
                to: hop.to,
                dir: hop.dir,
                answers: hop.answers.clone(),
                key: hop.key,
                agent: router.agent_conn(),
                proxy_mode: router.proxy_mode(),
            },
            message: message.clone(),
        });
        if let (Some("initialize"), Node::Component(p), Message::Response(_)) =
            (hop.answers.as_deref(), hop.from, message)
        {
            self.note_dialect(router, p);
        }
    }

    /// Says a proxy's dialect once the router knows it.
    fn note_dialect(&mut self, router: &RoutingTable, position: usize) {
        let dialect = router.dialect(position);
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

    /// Hands over what is made, to be written out now.
    pub(crate) fn flush(&mut self) {
        self.hand_over();
        self.dirty_since = None;
        let _ = self.to_writer.send(Command::Flush(None));
    }

    /// Writes out everything, and waits until it is in the file.
    pub(crate) async fn finish(&mut self) {
        self.hand_over();
        self.dirty_since = None;
        let (done, written) = tokio::sync::oneshot::channel();
        if self.to_writer.send(Command::Flush(Some(done))).is_ok() {
            let _ = tokio::time::timeout(Duration::from_secs(5), written).await;
        }
    }
}

/// The trace's writer thread: makes the lines and writes them.
#[derive(Debug)]
struct Writer {
    out: BufWriter<File>,
    payloads: bool,
    line: Vec<u8>,
    seq: u64,
    /// The wall clock at the start: a line's wall time is it plus its `t`.
    wall_start: SystemTime,
    /// `"time":"…"` up to the seconds' dot, for the second it was made in.
    clock: (u64, String),
    /// `from`/`to` names of the components, by position - 1.
    names: Vec<String>,
    flows: Flows,
    written: watch::Sender<u64>,
}

impl Writer {
    fn run(mut self, commands: std::sync::mpsc::Receiver<Command>) {
        for command in commands {
            match command {
                Command::Items(items) => {
                    for item in items {
                        match item {
                            Item::Message { t, hop, message } => self.message(t, &hop, &message),
                            Item::Event { t, kind, fields } => self.event(t, kind, fields),
                        }
                    }
                }
                Command::Flush(done) => {
                    if let Err(e) = self.out.flush() {
                        tracing::warn!("cannot write the trace file: {e}");
                    }
                    self.written.send_replace(self.seq);
                    if let Some(done) = done {
                        let _ = done.send(());
                    }
                }
            }
        }
        let _ = self.out.flush();
        self.written.send_replace(self.seq);
    }

    fn event(&mut self, t: Duration, kind: &str, fields: serde_json::Value) {
        if kind == "chain"
            && let Some(components) = fields["components"].as_array()
        {
            self.names = components
                .iter()
                .map(|c| format!("{}:{}", c["position"], c["name"].as_str().unwrap_or("?")))
                .collect();
        }
        self.begin(t, kind);
        if let serde_json::Value::Object(fields) = fields {
            for (key, value) in fields {
                self.line.push(b',');
                let _ = serde_json::to_writer(&mut self.line, &key);
                self.line.push(b':');
                let _ = serde_json::to_writer(&mut self.line, &value);
            }
        }
        self.end();
    }

    /// Starts a line: `{"seq":…,"t":…,"time":…,"type":kind`. The wall time is the start's
    /// plus the monotonic `t`, its date part made once a second.
    fn begin(&mut self, t: Duration, kind: &str) {
        let since_epoch = (self.wall_start + t)
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default();
        let second = since_epoch.as_secs();
        if self.clock.0 != second {
            let whole = SystemTime::UNIX_EPOCH + Duration::from_secs(second);
            let text = humantime::format_rfc3339_seconds(whole).to_string();
            // `2026-11-26T01:13:41Z` without the `Z`: the micros and the `Z` follow.
            self.clock = (second, text.trim_end_matches('Z').to_owned());
        }
        self.line.clear();
        self.line.extend_from_slice(b"{\"seq\":");
        push_number(&mut self.line, self.seq);
        self.line.extend_from_slice(b",\"t\":");
        push_number(&mut self.line, t.as_secs());
        self.line.push(b'.');
        push_micros(&mut self.line, t.subsec_micros());
        self.line.extend_from_slice(b",\"time\":\"");
        self.line.extend_from_slice(self.clock.1.as_bytes());
        self.line.push(b'.');
        push_micros(&mut self.line, since_epoch.subsec_micros());
        self.line.extend_from_slice(b"Z\",\"type\":\"");
        self.line.extend_from_slice(kind.as_bytes());
        self.line.push(b'"');
        self.seq += 1;
    }

    fn end(&mut self) {
        self.line.extend_from_slice(b"}\n");
        if let Err(e) = self.out.write_all(&self.line) {
            tracing::warn!("cannot write the trace file: {e}");
        }
    }

    fn string_field(&mut self, key: &str, value: &str) {
        self.line.extend_from_slice(b",\"");
        self.line.extend_from_slice(key.as_bytes());
        self.line.extend_from_slice(b"\":");
        let _ = serde_json::to_writer(&mut self.line, value);
    }

    fn number_field(&mut self, key: &str, value: u64) {
        self.line.extend_from_slice(b",\"");
        self.line.extend_from_slice(key.as_bytes());
        self.line.extend_from_slice(b"\":");
        push_number(&mut self.line, value);
    }

    /// The `from`/`to` name of a node.
    fn node_name(names: &[String], node: Node, proxy_mode: bool) -> &str {
        match node {
            Node::Client if proxy_mode => "client",
            Node::Client => "editor",
            Node::Successor => "successor",
            Node::Conductor => "conductor",
            Node::Bridge => "mcp-bridge",
            Node::Component(p) => names.get(p - 1).map_or("?", String::as_str),
        }
    }

    /// One hop of a message.
    fn message(&mut self, t: Duration, hop: &HopOf, message: &Message) {
        let (kind, wire_method, id, payload) = match message {
            Message::Request(r) => (
                "request",
                Some(r.method.as_str()),
                Some(&r.id),
                r.params.as_ref(),
            ),
            Message::Notification(n) => (
                "notification",
                Some(n.method.as_str()),
                None,
                n.params.as_ref(),
            ),
            Message::Response(r) => {
                let (kind, raw) = match &r.body {
                    ResponseBody::Result(raw) => ("response", raw),
                    ResponseBody::Error(raw) => ("error", raw),
                };
                (kind, hop.answers.as_deref(), Some(&r.id), Some(raw))
            }
        };
        // The real method and params of what travels in an envelope (the router builds every
        // envelope it sends, so it has the parts at hand).
        let (method, via, inner) = match (wire_method, payload) {
            (Some(m), Some(p)) if id.is_none() || kind == "request" => match p.envelope_parts() {
                Some((inner_method, inner)) if sacp::protocol::envelope::is_envelope(m) => {
                    (Some(inner_method), Some(m), inner)
                }
                _ => (Some(m), None, payload),
            },
            _ => (wire_method, None, payload),
        };
        let session = match kind {
            "request" | "notification" => inner.and_then(|p| session_of(p.as_bytes())),
            _ => None,
        };
        let mcp = method.and_then(|m| mcp_of(m, inner));
        let content = match kind {
            "request" | "notification" => inner.map_or(0, |p| flows::hash(p.as_bytes())),
            _ => 0,
        };
        let flow = self
            .flows
            .flow(hop, kind, method.unwrap_or_default(), session, content);

        self.begin(t, "message");
        for (key, node) in [("from", hop.from), ("to", hop.to)] {
            self.line.extend_from_slice(b",\"");
            self.line.extend_from_slice(key.as_bytes());
            self.line.extend_from_slice(b"\":");
            let name = Writer::node_name(&self.names, node, hop.proxy_mode);
            let _ = serde_json::to_writer(&mut self.line, name);
        }
        if let Some(number) = hop_number(hop) {
            self.number_field("hop", number as u64);
        }
        self.string_field("direction", hop.dir.as_str());
        self.string_field("kind", kind);
        if let Some(method) = method {
            self.string_field("method", method);
        }
        if let Some(via) = via {
            self.string_field("via", via);
        }
        if let Some(id) = id {
            self.line.extend_from_slice(br#","id":"#);
            let _ = serde_json::to_writer(&mut self.line, id);
        }
        if let Some(session) = session {
            self.string_field("session", session);
        }
        self.number_field("size", payload.map_or(0, RawJson::len) as u64);
        if let Some((conn, id)) = hop.key {
            self.line.extend_from_slice(br#","pair":""#);
            push_number(&mut self.line, conn as u64);
            self.line.push(b':');
            push_number(&mut self.line, id.unsigned_abs());
            self.line.push(b'"');
        }
        self.number_field("flow", flow);
        if let Some(mcp) = &mcp {
            self.string_field("mcp", mcp);
        }
        if self.payloads
            && let Some(payload) = payload
        {
            self.line.extend_from_slice(br#","payload":"#);
            let start = self.line.len();
            payload.write_into(&mut self.line);
            if redact::needed(&self.line[start..]) {
                let redacted = redact::redact(&self.line[start..]);
                self.line.truncate(start);
                self.line.extend_from_slice(&redacted);
            }
        }
        self.end();
    }
}

/// Appends `n` in decimal.
fn push_number(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}

/// Appends `micros` as six digits.
fn push_micros(out: &mut Vec<u8>, micros: u32) {
    let mut digits = [b'0'; 6];
    let mut n = micros;
    for digit in digits.iter_mut().rev() {
        *digit = b'0' + (n % 10) as u8;
        n /= 10;
    }
    out.extend_from_slice(&digits);
}

/// The hop a message makes: `k` between position `k - 1` and `k` (the editor is 0); `None` for
/// the conductor's own answers and its MCP bridges.
fn hop_number(hop: &HopOf) -> Option<usize> {
    let position = |node: Node| match node {
        Node::Client => Some(0),
        Node::Component(p) => Some(p),
        Node::Successor => None,
        Node::Conductor | Node::Bridge => None,
    };
    match (position(hop.from), position(hop.to)) {
        (Some(a), Some(b)) => Some(a.max(b)),
        // The successor (proxy mode) is after the last component.
        (Some(a), None) if matches!(hop.to, Node::Successor) => Some(a + 1),
        (None, Some(b)) if matches!(hop.from, Node::Successor) => Some(b + 1),
        _ => None,
    }
}

/// The `sessionId` a message names (its first), found without parsing it.
fn session_of(bytes: &[u8]) -> Option<&str> {
    const KEY: &[u8] = br#""sessionId":""#;
    let start = memchr::memmem::find(bytes, KEY)? + KEY.len();
    let rest = &bytes[start..];
    let end = memchr::memchr2(b'"', b'\\', rest)?;
    std::str::from_utf8(&rest[..end]).ok()
}

/// The MCP server or connection of an MCP-over-ACP message.
fn mcp_of(method: &str, params: Option<&RawJson>) -> Option<String> {
    use sacp::protocol::mcp;
    #[derive(serde::Deserialize)]
    struct Named {
        acp_url: Option<String>,
        #[serde(alias = "connectionId")]
        connection_id: Option<String>,
        #[serde(rename = "serverId")]
        server_id: Option<String>,
    }
    if !mcp::is_mcp_message(method) && method != mcp::RFD_MESSAGE {
        return None;
    }
    let named: Named = params?.parse().ok()?;
    named
        .server_id
        .or(named.acp_url)
        .or(named.connection_id)
        .or_else(|| Some(String::new()))
}
