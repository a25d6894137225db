//! [`Origin`]: the JSON a received message was read from, kept in the message.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use bytes::Bytes;

/// The JSON text a message was read from, when it was received: every ACP request, response
/// and notification type has one (`origin`, not serialized). `sacp` fills it as a message
/// arrives and reads it as the message leaves, so that what a handler did not change goes on
/// exactly as it came — fields newer than this schema, explicit `null`s, key order — and what
/// it changed is changed in place. A message you make yourself has none
/// (`Origin::default()`, which every constructor sets).
///
/// It never takes part in comparisons or hashing: two messages with the same fields are equal
/// whatever they were read from.
#[derive(Clone, Default)]
pub struct Origin(Option<Arc<Read>>);

/// A message as it was read.
struct Read {
    /// The JSON text it was read from.
    json: Bytes,
    /// What its type showed of it (its serialization right after reading), when that differs
    /// from `json`: fields the type does not know, `null`s it reads as absent, another key
    /// order. `None` when the type showed all of it.
    seen: Option<Bytes>,
}

impl Origin {
    /// The origin of a message read from `json`, whose type wrote `seen` when serialized right
    /// after reading.
    pub fn read(json: Bytes, seen: Bytes) -> Origin {
        let seen = (seen != json).then_some(seen);
        Origin(Some(Arc::new(Read { json, seen })))
    }

    /// The JSON the message was read from, if it was read.
    pub fn json(&self) -> Option<&Bytes> {
        self.0.as_ref().map(|r| &r.json)
    }

    /// What the message's type showed of its JSON when it was read, if that was not all of it
    /// (`None` too for a message that was made, not read).
    pub fn seen(&self) -> Option<&Bytes> {
        self.0.as_ref().and_then(|r| r.seen.as_ref())
    }

    /// Whether the message was read rather than made.
    pub fn is_known(&self) -> bool {
        self.0.is_some()
    }

    /// Forgets where the message came from: it will be sent as its fields say, nothing more.
    pub fn forget(&mut self) {
        self.0 = None;
    }
}

impl std::fmt::Debug for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Some(read) => write!(f, "Origin({} bytes)", read.json.len()),
            None => f.write_str("Origin(made)"),
        }
    }
}

impl PartialEq for Origin {
    fn eq(&self, _: &Origin) -> bool {
        true
    }
}

impl Eq for Origin {}

impl PartialOrd for Origin {
    fn partial_cmp(&self, other: &Origin) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Origin {
    fn cmp(&self, _: &Origin) -> std::cmp::Ordering {
        std::cmp::Ordering::Equal
    }
}

impl Hash for Origin {
    fn hash<H: Hasher>(&self, _: &mut H) {}
}

/// A message type that keeps its [`Origin`]: the ACP request, response and notification types.
pub trait HasOrigin {
    /// Where the message came from.
    fn origin(&self) -> &Origin;

    /// Where the message came from, to set as it is read.
    fn origin_mut(&mut self) -> &mut Origin;
}
