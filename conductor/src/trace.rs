//! `--trace FILE`: one JSON line per message per hop.
//!
//! ```json
//! {"time":"2026-11-22T10:00:00.123456Z","from":"editor","to":"1:sparkle-proxy","direction":"down","kind":"request","method":"session/prompt","id":3}
//! ```
//! - `from`/`to`: `editor` (or `client` and `successor` when the conductor runs as a proxy),
//!   `conductor` for errors it answers itself, and `position:name` for components;
//! - `direction`: `down` toward the agent, `up` toward the editor;
//! - `id`: the id as the receiver sees it (ids are per hop); for a response, `method` is the
//!   method of the request it answers;
//! - `payload` (only with `--trace-payloads`): the `params`, `result` or `error`, as sent.
//!
//! Lines are buffered and written whenever the conductor has nothing else to do, and when it
//! exits.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::SystemTime;

use sacp::jsonrpc::{Message, ResponseBody};

use sacp::protocol::routing::{Hop, Node, RoutingTable};

/// An open trace file.
#[derive(Debug)]
pub(crate) struct Trace {
    out: BufWriter<File>,
    payloads: bool,
    line: Vec<u8>,
}

impl Trace {
    /// Creates (or truncates) the trace file.
    pub(crate) fn create(path: &Path, payloads: bool) -> std::io::Result<Trace> {
        Ok(Trace {
            out: BufWriter::with_capacity(64 * 1024, File::create(path)?),
            payloads,
            line: Vec::with_capacity(256),
        })
    }

    /// Records one hop of `message`.
    pub(crate) fn record(&mut self, router: &RoutingTable, hop: &Hop, message: &Message) {
        let node = |node: Node| match node {
            Node::Client if router.proxy_mode() => "client".to_owned(),
            Node::Client => "editor".to_owned(),
            Node::Successor => "successor".to_owned(),
            Node::Conductor => "conductor".to_owned(),
            Node::Bridge => "mcp-bridge".to_owned(),
            Node::Component(p) => format!("{p}:{}", router.name(p)),
        };
        let (kind, method, id, payload) = match message {
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
        let time = humantime::format_rfc3339_micros(SystemTime::now()).to_string();
        let mut record = serde_json::json!({
            "time": time,
            "from": node(hop.from),
            "to": node(hop.to),
            "direction": hop.dir.as_str(),
            "kind": kind,
        });
        if let Some(method) = method {
            record["method"] = method.into();
        }
        if let Some(id) = id {
            record["id"] = serde_json::to_value(id).unwrap_or_default();
        }
        self.line.clear();
        // Writing a Value into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut self.line, &record);
        if self.payloads
            && let Some(payload) = payload
        {
            // Splice the payload in as its raw bytes.
            self.line.pop();
            self.line.extend_from_slice(br#","payload":"#);
            self.line.extend_from_slice(payload.as_bytes());
            self.line.push(b'}');
        }
        self.line.push(b'\n');
        if let Err(e) = self.out.write_all(&self.line) {
            tracing::warn!("cannot write the trace file: {e}");
        }
    }

    /// Writes out what is buffered.
    pub(crate) fn flush(&mut self) {
        if let Err(e) = self.out.flush() {
            tracing::warn!("cannot write the trace file: {e}");
        }
    }
}
