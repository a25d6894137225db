//! Session pre-population: a session created with a conversation already in it — to continue
//! a conversation on another agent, seed a session from a template or a ticket, or restore a
//! session on an agent that cannot load it.
//!
//! **The wire.** A `session/new` carries its history in `_meta`:
//!
//! ```json
//! {"cwd": "/work", "mcpServers": [],
//!  "_meta": {"sacp": {"history": [
//!    {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "Fix the bug"}},
//!    {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "On it."}}
//!  ]}}}
//! ```
//!
//! The history is the session's past as the editor saw it: the `update` of each
//! `session/update` (user and agent messages, thoughts, tool calls and their updates, plans,
//! …), in order. An agent that takes such a history itself says so in its `initialize` answer,
//! `"agentCapabilities": {"_meta": {"sacp": {"history": true}}}` ([`History::offer`]); a
//! conductor in front of any agent offers it too, and adapts: it passes the history on to an
//! agent that offers it, and for every other agent it creates the session, sends it a prompt
//! of its own that carries the history ([`render`]), keeps that turn's updates and answer to
//! itself, and only then answers the `session/new`. What the editor side replays of the
//! session (`session/load`) is the given history, never that prompt.
//!
//! ```no_run
//! use sacp::acp::{ContentBlock, ContentChunk, NewSessionRequest, SessionUpdate, TextContent};
//! use sacp::protocol::history::History;
//!
//! # async fn run(cx: sacp::proxy::Cx) -> sacp::Result<()> {
//! let said = |text: &str| ContentChunk::new(ContentBlock::Text(TextContent::new(text)));
//! let history = History::new(vec![
//!     SessionUpdate::UserMessageChunk(said("Where is the config read?")),
//!     SessionUpdate::AgentMessageChunk(said("In `src/config.rs`, at start-up.")),
//! ]);
//! let mut request = NewSessionRequest::new("/work/project", Vec::new());
//! history.put(&mut request)?;
//! let session = cx.successor().request(request).await?;
//! # drop(session);
//! # Ok(())
//! # }
//! ```

use serde_json::{Map, Value};

use crate::acp::{AgentCapabilities, NewSessionRequest, SessionUpdate};
use crate::jsonrpc::Error;

/// The key under `_meta.sacp` of the history (in `session/new`) and of the capability (in
/// `agentCapabilities`).
pub const HISTORY: &str = "history";

/// The key of sacp's own members in `_meta` objects.
const SACP: &str = "sacp";

/// A session's history: what the editor saw of it, as session updates in order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct History {
    updates: Vec<SessionUpdate>,
}

impl History {
    /// A history of these updates.
    pub fn new(updates: Vec<SessionUpdate>) -> History {
        History { updates }
    }

    /// The updates, in order.
    pub fn updates(&self) -> &[SessionUpdate] {
        &self.updates
    }

    /// The updates, taken.
    pub fn into_updates(self) -> Vec<SessionUpdate> {
        self.updates
    }

    /// Puts this history into `request`'s `_meta`, beside whatever else is there.
    pub fn put(&self, request: &mut NewSessionRequest) -> Result<(), Error> {
        let updates = serde_json::to_value(&self.updates)
            .map_err(|e| Error::internal_error(format!("cannot write a history: {e}")))?;
        let meta = request.meta.get_or_insert_with(Map::new);
        let sacp = meta
            .entry(SACP)
            .or_insert_with(|| Value::Object(Map::new()));
        if !sacp.is_object() {
            *sacp = Value::Object(Map::new());
        }
        if let Value::Object(sacp) = sacp {
            sacp.insert(HISTORY.to_owned(), updates);
        }
        Ok(())
    }

    /// Takes the history out of `request`'s `_meta` (what an agent that offers it does with
    /// its `session/new`): `None` when it has none; an invalid-params error when it has one
    /// that is not a list of session updates. `_meta` keeps everything else.
    pub fn take(request: &mut NewSessionRequest) -> Result<Option<History>, Error> {
        let Some(value) = take_raw(request.meta.as_mut()) else {
            return Ok(None);
        };
        let updates = serde_json::from_value(value)
            .map_err(|e| Error::invalid_params(format!("_meta.sacp.history: {e}")))?;
        Ok(Some(History { updates }))
    }

    /// Says in an agent's capabilities that it takes a history with `session/new`.
    pub fn offer(capabilities: &mut AgentCapabilities) {
        offer_in(capabilities.meta.get_or_insert_with(Map::new));
    }

    /// Whether an agent's capabilities say it takes a history with `session/new`.
    pub fn offered(capabilities: &AgentCapabilities) -> bool {
        capabilities.meta.as_ref().is_some_and(offered_in)
    }
}

/// Removes `sacp.history` from a `_meta` object, returning it (and `sacp` itself when nothing
/// else is left in it).
pub fn take_raw(meta: Option<&mut Map<String, Value>>) -> Option<Value> {
    let meta = meta?;
    let Some(Value::Object(sacp)) = meta.get_mut(SACP) else {
        return None;
    };
    let history = sacp.remove(HISTORY)?;
    if sacp.is_empty() {
        meta.remove(SACP);
    }
    Some(history)
}

/// Sets `sacp.history: true` in an `agentCapabilities._meta` object.
pub fn offer_in(meta: &mut Map<String, Value>) {
    let sacp = meta
        .entry(SACP)
        .or_insert_with(|| Value::Object(Map::new()));
    if !sacp.is_object() {
        *sacp = Value::Object(Map::new());
    }
    if let Value::Object(sacp) = sacp {
        sacp.insert(HISTORY.to_owned(), Value::Bool(true));
    }
}

/// Whether an `agentCapabilities._meta` object says `sacp.history: true`.
pub fn offered_in(meta: &Map<String, Value>) -> bool {
    meta.get(SACP)
        .and_then(|sacp| sacp.get(HISTORY))
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

mod render;

pub use self::render::{MARK, render};

#[cfg(test)]
mod tests;
