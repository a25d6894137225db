//! The trace's writer thread: makes the lines of the batches the event loop hands it (see
//! [`super::record`]), writes them, and hands the batches back.

use std::fs::File;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, SyncSender};
use std::time::Duration;

use sacp::protocol::routing::{Dir, Node};
use tokio::sync::watch;

use super::flows::Flows;
use super::pace::Pace;
use super::record::{Batch, Line, MessageLine};
use super::redact;
use super::scheduling::Scheduling;
use super::sink::Sink;

/// What the event loop tells the writer.
#[derive(Debug)]
pub(super) enum Command {
    /// The `from`/`to` names of the components, by position - 1 (before their first line).
    Names(Vec<String>),
    Lines(Batch),
    /// Into the file now; say so when done.
    Flush(Option<tokio::sync::oneshot::Sender<()>>),
}

/// The largest text a batch may keep when it goes back for another round (one with a large
/// payload in it is let go).
const KEPT_TEXT: usize = 1 << 20;

#[derive(Debug)]
pub(super) struct Writer {
    payloads: bool,
    /// The lines made, and the file.
    sink: Sink,
    seq: u64,
    /// `,"t":…` of the last line, and its `t`.
    times: (Option<Duration>, Vec<u8>),
    /// The components' names, by position - 1, as JSON strings.
    names: Vec<String>,
    hops: HopFields,
    flows: Flows,
    written: watch::Sender<u64>,
    /// Batches go back to the loop here.
    spent: SyncSender<Batch>,
    /// Batches the loop handed over and this thread has not taken yet (see
    /// [`GiveWay`](super::scheduling::GiveWay)).
    waiting: Arc<AtomicUsize>,
    /// The lines the loop made so far, and when to make them (see [`super::pace`]).
    made: Arc<AtomicU64>,
    pace: Option<Pace>,
}

impl Writer {
    pub(super) fn new(
        file: File,
        payloads: bool,
        written: watch::Sender<u64>,
        spent: SyncSender<Batch>,
        waiting: Arc<AtomicUsize>,
        (made, pace): (Arc<AtomicU64>, Option<Pace>),
    ) -> Writer {
        Writer {
            payloads,
            sink: Sink::new(file, super::sink::direct_from_env()),
            seq: 0,
            times: (None, Vec::with_capacity(32)),
            names: Vec::new(),
            hops: HopFields::default(),
            flows: Flows::default(),
            written,
            spent,
            waiting,
            made,
            pace,
        }
    }

    pub(super) fn run(mut self, commands: Receiver<Command>, scheduling: Scheduling) {
        scheduling.apply();
        let mut giving = scheduling.giving();
        for command in commands {
            match command {
                Command::Names(names) => {
                    self.hops.clear();
                    self.names = names
                        .iter()
                        .map(|name| serde_json::to_string(name).unwrap_or_default())
                        .collect();
                }
                Command::Lines(mut batch) => {
                    self.waiting.fetch_sub(1, Ordering::Relaxed);
                    if let Some(pace) = &mut self.pace {
                        pace.defer(&self.made, || self.waiting.load(Ordering::Relaxed));
                    }
                    for line in &batch.lines {
                        if let Some(giving) = &mut giving {
                            giving.line(&self.waiting);
                        }
                        match *line {
                            Line::Message(message) => self.message(&batch, &message),
                            Line::Event { t, kind, fields } => {
                                self.begin(t, kind);
                                self.sink.out.extend_from_slice(batch.get(fields));
                                self.end();
                            }
                        }
                    }
                    if batch.text.capacity() <= KEPT_TEXT {
                        batch.clear();
                        // The loop makes a new one when none is back.
                        let _ = self.spent.try_send(batch);
                    }
                }
                Command::Flush(done) => {
                    self.write_out();
                    self.written.send_replace(self.seq);
                    if let Some(done) = done {
                        let _ = done.send(());
                    }
                }
            }
        }
        self.write_out();
        self.written.send_replace(self.seq);
    }

    /// Into the file with what is made.
    fn write_out(&mut self) {
        self.sink.flush();
    }

