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
pub(super) enum Kind {
    Request,
    Notification,
    Response,
    Error,
}

impl Kind {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Kind::Request => "request",
            Kind::Notification => "notification",
            Kind::Response => "response",
            Kind::Error => "error",
        }
    }

    /// A response or an error.
    pub(super) fn answers(self) -> bool {
        matches!(self, Kind::Response | Kind::Error)
    }
}

/// One hop of one message, as its line needs it.
#[derive(Debug, Clone, Copy)]
pub(super) struct MessageLine {
    pub(super) t: Duration,
    pub(super) from: Node,
    pub(super) to: Node,
    pub(super) dir: Dir,
    pub(super) key: Option<(Conn, i64)>,
    /// The agent's position, and whether the conductor runs as a proxy (then it has none).
    pub(super) agent: usize,
    pub(super) proxy_mode: bool,
    pub(super) kind: Kind,
    /// The real method (a response's: the request's).
    pub(super) method: Option<Span>,
    /// The envelope it travelled in.
    pub(super) via: Option<Span>,
    /// The id as JSON.
    pub(super) id: Option<Span>,
    /// The real params of a request or notification, for its session and flow.
    pub(super) params: Params,
    /// Bytes of params, result or error.
    pub(super) size: u64,
    pub(super) mcp: Option<Span>,
    /// The params, result or error as written, when payloads are on.
    pub(super) payload: Option<Span>,
}

/// What a line needs of a request's or notification's real params: its session and a hash of
/// it, found by the loop. (Copying the params for the writer to look at instead fills a batch
/// with them, and each full batch wakes the writer: fewer, smaller batches cost the chain
/// less than the loop's look.)
#[derive(Debug, Clone, Copy)]
pub(super) enum Params {
    None,
    Found {
        session: Option<Span>,
        /// See [`super::flows::hash`].
        content: u64,
    },
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

    fn copy(&mut self, bytes: &[u8]) -> Span {
        let start = self.text.len();
        self.text.extend_from_slice(bytes);
        (start as u32, self.text.len() as u32)
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
        let (kind, wire_method, id, payload) = match message {
            Message::Request(r) => (
                Kind::Request,
                Some(r.method.as_str()),
                Some(&r.id),
                r.params.as_ref(),
            ),
            Message::Notification(n) => (
                Kind::Notification,
                Some(n.method.as_str()),
                None,
                n.params.as_ref(),
            ),
            Message::Response(r) => {
                let (kind, raw) = match &r.body {
                    ResponseBody::Result(raw) => (Kind::Response, raw),
                    ResponseBody::Error(raw) => (Kind::Error, raw),
                };
                (kind, hop.answers.as_deref(), Some(&r.id), Some(raw))
            }
        };
        // The real method and params of what travels in an envelope (the router builds every
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
        let params = match inner {
            Some(p) if !kind.answers() => Params::Found {
                session: session_of(p.as_bytes()).map(|s| self.copy(s)),
                content: super::flows::hash(p.as_bytes()),
            },
            _ => Params::None,
        };
        let mcp = method
            .and_then(|m| mcp_of(m, inner))
            .map(|m| self.copy(m.as_bytes()));
        let line = MessageLine {
            t,
            from: hop.from,
            to: hop.to,
            dir: hop.dir,
            key: hop.key,
            agent,
            proxy_mode,
            kind,
            method: method.map(|m| self.copy(m.as_bytes())),
            via: via.map(|v| self.copy(v.as_bytes())),
            id: id.map(|id| self.written(|out| write_id(out, id))),
            params,
            size: payload.map_or(0, RawJson::len) as u64,
            mcp,
            payload: match payload {
                Some(p) if payloads => Some(self.written(|out| p.write_into(out))),
                _ => None,
            },
        };
        self.lines.push(Line::Message(line));
    }
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
