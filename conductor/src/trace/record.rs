//! What the event loop hands the trace's writer: batches of fixed-size records, with one text
//! buffer a batch for their strings.
//!
//! The loop copies out of a message only what its line needs (a few short strings, the size,
//! a hash of the params, and the payload when payloads are on) and never hands over the
//! message itself: a message freed by another thread costs the allocator's lock on every
//! line, and the writer would keep the loop's buffers alive. Batches go back to the loop
//! once written (see [`super::Trace`]), so a busy chain traces without allocating.

use std::time::Duration;

use sacp::jsonrpc::{Id, Message, RawJson, ResponseBody};
use sacp::protocol::routing::{Conn, Dir, Hop, Node};

/// Where a string lies in its batch's text.
pub(super) type Span = (u32, u32);

/// What a message line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum MessageKind {
    Request,
    Notification,
    Response,
    Error,
}

impl MessageKind {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            MessageKind::Request => "request",
            MessageKind::Notification => "notification",
            MessageKind::Response => "response",
            MessageKind::Error => "error",
        }
    }

    /// A response or an error.
    pub(super) fn answers(self) -> bool {
        matches!(self, MessageKind::Response | MessageKind::Error)
    }
}

/// One hop of one message, as its line needs it, in 72 bytes: the loop writes these and the
/// writer reads them on the other core, so every byte of them crosses between two caches
/// (laid out plainly they took 200, and a traced chain's loop spent more time on those
/// misses than on the rest of its tracing).
#[derive(Debug, Clone, Copy)]
pub(super) struct MessageLine {
    /// Microseconds since the trace's start.
    micros: u64,
    /// A hash of the real params of a request or notification (see [`super::flows::hash`]),
    /// when it has them.
    content: u64,
    /// The pair key: the id on its connection, and the connection ([`NO_KEY`]: none).
    key_id: i64,
    key_conn: u32,
    /// Where the line's strings start in the batch's text. They follow each other: the
    /// method, the envelope (`via`), the id as JSON, the session, the MCP server, the payload.
    text: u32,
    /// The lengths of the method, via, id, session and MCP server ([`ABSENT`]: none).
    lens: [u32; 5],
    /// Bytes of params, result or error.
    size: u32,
    /// The payload's length, when payloads are on.
    payload: u32,
    /// See [`node_code`].
    from: u16,
    to: u16,
    /// The agent's position.
    agent: u16,
    pub(super) kind: MessageKind,
    pub(super) dir: Dir,
    /// [`PROXY_MODE`], [`PARAMS`], [`PAYLOAD`].
    flags: u8,
}

const NO_KEY: u32 = u32::MAX;
const ABSENT: u32 = u32::MAX;
/// The conductor runs as a proxy.
const PROXY_MODE: u8 = 1;
/// A request or notification with params: it has a `content` hash.
const PARAMS: u8 = 2;
/// The payload is kept.
const PAYLOAD: u8 = 4;

const METHOD: usize = 0;
const VIA: usize = 1;
const ID: usize = 2;
const SESSION: usize = 3;
const MCP: usize = 4;

/// A node in 16 bits: the client, successor, conductor and bridge 0 to 3, a component 4 + its
/// position.
fn node_code(node: Node) -> u16 {
    match node {
        Node::Client => 0,
        Node::Outer => 1,
        Node::Conductor => 2,
        Node::Bridge => 3,
        Node::Component(p) => u16::try_from(p + 4).unwrap_or(u16::MAX),
    }
}

fn node_of(code: u16) -> Node {
    match code {
        0 => Node::Client,
        1 => Node::Outer,
        2 => Node::Conductor,
        3 => Node::Bridge,
        p => Node::Component(usize::from(p) - 4),
    }
}

impl MessageLine {
    pub(super) fn t(&self) -> Duration {
        Duration::from_micros(self.micros)
    }

    pub(super) fn from(&self) -> Node {
        node_of(self.from)
    }

    pub(super) fn to(&self) -> Node {
        node_of(self.to)
    }

    /// Both ends, as one number (for keys).
    pub(super) fn ends(&self) -> u64 {
        u64::from(self.from) | u64::from(self.to) << 16
    }

    pub(super) fn agent(&self) -> usize {
        usize::from(self.agent)
    }

    pub(super) fn proxy_mode(&self) -> bool {
        self.flags & PROXY_MODE != 0
    }

    pub(super) fn key(&self) -> Option<(Conn, i64)> {
        (self.key_conn != NO_KEY).then_some((self.key_conn as Conn, self.key_id))
    }

    pub(super) fn size(&self) -> u64 {
        u64::from(self.size)
    }

    /// The hash of the real params of a request or notification.
    pub(super) fn content(&self) -> Option<u64> {
        (self.flags & PARAMS != 0).then_some(self.content)
    }

