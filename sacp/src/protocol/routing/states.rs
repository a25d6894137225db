//! ACP v2 session states toward the editor: the session's state is always true, even when a
//! component speaks between turns.
//!
//! In v2 a turn runs between a `state_update` `running` and an idle one, and an editor may
//! take a session whose last word was idle for one with nothing going on. A component that
//! sends the session updates after that (a reminder, a background job's end, an agent that
//! goes on after its turn) would leave the editor believing it idle while it speaks. So the
//! conductor, facing a v2 editor, puts a `state_update` `running` in front of such updates and
//! an idle one (`end_turn`) after the last of them it writes at once; both carry
//! `"_meta": {"sacp": {"from": "conductor"}}`. It knows a session is idle only from an idle
//! update it passed on itself and no prompt of the editor's since: updates of a session whose
//! state it never saw (before its first turn) and the user message that starts a turn pass as
//! they are. A v1 editor has no states, and sees the updates alone.

use std::collections::HashMap;

use crate::jsonrpc::{Message, Notification, RawJson, Request};

/// What the conductor knows of each session's state as the editor sees it.
#[derive(Debug, Default)]
pub(crate) struct States {
    sessions: HashMap<String, State>,
    /// The sessions the conductor said `running` for in this batch, in that order.
    speaking: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// A turn runs (or was asked for).
    Busy,
    /// The last word was idle.
    Idle,
    /// Idle, and the conductor said `running` in front of updates it is passing on.
    Speaking,
}

impl States {
    /// A request the editor sent: a prompt makes its session busy; a close or delete forgets
    /// it, so that the map does not grow with every session a long-lived chain ever had.
    pub(crate) fn on_request(&mut self, request: &Request) {
        let ends = matches!(request.method.as_str(), "session/close" | "session/delete");
        if request.method != "session/prompt" && !ends {
            return;
        }
        let Some(session) = request
            .params
            .as_ref()
            .and_then(|p| p.plain_str("sessionId"))
        else {
            return;
        };
        if ends {
            self.sessions.remove(session);
        } else {
            self.sessions.insert(session.to_owned(), State::Busy);
        }
    }

    /// Messages on their way to the editor, in order: `running` in front of updates of an
    /// idle session, and an idle update after the last of them.
    pub(crate) fn on_way_to_editor(&mut self, messages: &mut Vec<Message>) {
        if self.sessions.is_empty() && !messages.iter().any(is_state_update) {
            return;
        }
        let mut out = Vec::with_capacity(messages.len());
        for message in messages.drain(..) {
            self.one(&message, &mut out);
            out.push(message);
        }
        for session in self.speaking.drain(..) {
            if let Some(state @ State::Speaking) = self.sessions.get_mut(&session) {
                *state = State::Idle;
                out.extend(state_update(&session, false));
            }
        }
        *messages = out;
    }

    /// What goes in front of `message`.
    fn one(&mut self, message: &Message, out: &mut Vec<Message>) {
        let Message::Notification(Notification { method, params }) = message else {
            return;
        };
        if method != "session/update" {
            return;
        }
        let Some(params) = params else {
            return;
        };
        let Some(session) = params.plain_str("sessionId") else {
            return;
        };
        let text = params.as_str();
        if text.contains("\"state_update\"") {
            let idle = text.contains("\"idle\"");
            // A turn that starts while the conductor speaks for the session takes over: its
            // own `running` follows the conductor's, its idle ends both.
            let state = if idle { State::Idle } else { State::Busy };
            self.sessions.insert(session.to_owned(), state);
            return;
        }
        if let Some(state @ State::Idle) = self.sessions.get_mut(session) {
            if text.contains("\"user_message\"") {
                // A turn starts (one the editor did not ask for: a proxy's).
                *state = State::Busy;
                return;
            }
            *state = State::Speaking;
            self.speaking.push(session.to_owned());
            out.extend(state_update(session, true));
        }
    }
}

fn is_state_update(message: &Message) -> bool {
    matches!(message, Message::Notification(n)
        if n.params.as_ref().is_some_and(|p| p.as_str().contains("\"state_update\"")))
}

