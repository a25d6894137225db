//! A replay (`session/load`) of a session created with a history the agent was told in a
//! synthesized turn: the given history in place of that turn.
//!
//! The agent's replay starts with the synthesized turn: its prompt (one or more
//! `user_message_chunk`s, or a v2 `user_message`) and what the agent answered to it. The
//! first update of the replay brings the given history instead; from then on the agent's
//! updates are dropped up to its next user message (the first turn of the editor's), and pass
//! from there. A replay with no update gets the history before the load's answer.

use std::sync::Arc;

use crate::jsonrpc::{Message, Notification};
use serde_json::Value;

use super::update_of;

#[derive(Debug)]
pub(super) struct Replay {
    session: String,
    history: Arc<Vec<Value>>,
    phase: Phase,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Nothing of the replay seen yet.
    Start,
    /// In the synthesized prompt's user message.
    Prompt,
    /// In what the agent answered to it.
    Answer,
    /// In the editor's turns: everything passes.
    Passing,
}

impl Replay {
    pub(super) fn new(session: String, history: Arc<Vec<Value>>) -> Replay {
        Replay {
            session,
            history,
            phase: Phase::Start,
        }
    }

    pub(super) fn session(&self) -> &str {
        &self.session
    }

    /// An update of the replay: what goes on in its place.
    pub(super) fn update(&mut self, notification: Notification) -> Vec<Message> {
        if self.phase == Phase::Passing {
            return vec![Message::Notification(notification)];
        }
        let user = is_user_message(&notification);
        let mut out = Vec::new();
        if self.phase == Phase::Start {
            out = self.history();
            self.phase = if user { Phase::Prompt } else { Phase::Answer };
            return out;
        }
        match (self.phase, user) {
            (Phase::Prompt, true) => {}
            (Phase::Prompt, false) => self.phase = Phase::Answer,
            (_, true) => {
                self.phase = Phase::Passing;
                out.push(Message::Notification(notification));
            }
            (_, false) => {}
        }
        out
    }

    /// The load is answered: the history, if no update brought it.
    pub(super) fn finish(&mut self) -> Vec<Message> {
        if self.phase == Phase::Start {
            self.phase = Phase::Passing;
            return self.history();
        }
        Vec::new()
    }

    fn history(&self) -> Vec<Message> {
        self.history
            .iter()
            .filter_map(|update| update_of(&self.session, update))
            .collect()
    }
}

/// Whether an update is (part of) a user message.
fn is_user_message(notification: &Notification) -> bool {
    let Some(params) = &notification.params else {
        return false;
    };
    let text = params.as_str();
    if !text.contains("\"user_message") {
        return false;
    }
    params
        .parse::<Value>()
        .ok()
        .and_then(|v| {
            v.get("update")?
                .get("sessionUpdate")?
                .as_str()
                .map(|kind| kind == "user_message_chunk" || kind == "user_message")
        })
        .unwrap_or(false)
}
