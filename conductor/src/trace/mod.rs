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

/// How long lines may wait in the buffer while the conductor is busy.
const FLUSH_EVERY: Duration = Duration::from_millis(50);

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

/// An open trace file.
#[derive(Debug)]
pub(crate) struct Trace {
    out: BufWriter<File>,
    path: PathBuf,
    payloads: bool,
    line: Vec<u8>,
    seq: u64,
    start: Instant,
    last_flush: Instant,
    flows: Flows,
    /// The dialects said so far, by position - 1.
    dialects: Vec<Option<Dialect>>,
    mode_said: bool,
    /// The number of lines written to the file so far.
    written: watch::Sender<u64>,
}

impl Trace {
    /// Creates (or truncates) the trace file, readable by its owner only.
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
        let now = Instant::now();
        Ok(Trace {
            out: BufWriter::with_capacity(64 * 1024, file),
            path: path.to_owned(),
            payloads,
            line: Vec::with_capacity(512),
            seq: 0,
            start: now,
            last_flush: now,
            flows: Flows::default(),
            dialects: Vec::new(),
            mode_said: false,
            written: watch::channel(0).0,
        })
    }

    /// The `seq` of the last line so far.
    pub(crate) fn last_seq(&self) -> u64 {
        self.seq.saturating_sub(1)
    }

    /// The file.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// How many lines are in the file, as it grows.
    pub(crate) fn written(&self) -> watch::Receiver<u64> {
        self.written.subscribe()
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

    /// A line of `kind` with `fields` (an object) after the common ones.
    fn event(&mut self, kind: &str, fields: serde_json::Value) {
        self.begin(kind);
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

    /// Starts a line: `{"seq":…,"t":…,"time":…,"type":kind`.
    fn begin(&mut self, kind: &str) {
        use std::io::Write as _;
        let t = self.start.elapsed().as_secs_f64();
        let time = humantime::format_rfc3339_micros(SystemTime::now());
        self.line.clear();
        let _ = write!(
            self.line,
            r#"{{"seq":{},"t":{t:.6},"time":"{time}","type":"{kind}""#,
            self.seq
        );
        self.seq += 1;
    }

    /// Ends a line and writes it out (to the buffer; to the file when due).
    fn end(&mut self) {
        self.line.extend_from_slice(b"}\n");
        if let Err(e) = self.out.write_all(&self.line) {
            tracing::warn!("cannot write the trace file: {e}");
        }
        if self.last_flush.elapsed() >= FLUSH_EVERY {
            self.flush();
        }
    }

    fn string_field(&mut self, key: &str, value: &str) {
        self.line.push(b',');
        self.line.push(b'"');
        self.line.extend_from_slice(key.as_bytes());
        self.line.extend_from_slice(b"\":");
        let _ = serde_json::to_writer(&mut self.line, value);
    }

    fn number_field(&mut self, key: &str, value: impl std::fmt::Display) {
        use std::io::Write as _;
        let _ = write!(self.line, r#","{key}":{value}"#);
    }

    /// Records one hop of `message`.
    pub(crate) fn record(&mut self, router: &RoutingTable, hop: &Hop, message: &Message) {
        if router.proxy_mode() && !self.mode_said {
            self.mode_said = true;
            self.event("mode", serde_json::json!({"mode": "proxy"}));
        }
        let node = |node: Node| match node {
            Node::Client if router.proxy_mode() => "client".to_owned(),
            Node::Client => "editor".to_owned(),
            Node::Successor => "successor".to_owned(),
            Node::Conductor => "conductor".to_owned(),
            Node::Bridge => "mcp-bridge".to_owned(),
            Node::Component(p) => format!("{p}:{}", router.name(p)),
        };
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
        let (from, to) = (node(hop.from), node(hop.to));
        let session = match kind {
            "request" | "notification" => inner.and_then(|p| session_of(p.as_bytes())),
            _ => None,
        };
        let mcp = method.and_then(|m| mcp_of(m, inner));
        let content = match kind {
            "request" | "notification" => inner.map_or(0, |p| flows::hash(p.as_bytes())),
            _ => 0,
        };
        let flow = self.flows.flow(
            router,
            hop,
            kind,
            method.unwrap_or_default(),
            session.as_deref(),
            content,
        );
        if kind == "response"
            && method == Some("initialize")
            && let Node::Component(p) = hop.from
        {
            self.note_dialect(router, p);
        }

        self.begin("message");
        self.string_field("from", &from);
        self.string_field("to", &to);
        if let Some(hop) = hop_number(hop) {
            self.number_field("hop", hop);
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
        if let Some(session) = &session {
            self.string_field("session", session);
        }
        self.number_field("size", payload.map_or(0, RawJson::len));
        if let Some((conn, id)) = hop.key {
            use std::io::Write as _;
            let _ = write!(self.line, r#","pair":"{conn}:{id}""#);
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

    /// Writes out what is buffered.
    pub(crate) fn flush(&mut self) {
        if let Err(e) = self.out.flush() {
            tracing::warn!("cannot write the trace file: {e}");
        }
        self.last_flush = Instant::now();
        self.written.send_replace(self.seq);
    }
}

/// The hop a message makes: `k` between position `k - 1` and `k` (the editor is 0); `None` for
/// the conductor's own answers and its MCP bridges.
fn hop_number(hop: &Hop) -> Option<usize> {
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
fn session_of(bytes: &[u8]) -> Option<String> {
    const KEY: &[u8] = br#""sessionId":""#;
    let start = bytes.windows(KEY.len()).position(|w| w == KEY)? + KEY.len();
    let rest = &bytes[start..];
    let end = rest.iter().position(|&b| b == b'"' || b == b'\\')?;
    std::str::from_utf8(&rest[..end]).ok().map(str::to_owned)
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
