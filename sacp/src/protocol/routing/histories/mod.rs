//! Session pre-population at the agent's edge: the conductor takes a `session/new` that
//! carries a history (`_meta.sacp.history`, see [`crate::protocol::history`]) from whoever
//! sent it — the editor, or a proxy — and adapts to the agent.
//!
//! - **Native.** An agent that offers it (`agentCapabilities._meta.sacp.history: true` in its
//!   `initialize` answer) gets the `session/new` as it came, history included.
//! - **Synthesized**, for every other agent: the history is taken out of the `session/new`;
//!   once the agent answers it, the answer is held, and the conductor sends the agent a
//!   prompt of its own in the new session whose text carries the history
//!   ([`crate::protocol::history::render`]). That turn is the conductor's: its updates, its
//!   answer (and in ACP v2 its `state_update`s) go to no one, and a request the agent makes
//!   of the editor during it is answered by the conductor (a permission request
//!   `cancelled`, anything else an error). When the turn ends with `end_turn` the held answer
//!   goes on, and the session is the editor's. When it fails (an error, or any other stop
//!   reason) the session is closed in the agent where it offers `session/close`, and the
//!   `session/new` is answered with an error that says why — nothing half-made is handed on.
//! - **Replays.** What the agent replays of such a session (`session/load`) is the session
//!   as the agent knows it: the synthesized prompt and its answer first. The conductor
//!   replays the given history in their place: the agent's replay up to its second user
//!   message (the first is the synthesized prompt) is replaced by the history.
//!
//! The histories of the last 1,024 sessions created this way (64 MiB at most, as JSON) are
//! kept for replays; a replay of an older one shows the agent's own record.
//!
//! The conductor offers the capability to its editor in every chain that ends in an agent
//! (not in proxy mode, where the outer conductor adapts): it adds
//! `_meta.sacp.history: true` to the `agentCapabilities` of its `initialize` answer (in ACP
//! v2, `capabilities`).
//!
//! Nothing here is on the data path while no history is being adapted: the loop asks
//! [`Histories::watching`] before it shows this module the agent's messages.

mod replay;
mod synthesized;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::jsonrpc::{Id, Message, Notification, RawJson, Request, Response, ResponseBody};
use serde_json::{Map, Value};

use self::replay::Replay;
use self::synthesized::Turn;

/// Pre-populated sessions whose history is kept for replays, at most (the oldest go first).
const KEPT: usize = 1024;
/// The bytes (as JSON) of the histories kept for replays, at most (the oldest go first): a
/// replay of a session whose history went shows the agent's own record instead.
const KEPT_BYTES: usize = 64 << 20;

/// What the agent said of itself in `initialize`, as far as this module cares.
#[derive(Debug, Clone, Copy, Default)]
struct Agent {
    /// It takes a history with `session/new`.
    native: bool,
    /// It offers `session/close`.
    close: bool,
    /// It speaks ACP v2 (a prompt is acknowledged, its turn ends in an idle `state_update`).
    v2: bool,
}

/// The conductor's pre-population: see the module docs.
#[derive(Debug, Default)]
pub(crate) struct Histories {
    /// `initialize` requests on their way to the agent, by their id on its connection.
    initializes: HashSet<Id>,
    agent: Agent,
    /// `session/new`s with a history the agent does not take, by id: the history.
    creating: HashMap<Id, Arc<Vec<Value>>>,
    /// Synthesized turns running, by the session (the agent's id).
    turns: HashMap<String, Turn>,
    /// The sessions created with a history, by the agent's id, for replays, with their size
    /// in bytes; oldest first.
    given: Vec<(String, Arc<Vec<Value>>, usize)>,
    /// The bytes of `given`'s histories.
    given_bytes: usize,
    /// `session/load`s of such sessions on their way to the agent, by id.
    replays: HashMap<Id, Replay>,
    /// Requests of the conductor's own to the agent whose answers it drops (a
    /// `session/close` after a failed synthesized turn).
    dropped: HashSet<Id>,
    /// The last id of the conductor's own requests to the agent.
    last: u64,
}

