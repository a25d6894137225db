//! The transcript of a [`TestChain`](super::TestChain): every message the kit's conductor
//! delivered, in delivery order, with who sent it to whom.

use std::fmt;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::sync::Notify;

use crate::jsonrpc::{Message, RawJson, ResponseBody};
use crate::lock::lock;
use crate::protocol::envelope;
use crate::protocol::routing::{Delivery, Node};

use super::patience::within;

/// What a delivered message was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MessageKind {
    /// A request.
    Request,
    /// A notification.
    Notification,
    /// A successful response.
    Result,
    /// An error response.
    Error,
}

/// One message as one hop delivered it. Successor envelopes are shown unwrapped: `method` and
/// `payload` are the message inside, and [`Record::wrapped`] says it travelled in one.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// Who sent it: `editor`, a component's name, or `conductor` (for errors the conductor
    /// answered itself).
    pub from: String,
    /// Who got it.
    pub to: String,
    /// What it was.
    pub kind: MessageKind,
    /// The method: of the request or notification, or of the request a response answers.
    pub method: String,
    /// The params, result or error (`null` when absent).
    pub payload: Value,
    /// Whether it travelled in a `_proxy/successor/*` envelope.
    pub wrapped: bool,
}

impl Record {
    pub(super) fn of(delivery: &Delivery, name: &dyn Fn(Node) -> String) -> Record {
        let parse = |raw: Option<&RawJson>| {
            raw.and_then(|r| serde_json::from_str(r.as_str()).ok())
                .unwrap_or(Value::Null)
        };
        let (kind, method, payload, wrapped) = match &delivery.message {
            Message::Request(r) => unwrapped(MessageKind::Request, &r.method, r.params.as_ref()),
            Message::Notification(n) => {
                unwrapped(MessageKind::Notification, &n.method, n.params.as_ref())
            }
            Message::Response(r) => {
                let method = delivery.hop.answers.as_deref().unwrap_or("?").to_owned();
                match &r.body {
                    ResponseBody::Result(result) => {
                        (MessageKind::Result, method, parse(Some(result)), false)
                    }
                    ResponseBody::Error(error) => (
                        MessageKind::Error,
                        method,
                        serde_json::to_value(error).unwrap_or(Value::Null),
                        false,
                    ),
                }
            }
        };
        Record {
            from: name(delivery.hop.from),
            to: name(delivery.hop.to),
            kind,
            method,
            payload,
            wrapped,
        }
    }

    /// Whether this is a request or notification of `method` (or a response to one).
    pub fn is(&self, method: &str) -> bool {
        self.method == method
    }
}

/// A request or notification as its receiver sees it: an envelope's inner message.
fn unwrapped(
    kind: MessageKind,
    method: &str,
    params: Option<&RawJson>,
) -> (MessageKind, String, Value, bool) {
    let parse = |raw: Option<&RawJson>| {
        raw.and_then(|r| serde_json::from_str(r.as_str()).ok())
            .unwrap_or(Value::Null)
    };
    if envelope::is_envelope(method)
        && let Ok((inner, inner_params)) = envelope::unwrap(params)
    {
        return (kind, inner, parse(inner_params.as_ref()), true);
    }
    (kind, method.to_owned(), parse(params), false)
}

impl fmt::Display for Record {
    /// One line: `editor -> Redactor  request session/prompt {"sessionId":…}`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            MessageKind::Request => "request",
            MessageKind::Notification => "notification",
            MessageKind::Result => "result of",
            MessageKind::Error => "error for",
        };
        let wrapped = if self.wrapped { " (wrapped)" } else { "" };
        write!(
            f,
            "{} -> {}: {kind} {}{wrapped} {}",
            self.from, self.to, self.method, self.payload
        )
    }
}

/// Every message the kit's conductor delivered so far, in order. Cloning shares it.
#[derive(Clone, Default)]
pub struct Transcript(Arc<(Mutex<Vec<Record>>, Notify)>);

impl Transcript {
    pub(super) fn push(&self, record: Record) {
        lock(&self.0.0).push(record);
        self.0.1.notify_waiters();
    }

    /// Every record so far.
    pub fn records(&self) -> Vec<Record> {
        lock(&self.0.0).clone()
    }

    /// How many messages were delivered so far.
    pub fn len(&self) -> usize {
        lock(&self.0.0).len()
    }

    /// Whether nothing was delivered yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The records of messages `from` sent to `to` (names as in [`Record`]).
    pub fn between(&self, from: &str, to: &str) -> Vec<Record> {
        lock(&self.0.0)
            .iter()
            .filter(|r| r.from == from && r.to == to)
            .cloned()
            .collect()
    }

    /// The records of `method` (requests, notifications and their responses) on every hop.
    pub fn of(&self, method: &str) -> Vec<Record> {
        lock(&self.0.0)
            .iter()
            .filter(|r| r.method == method)
            .cloned()
            .collect()
    }

    /// Completes once a record matches `what` (failing the test after
    /// [`PATIENCE`](super::PATIENCE) with the transcript so far); returns it.
    pub async fn wait_for(&self, description: &str, what: impl Fn(&Record) -> bool) -> Record {
        let found = tokio::time::timeout(super::PATIENCE, async {
            loop {
                let changed = self.0.1.notified();
                tokio::pin!(changed);
                changed.as_mut().enable();
                if let Some(record) = lock(&self.0.0).iter().find(|r| what(r)) {
                    return record.clone();
                }
                changed.await;
            }
        })
        .await;
        match found {
            Ok(record) => record,
            Err(_) => panic!(
                "timed out after {:?} waiting for {description}; the transcript so far:\n{self}",
                super::PATIENCE
            ),
        }
    }

    /// Completes once `n` messages were delivered.
    pub async fn reaches(&self, n: usize) {
        within(&format!("{n} messages in the transcript"), async {
            loop {
                let changed = self.0.1.notified();
                tokio::pin!(changed);
                changed.as_mut().enable();
                if self.len() >= n {
                    return;
                }
                changed.await;
            }
        })
        .await
    }
}

impl fmt::Display for Transcript {
    /// One numbered line per record.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, record) in lock(&self.0.0).iter().enumerate() {
            writeln!(f, "{:>4}  {record}", i + 1)?;
        }
        Ok(())
    }
}

impl fmt::Debug for Transcript {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}