    /// Where the `n`th of the line's strings starts in its batch's text (the payload is the
    /// sixth).
    fn start(&self, n: usize) -> usize {
        self.text as usize
            + self.lens[..n]
                .iter()
                .filter(|&&len| len != ABSENT)
                .map(|&len| len as usize)
                .sum::<usize>()
    }

    /// The `n`th of the line's strings in `batch`, when it has it.
    fn string<'b>(&self, batch: &'b Batch, n: usize) -> Option<&'b [u8]> {
        if self.lens[n] == ABSENT {
            return None;
        }
        let start = self.start(n);
        batch.text.get(start..start + self.lens[n] as usize)
    }

    /// The real method (a response's: its request's).
    pub(super) fn method<'b>(&self, batch: &'b Batch) -> Option<&'b [u8]> {
        self.string(batch, METHOD)
    }

    pub(super) fn has_method(&self) -> bool {
        self.lens[METHOD] != ABSENT
    }

    /// The envelope it travelled in.
    pub(super) fn via<'b>(&self, batch: &'b Batch) -> Option<&'b [u8]> {
        self.string(batch, VIA)
    }

    /// The id as JSON.
    pub(super) fn id<'b>(&self, batch: &'b Batch) -> Option<&'b [u8]> {
        self.string(batch, ID)
    }

    /// The session its params name, as written between their quotes.
    pub(super) fn session<'b>(&self, batch: &'b Batch) -> Option<&'b [u8]> {
        self.string(batch, SESSION)
    }

    /// The MCP server or connection of MCP-over-ACP traffic.
    pub(super) fn mcp<'b>(&self, batch: &'b Batch) -> Option<&'b [u8]> {
        self.string(batch, MCP)
    }

    /// The params, result or error as written, when payloads are on.
    pub(super) fn payload<'b>(&self, batch: &'b Batch) -> Option<&'b [u8]> {
        if self.flags & PAYLOAD == 0 {
            return None;
        }
        let start = self.start(self.lens.len());
        batch.text.get(start..start + self.payload as usize)
    }
}

/// One line to make.
#[derive(Debug, Clone, Copy)]
pub(super) enum Line {
    Message(MessageLine),
    /// An event: its fields already written, each as `,"key":value`.
    Event {
        t: Duration,
        kind: &'static str,
        fields: Span,
    },
}

/// Lines, and the text their spans point into.
#[derive(Debug, Default)]
pub(super) struct Batch {
    pub(super) lines: Vec<Line>,
    pub(super) text: Vec<u8>,
}

impl Batch {
    pub(super) fn with_capacity(lines: usize) -> Batch {
        Batch {
            lines: Vec::with_capacity(lines),
            text: Vec::with_capacity(lines * 64),
        }
    }