/// What [`Histories::on_from_agent`] did: what to write to the agent, what it kept from
/// everyone (for the trace).
#[derive(Debug, Default)]
pub(crate) struct Done {
    pub(crate) to_agent: Vec<Message>,
    pub(crate) kept: Vec<Message>,
}

impl Histories {
    /// Whether the agent's messages matter now (an `initialize`, a synthesized turn or a
    /// replay under way): the loop shows them to [`Histories::on_from_agent`] only then.
    pub(crate) fn watching(&self) -> bool {
        !self.initializes.is_empty()
            || !self.creating.is_empty()
            || !self.turns.is_empty()
            || !self.replays.is_empty()
            || !self.dropped.is_empty()
    }

    /// Looks at a request on its way to the agent: notes an `initialize`; takes the history
    /// out of a `session/new` the agent cannot take it with; notes a `session/load` of a
    /// session created with a history.
    pub(crate) fn on_request_to_agent(&mut self, request: &mut Request) {
        match request.method.as_str() {
            "initialize" => {
                self.initializes.insert(request.id.clone());
            }
            "session/new" if !self.agent.native => self.take_history(request),
            "session/load" if !self.given.is_empty() => {
                let Some(session) = request.params.as_ref().and_then(session_of) else {
                    return;
                };
                if let Some((_, history, _)) = self.given.iter().find(|(s, ..)| *s == session) {
                    let replay = Replay::new(session, history.clone());
                    self.replays.insert(request.id.clone(), replay);
                }
            }
            _ => {}
        }
    }

    fn take_history(&mut self, request: &mut Request) {
        let Some(params) = &request.params else {
            return;
        };
        // A scan first: a session/new without a history is not parsed.
        if !params.as_str().contains("\"history\"") {
            return;
        }
        let Ok(mut value) = params.parse::<Map<String, Value>>() else {
            return;
        };
        let meta = match value.get_mut("_meta") {
            Some(Value::Object(meta)) => Some(meta),
            _ => None,
        };
        let Some(history) = crate::protocol::history::take_raw(meta) else {
            return;
        };
        if value
            .get("_meta")
            .and_then(Value::as_object)
            .is_some_and(Map::is_empty)
        {
            value.remove("_meta");
        }
        let history = match history {
            Value::Array(updates) => updates,
            // Not a history: the agent gets the session/new without it, as it would any
            // `_meta` it does not know.
            _ => return,
        };
        match RawJson::to_raw(&value) {
            Ok(params) => {
                request.params = Some(params);
                self.creating.insert(request.id.clone(), Arc::new(history));
            }
            Err(e) => tracing::error!("cannot write a session/new without its history: {e}"),
        }
    }

    /// Looks at what the agent sent (before it is routed): learns what its `initialize`
    /// answer says; holds the answer of a `session/new` whose history it must be told and
    /// starts that turn; keeps a synthesized turn's messages from everyone; puts the history
    /// in place of the synthesized turn in a replay.
    pub(crate) fn on_from_agent(&mut self, batch: &mut Vec<crate::jsonrpc::Inbound>) -> Done {
        let mut done = Done::default();
        let mut out = Vec::with_capacity(batch.len());
        for inbound in batch.drain(..) {
            let crate::jsonrpc::Inbound::Message(message) = inbound else {
                out.push(inbound);
                continue;
            };
            for message in self.one_from_agent(message, &mut done) {
                out.push(crate::jsonrpc::Inbound::Message(message));
            }
        }
        *batch = out;
        done
    }

    /// One message from the agent: what goes on in its place.
    fn one_from_agent(&mut self, message: Message, done: &mut Done) -> Vec<Message> {
        match message {
            Message::Response(response) => self.answer_from_agent(response, done),
            Message::Notification(notification) => self.notification_from_agent(notification, done),
            Message::Request(request) => match self.quiet_request(&request) {
                Some(answer) => {
                    done.to_agent.push(Message::Response(answer));
                    done.kept.push(Message::Request(request));
                    Vec::new()
                }
                None => vec![Message::Request(request)],
            },
        }
    }

