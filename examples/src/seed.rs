//! A proxy that starts every session from a conversation (`seed-proxy FILE`): a template, a
//! ticket's thread, the transcript of a session held by another agent. `FILE` is a JSON
//! array of session updates — what the editor saw of that conversation, in order (user and
//! agent messages, thoughts, tool calls and their updates, …) — and every `session/new` that
//! brings no history of its own goes on with it as its history
//! ([`sacp::protocol::history`]). The agent behind the conductor then has the conversation in
//! its session from the start: given with `session/new` to an agent that takes it, told in a
//! prompt of the conductor's own to any other; the editor sees the session as one that
//! already holds it (a `session/load` replays it).
//!
//! Everything else passes through untouched.

use sacp::acp::{NewSessionRequest, NewSessionResponse, SessionUpdate};
use sacp::protocol::history::History;
use sacp::proxy::Cx;

/// The seed proxy; see the module docs.
#[derive(Debug)]
pub struct Seed {
    /// The history every new session starts from.
    pub history: History,
}

impl Seed {
    /// The seed proxy with the history in `text` (a JSON array of session updates).
    pub fn from_json(text: &str) -> Result<Seed, String> {
        let updates: Vec<SessionUpdate> = serde_json::from_str(text)
            .map_err(|e| format!("not a JSON array of session updates: {e}"))?;
        Ok(Seed {
            history: History::new(updates),
        })
    }
}

#[sacp::proxy]
impl Seed {
    /// Gives the session the history, unless it brings its own.
    #[on_request]
    async fn new_session(
        &self,
        mut req: NewSessionRequest,
        cx: &Cx,
    ) -> sacp::Result<NewSessionResponse> {
        let history = History::take(&mut req)?.unwrap_or_else(|| self.history.clone());
        history.put(&mut req)?;
        cx.successor().request(req).await
    }
}