/// The conductor's `state_update` of `session`: `running`, or idle with `end_turn`.
fn state_update(session: &str, running: bool) -> Option<Message> {
    let update = if running {
        serde_json::json!({"sessionUpdate": "state_update", "state": "running",
                           "_meta": {"sacp": {"from": "conductor"}}})
    } else {
        serde_json::json!({"sessionUpdate": "state_update", "state": "idle",
                           "stopReason": "end_turn", "_meta": {"sacp": {"from": "conductor"}}})
    };
    let params = serde_json::json!({"sessionId": session, "update": update});
    Some(Message::Notification(Notification {
        method: "session/update".to_owned(),
        params: Some(RawJson::to_raw(&params).ok()?),
    }))
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn update(session: &str, update: Value) -> Message {
        let params = json!({"sessionId": session, "update": update});
        Message::Notification(Notification {
            method: "session/update".to_owned(),
            params: Some(RawJson::to_raw(&params).unwrap()),
        })
    }

    fn said(session: &str, text: &str) -> Message {
        update(
            session,
            json!({"sessionUpdate": "agent_message_chunk", "messageId": "m",
                   "content": {"type": "text", "text": text}}),
        )
    }

    fn idle(session: &str) -> Message {
        update(
            session,
            json!({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}),
        )
    }

    fn lines(messages: &[Message]) -> Vec<String> {
        messages
            .iter()
            .map(|m| {
                let Message::Notification(n) = m else {
                    return "other".to_owned();
                };
                let v: Value = n.params.as_ref().unwrap().parse().unwrap();
                let u = &v["update"];
                let what = match u["sessionUpdate"].as_str().unwrap() {
                    "state_update" => u["state"].as_str().unwrap().to_owned(),
                    _ => u["content"]["text"].as_str().unwrap_or("?").to_owned(),
                };
                format!("{} {what}", v["sessionId"].as_str().unwrap())
            })
            .collect()
    }

    #[test]
    fn updates_of_an_idle_session_are_put_between_running_and_idle() {
        let mut states = States::default();
        // Before any state: as they are.
        let mut batch = vec![said("a", "early")];
        states.on_way_to_editor(&mut batch);
        assert_eq!(lines(&batch), ["a early"]);
        // Two turns end, then both sessions speak between turns.
        let mut batch = vec![
            idle("a"),
            idle("b"),
            said("b", "x"),
            said("a", "one"),
            said("a", "two"),
        ];
        states.on_way_to_editor(&mut batch);
        assert_eq!(
            lines(&batch),
            [
                "a idle",
                "b idle",
                "b running",
                "b x",
                "a running",
                "a one",
                "a two",
                "b idle",
                "a idle"
            ]
        );
        // A prompt of the editor's: the turn's updates pass as they are.
        let prompt = Request {
            id: crate::jsonrpc::Id::Number(1),
            method: "session/prompt".to_owned(),
            params: Some(RawJson::to_raw(&json!({"sessionId": "a", "prompt": []})).unwrap()),
        };
        states.on_request(&prompt);
        let mut batch = vec![said("a", "turn")];
        states.on_way_to_editor(&mut batch);
        assert_eq!(lines(&batch), ["a turn"]);
        // A proxy's own turn starts with a user message: no running of the conductor's.
        let mut batch = vec![idle("a")];
        states.on_way_to_editor(&mut batch);
        let user = update(
            "a",
            json!({"sessionUpdate": "user_message", "messageId": "u",
                   "content": [{"type": "text", "text": "hi"}]}),
        );
        let mut batch = vec![user, said("a", "answer")];
        states.on_way_to_editor(&mut batch);
        assert_eq!(lines(&batch), ["a ?", "a answer"]);
        // A session the editor closes is forgotten.
        let close = Request {
            id: crate::jsonrpc::Id::Number(2),
            method: "session/close".to_owned(),
            params: Some(RawJson::to_raw(&json!({"sessionId": "a"})).unwrap()),
        };
        states.on_request(&close);
        assert!(!states.sessions.contains_key("a"));
    }
}
