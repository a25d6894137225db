//! A client joining a session by `session/attach`: the session's past as the answer's
//! `history`, then the live stream from the record's end, taken in one step so that nothing
//! is missing and nothing comes twice.

use std::sync::Arc;

use sacp::jsonrpc::{RawJson, Responder};
use serde_json::Value;

use super::super::attach::{Asked, HistoryPolicy};
use super::{
    Attached, Attachment, Entry, HISTORY_LEFT_OUT, Owed, Session, State, TURN_ENDED, controllers,
    left_out_params, turn_ended_params,
};
use crate::lock::lock;

impl Session {
    /// Attaches `att` as `asked` asks: it is answered (by `responder`) with the history its
    /// policy gives, then gets the agent's requests still waiting (unless it asked for no
    /// history), then everything the session streams from now on. Whether it could attach
    /// (not to a closed session).
    pub(in crate::sessions) fn join(
        self: &Arc<Self>,
        att: Arc<Attachment>,
        asked: &Asked,
        responder: Responder,
    ) -> bool {
        {
            let mut state = lock(&self.state);
            if state.closed {
                responder.answer_error(self.gone());
                return false;
            }
            let history = match asked.policy {
                HistoryPolicy::Full => Some(self.history(&state, att.v1)),
                HistoryPolicy::PendingOnly => Some(
                    pending(&state)
                        .map(|(method, params)| item(method, params))
                        .collect(),
                ),
                HistoryPolicy::None => None,
            };
            let resend = match asked.policy {
                HistoryPolicy::None => Vec::new(),
                _ => state
                    .record
                    .since(0)
                    .filter_map(|(_, entry)| match entry {
                        Entry::Ask(ask) if !ask.is_answered() && ask.is_for(&att.who, att.id) => {
                            Some(ask.clone())
                        }
                        _ => None,
                    })
                    .collect(),
            };
            let connected = state
                .attached
                .iter()
                .map(|a| a.att.who.describe())
                .collect();
            let result = asked.answer(&self.id, history, connected);
            let end = state.record.end();
            state.attached.push(Attached {
                att: att.clone(),
                cursor: end,
                owed: [Owed {
                    at: end,
                    responder,
                    result,
                    preface: None,
                }]
                .into(),
                told_left_out: true,
                resend,
            });
            self.attached.send_replace(controllers(&state.attached));
        }
        att.poke.notify_one();
        tokio::spawn(self.clone().deliver(att));
        true
    }

    /// What the record holds, as `{method, params}`, in order: what a `session/load` would
    /// replay (a client `v1` is told of turns' ends with `_sacp/turn_ended`), the prompts as
    /// `session/prompt`, the agent's requests, a notice first if the record left out the
    /// session's beginning.
    fn history(&self, state: &State, v1: bool) -> Vec<Value> {
        let mut out = Vec::new();
        let left_out = state.record.left_out();
        if left_out.entries > 0 {
            out.push(item(HISTORY_LEFT_OUT, &left_out_params(&self.id, left_out)));
        }
        for (_, entry) in state.record.since(0) {
            match entry {
                Entry::Notification { method, params, .. } => out.push(item(method, params)),
                Entry::Prompt { params, .. } => out.push(item("session/prompt", params)),
                Entry::TurnEnded { result, .. } => {
                    if v1 {
                        out.push(item(TURN_ENDED, &turn_ended_params(&self.id, result)));
                    }
                }
                Entry::Ask(ask) => out.push(item(&ask.method, &ask.params)),
            }
        }
        out
    }
}

/// The agent's requests in the record still waiting for an answer.
fn pending(state: &State) -> impl Iterator<Item = (&str, &RawJson)> {
    state.record.since(0).filter_map(|(_, entry)| match entry {
        Entry::Ask(ask) if !ask.is_answered() => Some((ask.method.as_str(), &ask.params)),
        _ => None,
    })
}

/// `{method, params}`.
fn item(method: &str, params: &RawJson) -> Value {
    let params = params.parse::<Value>().unwrap_or(Value::Null);
    serde_json::json!({ "method": method, "params": params })
}