    /// Starts a line: `{"seq":…,"t":…,"type":kind`.
    fn begin(&mut self, t: Duration, kind: &str) {
        self.stamp(t);
        self.sink.out.extend_from_slice(b",\"type\":\"");
        self.sink.out.extend_from_slice(kind.as_bytes());
        self.sink.out.push(b'"');
    }

    /// Starts a line with what every line has first: `{"seq":…,"t":…`. Its wall time is the
    /// first line's `start` plus `t`, so it is not written again (on every line it took 38 of
    /// ~260 bytes).
    fn stamp(&mut self, t: Duration) {
        self.sink.out.extend_from_slice(b"{\"seq\":");
        push_number(&mut self.sink.out, self.seq);
        self.seq += 1;
        // The lines of one routed batch share their time: made once for all of them.
        if self.times.0 != Some(t) {
            let times = &mut self.times.1;
            times.clear();
            times.extend_from_slice(b",\"t\":");
            push_number(times, t.as_secs());
            push_micros(times, t.subsec_micros());
            self.times.0 = Some(t);
        }
        self.sink.out.extend_from_slice(&self.times.1);
    }

    fn end(&mut self) {
        self.sink.out.extend_from_slice(b"}\n");
        self.sink.line_made();
    }

    /// `,"key":` then `value` as a JSON string.
    fn string_field(&mut self, key: &str, value: &[u8]) {
        self.key(key);
        push_string(&mut self.sink.out, value);
    }

    fn key(&mut self, key: &str) {
        self.sink.out.extend_from_slice(b",\"");
        self.sink.out.extend_from_slice(key.as_bytes());
        self.sink.out.extend_from_slice(b"\":");
    }

