//! The synthesized turn: the prompt of the conductor's own that tells an agent a session's
//! history, kept from everyone, and what its end does with the held `session/new` answer.

use std::sync::Arc;

use crate::jsonrpc::{Error, Id, Message, Notification, RawJson, Request, Response, ResponseBody};
use serde_json::Value;

use super::{Done, Histories, session_of};

/// A synthesized turn running in a session.
#[derive(Debug)]
pub(super) struct Turn {
    /// The id of the conductor's prompt.
    prompt: Id,
    /// The agent's answer to the `session/new`, held until the turn is over.
    held: Response,
    history: Arc<Vec<Value>>,
    /// (v2) The prompt was acknowledged: the turn ends with an idle `state_update`.
    acknowledged: bool,
}

impl Histories {
    /// The agent answered a `session/new` whose history it must be told: on success, holds
    /// the answer and sends the prompt that carries the history.
    pub(super) fn created(
        &mut self,
        response: Response,
        history: Arc<Vec<Value>>,
        done: &mut Done,
    ) -> Vec<Message> {
        let session = match &response.body {
            ResponseBody::Result(result) => session_of(result),
            ResponseBody::Error(_) => None,
        };
        let Some(session) = session else {
            // A refused session/new (or one that names no session) goes back as it came.
            return vec![Message::Response(response)];
        };
        let text = crate::protocol::history::render(&history);
        let params = serde_json::json!({
            "sessionId": session,
            "prompt": [{"type": "text", "text": text}],
        });
        let params = match RawJson::to_raw(&params) {
            Ok(params) => params,
            Err(e) => {
                let error = Error::internal_error(format!("cannot write the history prompt: {e}"));
                return vec![Message::Response(Response::error(response.id, &error))];
            }
        };
        let prompt = self.next_id();
        done.to_agent.push(Message::Request(Request {
            id: prompt.clone(),
            method: "session/prompt".to_owned(),
            params: Some(params),
        }));
        self.turns.insert(
            session,
            Turn {
                prompt,
                held: response,
                history,
                acknowledged: false,
            },
        );
        Vec::new()
    }

    /// The session whose synthesized prompt `id` is.
    pub(super) fn turn_of_answer(&self, id: &Id) -> Option<String> {
        if self.turns.is_empty() {
            return None;
        }
        self.turns
            .iter()
            .find(|(_, turn)| turn.prompt == *id)
            .map(|(session, _)| session.clone())
    }

    /// The agent answered a synthesized prompt: the turn is over (v1), or acknowledged (v2).
    pub(super) fn turn_answered(
        &mut self,
        session: &str,
        response: Response,
        done: &mut Done,
    ) -> Vec<Message> {
        let outcome = match &response.body {
            ResponseBody::Error(error) => Err(format!("the agent refused it: {}", error.as_str())),
            ResponseBody::Result(_) if self.agent.v2 => {
                if let Some(turn) = self.turns.get_mut(session) {
                    turn.acknowledged = true;
                }
                done.kept.push(Message::Response(response));
                return Vec::new();
            }
            ResponseBody::Result(result) => match result.parse::<Value>() {
                Ok(value) => stopped(value.get("stopReason")),
                Err(e) => Err(format!("its answer is not JSON: {e}")),
            },
        };
        done.kept.push(Message::Response(response));
        self.end_turn(session, outcome, done)
    }

    /// A notification from the agent: kept from everyone if it belongs to a synthesized
    /// turn (an idle `state_update` ends a v2 one); the history in place of the synthesized
    /// turn if it belongs to a replay.
    pub(super) fn notification_from_agent(
        &mut self,
        notification: Notification,
        done: &mut Done,
    ) -> Vec<Message> {
        let session = notification.params.as_ref().and_then(session_of);
        let Some(session) = session else {
            return vec![Message::Notification(notification)];
        };
        if let Some(turn) = self.turns.get(&session) {
            let idle = turn.acknowledged.then(|| idle_of(&notification)).flatten();
            done.kept.push(Message::Notification(notification));
            return match idle {
                Some(outcome) => self.end_turn(&session, outcome, done),
                None => Vec::new(),
            };
        }
        if let Some(replay) = self.replays.values_mut().find(|r| r.session() == session) {
            return replay.update(notification);
        }
        vec![Message::Notification(notification)]
    }

    /// A request the agent makes during a synthesized turn of its session: the conductor's
    /// answer to it (a permission request is cancelled; anything else is an error).
    pub(super) fn quiet_request(&self, request: &Request) -> Option<Response> {
        if self.turns.is_empty() {
            return None;
        }
        let session = request.params.as_ref().and_then(session_of)?;
        if !self.turns.contains_key(&session) {
            return None;
        }
        let answer = if request.method == "session/request_permission" {
            RawJson::to_raw(&serde_json::json!({"outcome": {"outcome": "cancelled"}})).ok()?
        } else {
            let error = Error::new(
                crate::jsonrpc::code::INTERNAL_ERROR,
                format!(
                    "{} during the conductor's history prompt: the session has no editor yet",
                    request.method
                ),
            );
            return Some(Response::error(request.id.clone(), &error));
        };
        Some(Response::ok(request.id.clone(), answer))
    }

    /// The synthesized turn of `session` is over: the held answer goes on, or, when the turn
    /// failed, the session is closed where the agent can close it and the `session/new` gets
    /// an error.
    fn end_turn(
        &mut self,
        session: &str,
        outcome: Result<(), String>,
        done: &mut Done,
    ) -> Vec<Message> {
        let Some(turn) = self.turns.remove(session) else {
            return Vec::new();
        };
        match outcome {
            Ok(()) => {
                self.keep(session.to_owned(), turn.history);
                vec![Message::Response(turn.held)]
            }
            Err(why) => {
                let closed = if self.agent.close {
                    let id = self.next_id();
                    self.dropped.insert(id.clone());
                    let params = serde_json::json!({ "sessionId": session });
                    if let Ok(params) = RawJson::to_raw(&params) {
                        done.to_agent.push(Message::Request(Request {
                            id,
                            method: "session/close".to_owned(),
                            params: Some(params),
                        }));
                    }
                    "; the session was closed in the agent"
                } else {
                    "; the agent offers no session/close, so its session was left as it is"
                };
                tracing::warn!(session, "a session's history could not be given: {why}");
                let error = Error::new(
                    crate::jsonrpc::code::INTERNAL_ERROR,
                    format!("the agent could not be given the session's history: {why}{closed}"),
                )
                .with_data(serde_json::json!({ "sessionId": session }));
                vec![Message::Response(Response::error(turn.held.id, &error))]
            }
        }
    }
}

/// How a synthesized turn that stopped with `reason` went: `end_turn` is the only success.
fn stopped(reason: Option<&Value>) -> Result<(), String> {
    match reason.and_then(Value::as_str) {
        Some("end_turn") => Ok(()),
        Some(other) => Err(format!("its turn ended with {other:?}")),
        None => Err("its answer has no stopReason".to_owned()),
    }
}

/// (v2) How the turn went, if `notification` is an idle `state_update`.
fn idle_of(notification: &Notification) -> Option<Result<(), String>> {
    let params = notification.params.as_ref()?;
    if !params.as_str().contains("state_update") {
        return None;
    }
    let value = params.parse::<Value>().ok()?;
    let update = value.get("update")?;
    if update.get("sessionUpdate")?.as_str()? != "state_update"
        || update.get("state")?.as_str()? != "idle"
    {
        return None;
    }
    Some(stopped(update.get("stopReason")))
}