    fn answer_from_agent(&mut self, response: Response, done: &mut Done) -> Vec<Message> {
        if self.initializes.remove(&response.id) {
            if let ResponseBody::Result(result) = &response.body {
                self.agent = agent_of(result);
            }
            return vec![Message::Response(response)];
        }
        if let Some(history) = self.creating.remove(&response.id) {
            return self.created(response, history, done);
        }
        if self.dropped.remove(&response.id) {
            done.kept.push(Message::Response(response));
            return Vec::new();
        }
        if let Some(session) = self.turn_of_answer(&response.id) {
            return self.turn_answered(&session, response, done);
        }
        if let Some(mut replay) = self.replays.remove(&response.id) {
            let mut out = replay.finish();
            out.push(Message::Response(response));
            return out;
        }
        vec![Message::Response(response)]
    }

    /// The conductor's next id for a request of its own to the agent: a string, which the
    /// routing table (numbers) never gives.
    fn next_id(&mut self) -> Id {
        self.last += 1;
        Id::String(format!("sacp-history-{}", self.last).into())
    }

    /// Keeps a session created with a history for replays.
    fn keep(&mut self, session: String, history: Arc<Vec<Value>>) {
        let bytes = serde_json::to_string(&*history).map_or(0, |text| text.len());
        while !self.given.is_empty()
            && (self.given.len() >= KEPT || self.given_bytes + bytes > KEPT_BYTES)
        {
            let (_, _, gone) = self.given.remove(0);
            self.given_bytes -= gone;
        }
        if bytes <= KEPT_BYTES {
            self.given_bytes += bytes;
            self.given.push((session, history, bytes));
        }
    }
}

/// Adds `_meta.sacp.history: true` to the `agentCapabilities` of an `initialize` answer.
pub(crate) fn offer(response: &mut Response) {
    let ResponseBody::Result(result) = &response.body else {
        return;
    };
    let Ok(mut value) = result.parse::<Map<String, Value>>() else {
        return;
    };
    let key = capabilities_key(value.get("protocolVersion"));
    let capabilities = value
        .entry(key)
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(capabilities) = capabilities else {
        return;
    };
    let meta = capabilities
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(meta) = meta else {
        return;
    };
    if crate::protocol::history::offered_in(meta) {
        return;
    }
    crate::protocol::history::offer_in(meta);
    match RawJson::to_raw(&value) {
        Ok(result) => response.body = ResponseBody::Result(result),
        Err(e) => tracing::error!("cannot offer histories in the initialize answer: {e}"),
    }
}

fn agent_of(result: &RawJson) -> Agent {
    let Ok(value) = result.parse::<Value>() else {
        return Agent::default();
    };
    let v2 = value["protocolVersion"].as_u64().is_some_and(|v| v >= 2);
    let capabilities = &value[capabilities_key(value.get("protocolVersion"))];
    Agent {
        native: capabilities["_meta"]
            .as_object()
            .is_some_and(crate::protocol::history::offered_in),
        // ACP v2 makes `session/close` every agent's.
        close: v2 || capabilities["sessionCapabilities"]["close"].is_object(),
        v2,
    }
}

/// Where an `initialize` answer of this version has the agent's capabilities: ACP v1's
/// `agentCapabilities`, v2's `capabilities`.
fn capabilities_key(version: Option<&Value>) -> &'static str {
    match version.and_then(Value::as_u64) {
        Some(v) if v >= 2 => "capabilities",
        _ => "agentCapabilities",
    }
}

/// The `sessionId` of params or a result.
fn session_of(raw: &RawJson) -> Option<String> {
    raw.str_member("sessionId")
        .map(std::borrow::Cow::into_owned)
}

/// A `session/update` of `session` with `update`.
fn update_of(session: &str, update: &Value) -> Option<Message> {
    let params = serde_json::json!({"sessionId": session, "update": update});
    Some(Message::Notification(Notification {
        method: "session/update".to_owned(),
        params: Some(RawJson::to_raw(&params).ok()?),
    }))
}

#[cfg(test)]
mod tests;