    /// One hop of a message.
    fn message(&mut self, batch: &Batch, m: &MessageLine) {
        let method = m.method(batch).unwrap_or_default();
        let session = m.session(batch);
        let method_hash = super::flows::hash(method);
        let flow = self.flows.flow(m, method_hash, session);

        self.stamp(m.t());
        let via = m.via(batch);
        let fields = self.hops.get(&self.names, m, (method, method_hash), via);
        self.sink.out.extend_from_slice(fields);
        if let Some(id) = m.id(batch) {
            self.sink.out.extend_from_slice(br#","id":"#);
            self.sink.out.extend_from_slice(id);
        }
        if let Some(session) = session {
            // As it was written between its quotes: nothing to escape.
            self.sink.out.extend_from_slice(br#","session":""#);
            self.sink.out.extend_from_slice(session);
            self.sink.out.push(b'"');
        }
        self.sink.out.extend_from_slice(br#","size":"#);
        push_number(&mut self.sink.out, m.size());
        if let Some((conn, id)) = m.key() {
            self.sink.out.extend_from_slice(br#","pair":""#);
            push_number(&mut self.sink.out, conn as u64);
            self.sink.out.push(b':');
            push_number(&mut self.sink.out, id.unsigned_abs());
            self.sink.out.push(b'"');
        }
        self.sink.out.extend_from_slice(br#","flow":"#);
        push_number(&mut self.sink.out, flow);
        if let Some(mcp) = m.mcp(batch) {
            self.string_field("mcp", mcp);
        }
        if self.payloads
            && let Some(payload) = m.payload(batch)
        {
            self.key("payload");
            let start = self.sink.out.len();
            self.sink.out.extend_from_slice(payload);
            if redact::needed(&self.sink.out[start..]) {
                let redacted = redact::redact(&self.sink.out[start..]);
                self.sink.out.truncate(start);
                self.sink.out.extend_from_slice(&redacted);
            }
        }
        self.end();
    }
}

/// Appends `text` as a JSON string: copied between quotes when nothing in it needs escaping,
/// as almost every method and name does.
fn push_string(out: &mut Vec<u8>, text: &[u8]) {
    /// The bytes a JSON string escapes.
    const ESCAPED: [bool; 256] = {
        let mut escaped = [false; 256];
        let mut b = 0;
        while b < 0x20 {
            escaped[b] = true;
            b += 1;
        }
        escaped[b'"' as usize] = true;
        escaped[b'\\' as usize] = true;
        escaped
    };
    if !text.iter().fold(false, |any, &b| any | ESCAPED[b as usize]) {
        out.push(b'"');
        out.extend_from_slice(text);
        out.push(b'"');
    } else {
        let _ = serde_json::to_writer(out, &String::from_utf8_lossy(text));
    }
}

/// Appends `n` in decimal.
pub(super) fn push_number(out: &mut Vec<u8>, n: u64) {
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
}

/// Appends `micros` (below a million) as a dot and six digits.
fn push_micros(out: &mut Vec<u8>, micros: u32) {
    let mut buffer = itoa::Buffer::new();
    // `1_000_000 + micros` has seven digits: the first becomes the dot.
    let digits = buffer.format(1_000_000 + micros.min(999_999)).as_bytes();
    out.push(b'.');
    out.extend_from_slice(&digits[1..]);
}

/// The fields of a message line that depend only on its hop, kind, method and envelope, made
/// once for each: `,"type":"message","from":…,"to":…,"hop":k,"direction":"…","kind":"…",
/// "method":"…","via":"…"`.
#[derive(Debug, Default)]
struct HopFields(foldhash::HashMap<(u64, u64, u64), Box<[u8]>>);

/// How many kinds of hop fields are kept: a peer that makes up methods only makes them be
/// made again.
const HOP_FIELDS: usize = 4096;

impl HopFields {
    fn get(
        &mut self,
        names: &[String],
        m: &MessageLine,
        (method, method_hash): (&[u8], u64),
        via: Option<&[u8]>,
    ) -> &[u8] {
        let hop = m.ends()
            | u64::from(m.dir == Dir::Down) << 48
            | (m.kind as u64) << 49
            | u64::from(m.proxy_mode()) << 52
            | u64::from(m.has_method()) << 53;
        let key = (hop, method_hash, via.map_or(0, super::flows::hash));
        if self.0.len() >= HOP_FIELDS && !self.0.contains_key(&key) {
            self.0.clear();
        }
        self.0
            .entry(key)
            .or_insert_with(|| hop_fields(names, m, method, via))
    }

    /// The components' names changed.
    fn clear(&mut self) {
        self.0.clear();
    }
}

fn hop_fields(names: &[String], m: &MessageLine, method: &[u8], via: Option<&[u8]>) -> Box<[u8]> {
    let name = |node: Node| match node {
        Node::Client if m.proxy_mode() => r#""client""#,
        Node::Client => r#""editor""#,
        Node::Outer => r#""successor""#,
        Node::Conductor => r#""conductor""#,
        Node::Bridge => r#""mcp-bridge""#,
        Node::Component(p) => names.get(p - 1).map_or(r#""?""#, String::as_str),
    };
    let mut out = br#","type":"message","from":"#.to_vec();
    out.extend_from_slice(name(m.from()).as_bytes());
    out.extend_from_slice(br#","to":"#);
    out.extend_from_slice(name(m.to()).as_bytes());
    if let Some(number) = hop_number(m) {
        out.extend_from_slice(br#","hop":"#);
        push_number(&mut out, number as u64);
    }
    out.extend_from_slice(if m.dir == Dir::Down {
        br#","direction":"down","kind":""#
    } else {
        br#","direction":"up","kind":""#
    });
    out.extend_from_slice(m.kind.as_str().as_bytes());
    out.push(b'"');
    if m.has_method() {
        out.extend_from_slice(br#","method":"#);
        push_string(&mut out, method);
    }
    if let Some(via) = via {
        out.extend_from_slice(br#","via":"#);
        push_string(&mut out, via);
    }
    out.into_boxed_slice()
}

/// The hop a message makes: `k` between position `k - 1` and `k` (the editor is 0); `None` for
/// the conductor's own answers and its MCP bridges.
fn hop_number(m: &MessageLine) -> Option<usize> {
    let position = |node: Node| match node {
        Node::Client => Some(0),
        Node::Component(p) => Some(p),
        Node::Outer => None,
        Node::Conductor | Node::Bridge => None,
    };
    let (from, to) = (m.from(), m.to());
    match (position(from), position(to)) {
        (Some(a), Some(b)) => Some(a.max(b)),
        // The successor (proxy mode) is after the last component.
        (Some(a), None) if matches!(to, Node::Outer) => Some(a + 1),
        (None, Some(b)) if matches!(from, Node::Outer) => Some(b + 1),
        _ => None,
    }
}
