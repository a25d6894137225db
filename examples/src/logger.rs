//! A proxy that keeps a transcript (`logging-proxy FILE`): one JSON line per message it sees,
//! appended to `FILE`, and everything passed on unchanged.
//!
//! Each line has the time (seconds since the Unix epoch), the direction (`down`: from the
//! editor's side toward the agent; `up`: back), the kind (`request`, `notification`,
//! `response`), the method and the params or the result (for an error, `error`):
//!
//! ```text
//! {"time":1764000000.123,"dir":"down","kind":"request","method":"session/prompt","params":{…}}
//! {"time":1764000000.125,"dir":"up","kind":"notification","method":"session/update","params":{…}}
//! {"time":1764000000.126,"dir":"up","kind":"response","method":"session/prompt","result":{…}}
//! ```
//!
//! It is written without `#[sacp::proxy]`, by implementing [`sacp::proxy::Proxy`] itself:
//! it takes every message, writes it down, and passes it on with `request_raw` /
//! `notify_raw` (params as bytes, never parsed).

use std::io::Write;
use std::path::Path;
use std::sync::Mutex;

use crate::lock::lock;
use sacp::acp::Side;
use sacp::jsonrpc::{Error, RawJson};
use sacp::proxy::{Cx, Incoming, Proxy};

/// The logging proxy; see the module docs.
#[derive(Debug)]
pub struct Logger {
    out: Mutex<std::io::BufWriter<std::fs::File>>,
}

impl Logger {
    /// A logger appending to `path` (created if needed).
    pub fn to_file(path: &Path) -> std::io::Result<Logger> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        Ok(Logger {
            out: Mutex::new(std::io::BufWriter::new(file)),
        })
    }

    fn write(&self, dir: &str, kind: &str, method: &str, key: &str, payload: Option<&RawJson>) {
        let time = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |t| t.as_secs_f64());
        let method = serde_json::to_string(method).unwrap_or_default();
        let mut line =
            format!(r#"{{"time":{time:.3},"dir":"{dir}","kind":"{kind}","method":{method}"#);
        if let Some(payload) = payload {
            line.push_str(&format!(r#","{key}":{}"#, payload.as_str()));
        }
        line.push_str("}\n");
        let mut out = lock(&self.out);
        // A transcript that cannot be written must not stop the chain.
        if let Err(e) = out.write_all(line.as_bytes()).and_then(|()| out.flush()) {
            tracing::warn!("cannot write the transcript: {e}");
        }
    }
}

impl Proxy for Logger {
    fn takes(_method: &str, _from: Side) -> bool {
        true
    }

    async fn dispatch(&self, message: Incoming, cx: &Cx) {
        let (dir, back, peer) = match message.from() {
            Side::Client => ("down", "up", cx.successor()),
            Side::Agent => ("up", "down", cx.client()),
        };
        let (method, params, reply) = message.into_parts();
        let Some(reply) = reply else {
            self.write(dir, "notification", &method, "params", params.as_ref());
            if let Err(e) = peer.notify_raw(method, params).await {
                tracing::debug!("cannot pass a notification on: {e}");
            }
            return;
        };
        self.write(dir, "request", &method, "params", params.as_ref());
        let answer: Result<RawJson, Error> = peer.request_raw(method.clone(), params).await;
        match &answer {
            Ok(result) => self.write(back, "response", &method, "result", Some(result)),
            Err(error) => {
                let error = RawJson::to_raw(error).ok();
                self.write(back, "response", &method, "error", error.as_ref());
            }
        }
        reply.answer_raw(answer);
    }
}