    pub(super) fn len(&self) -> usize {
        self.lines.len()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// Empties it for another round.
    pub(super) fn clear(&mut self) {
        self.lines.clear();
        self.text.clear();
    }

    /// The text of a span.
    pub(super) fn get(&self, (start, end): Span) -> &[u8] {
        &self.text[start as usize..end as usize]
    }

    /// The span of what `write` appends.
    fn written(&mut self, write: impl FnOnce(&mut Vec<u8>)) -> Span {
        let start = self.text.len();
        write(&mut self.text);
        (start as u32, self.text.len() as u32)
    }

    /// An event line with these fields (a JSON object).
    pub(super) fn event(&mut self, t: Duration, kind: &'static str, fields: &serde_json::Value) {
        let fields = self.written(|out| {
            if let serde_json::Value::Object(fields) = fields {
                for (key, value) in fields {
                    out.push(b',');
                    let _ = serde_json::to_writer(&mut *out, key);
                    out.push(b':');
                    let _ = serde_json::to_writer(&mut *out, value);
                }
            }
        });
        self.lines.push(Line::Event { t, kind, fields });
    }

    /// A line for one hop of `message`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn message(
        &mut self,
        t: Duration,
        hop: &Hop,
        agent: usize,
        proxy_mode: bool,
        message: &Message,
        payloads: bool,
    ) {
        let (kind, wire_method, id, payload) = parts(message, hop);
        // The real method and params of what travels in an envelope (the routing table builds every
        // envelope it sends, so it has the parts at hand).
        let (method, via, inner) = match (wire_method, payload) {
            (Some(m), Some(p)) if !kind.answers() && sacp::protocol::envelope::is_envelope(m) => {
                match p.envelope_parts() {
                    Some((inner_method, inner)) => (Some(inner_method), Some(m), inner),
                    None => (Some(m), None, payload),
                }
            }
            _ => (wire_method, None, payload),
        };
        let text = self.text.len();
        let mut lens = [ABSENT; 5];
        if let Some(method) = method {
            put(&mut self.text, &mut lens, METHOD, |out| {
                out.extend_from_slice(method.as_bytes())
            });
        }
        if let Some(via) = via {
            put(&mut self.text, &mut lens, VIA, |out| {
                out.extend_from_slice(via.as_bytes())
            });
        }
        if let Some(id) = id {
            put(&mut self.text, &mut lens, ID, |out| write_id(out, id));
        }
        let mut flags = if proxy_mode { PROXY_MODE } else { 0 };
        let mut content = 0;
        if let Some(params) = inner
            && !kind.answers()
        {
            flags |= PARAMS;
            content = super::flows::hash(params.as_bytes());
            if let Some(session) = session_of(params.as_bytes()) {
                put(&mut self.text, &mut lens, SESSION, |out| {
                    out.extend_from_slice(session)
                });
            }
        }
        if let Some(mcp) = method.and_then(|m| mcp_of(m, inner)) {
            put(&mut self.text, &mut lens, MCP, |out| {
                out.extend_from_slice(mcp.as_bytes())
            });
        }
        let mut payload_len = 0;
        if let Some(p) = payload
            && payloads
        {
            flags |= PAYLOAD;
            let start = self.text.len();
            p.write_into(&mut self.text);
            payload_len = u32::try_from(self.text.len() - start).unwrap_or(u32::MAX);
        }
        let (key_conn, key_id) = match hop.key {
            Some((conn, id)) => (u32::try_from(conn).unwrap_or(NO_KEY - 1), id),
            None => (NO_KEY, 0),
        };
        self.lines.push(Line::Message(MessageLine {
            micros: u64::try_from(t.as_micros()).unwrap_or(u64::MAX),
            content,
            key_id,
            key_conn,
            text: u32::try_from(text).unwrap_or(u32::MAX),
            lens,
            size: u32::try_from(payload.map_or(0, RawJson::len)).unwrap_or(u32::MAX),
            payload: payload_len,
            from: node_code(hop.from),
            to: node_code(hop.to),
            agent: u16::try_from(agent).unwrap_or(u16::MAX),
            kind,
            dir: hop.dir,
            flags,
        }));
    }
}

/// What a line of `message` is made of: its kind, its method on the wire (an answer's is the
/// method it answers, from its hop), its id, its payload.
fn parts<'a>(
    message: &'a Message,
    hop: &'a Hop,
) -> (
    MessageKind,
    Option<&'a str>,
    Option<&'a Id>,
    Option<&'a RawJson>,
) {
    match message {
        Message::Request(r) => (
            MessageKind::Request,
            Some(r.method.as_str()),
            Some(&r.id),
            r.params.as_ref(),
        ),
        Message::Notification(n) => (
            MessageKind::Notification,
            Some(n.method.as_str()),
            None,
            n.params.as_ref(),
        ),
        Message::Response(r) => {
            let (kind, raw) = match &r.body {
                ResponseBody::Result(raw) => (MessageKind::Response, raw),
                ResponseBody::Error(raw) => (MessageKind::Error, raw),
            };
            (kind, hop.answers.as_deref(), Some(&r.id), Some(raw))
        }
    }
}

/// Appends a line's `n`th string to `text` and notes its length.
fn put(text: &mut Vec<u8>, lens: &mut [u32; 5], n: usize, write: impl FnOnce(&mut Vec<u8>)) {
    let start = text.len();
    write(text);
    lens[n] = u32::try_from(text.len() - start).unwrap_or(ABSENT - 1);
}

/// An id as JSON.
fn write_id(out: &mut Vec<u8>, id: &Id) {
    match id {
        Id::Number(n) => {
            if *n < 0 {
                out.push(b'-');
            }
            super::writer::push_number(out, n.unsigned_abs());
        }
        other => {
            let _ = serde_json::to_writer(out, other);
        }
    }
}

/// The `sessionId` a message names (its first), found without parsing it: what lies between
/// its quotes, as written (so it needs no escaping again).
pub(super) fn session_of(bytes: &[u8]) -> Option<&[u8]> {
    const KEY: &[u8] = br#""sessionId":""#;
    static FINDER: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(KEY));
    // Most ACP params name their session first: no search for those.
    let start = if bytes.get(1..=KEY.len()) == Some(KEY) && bytes[0] == b'{' {
        1 + KEY.len()
    } else {
        FINDER.find(bytes)? + KEY.len()
    };
    let rest = &bytes[start..];
    let end = memchr::memchr2(b'"', b'\\', rest)?;
    Some(&rest[..end])
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

// The size the layout of `MessageLine` is for.
const _: () = assert!(std::mem::size_of::<MessageLine>() <= 72);
