//! A proxy that speaks between turns: a message the editor gets after a turn has ended, from a
//! component and not in answer to anything (the seed book's agent-initiated messages).
//!
//! - A prompt whose text is `/remind DELAY TEXT` (`DELAY` as `2s`, `250ms` or `1m`) is the
//!   proxy's own: it answers it at once, `end_turn`, and the agent never sees it. `DELAY` after
//!   that answer, the editor gets `reminder: TEXT` as an `agent_message_chunk` of the same
//!   session, with no turn open.
//! - `/later DELAY TEXT` starts a turn of the proxy's own `DELAY` after its answer: the
//!   agent gets `TEXT` as a prompt the editor did not send ([`Cx::start_turn`]: the editor
//!   sees `TEXT` as a `user_message_chunk` marked as the proxy's, then the agent's updates),
//!   and when that turn ends the editor gets `later: the turn ended (STOP_REASON)` — a
//!   `session/cancel` from the editor cancels it like one of its own turns.
//! - Its MCP server `reminders` gives the agent a tool, `start_job {name, millis}`: a
//!   background job that runs `millis` ms and whose end the editor hears of as
//!   `job NAME finished` in the session that started it — after the turn that started it is
//!   over, never inside a turn.
//! - Every other prompt, and everything else, passes through untouched.
//!
//! It speaks ACP v1 and v2 (`protocol = [1, 2]`: a prompt handler for each). Under v2 its own
//! turn (`/remind`) is told as a v2 turn — its user message, `running`, idle — and the
//! reminder after it is a message of its own, which the conductor puts between `running` and
//! idle for a v2 editor; `/later` is v1's alone.
//!
//! The reminder is timed from the answer ([`Cx::after_answer`]), so it can never overtake it,
//! whatever the delay; what the editor sees is the answer, then, later, the reminder. A
//! reminder or a job due when the connection ends is not reported.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sacp::acp::{
    ContentBlock, ContentChunk, PromptRequest, PromptResponse, SessionId, SessionNotification,
    SessionUpdate, StopReason, TextContent, v2,
};
use sacp::mcp::ToolCx;
use sacp::proxy::Cx;
use tokio::sync::Notify;

use crate::lock::lock;

/// The reminder proxy: see the module docs.
#[derive(Debug, Default)]
pub struct Reminder {
    turns: Arc<OpenTurns>,
}

/// `start_job`'s input.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct JobInput {
    /// What the job is called in the message that reports its end.
    pub name: String,
    /// How long the job runs, in milliseconds.
    pub millis: u64,
}

#[sacp::proxy(protocol = [1, 2], mcp_name = "reminders")]
impl Reminder {
    /// Starts a background job that runs `millis` ms; its end is reported to the session as
    /// a message once the turn that started it is over.
    #[tool]
    async fn start_job(&self, input: JobInput, cx: &ToolCx) -> sacp::Result<String> {
        let session = cx
            .session_id()
            .ok_or_else(|| sacp::Error::invalid_params("start_job: the call names no session"))?;
        let (proxy, turns) = (cx.proxy().clone(), self.turns.clone());
        let JobInput { name, millis } = input;
        let started = format!("job {name} started");
        cx.proxy().spawn(async move {
            tokio::time::sleep(Duration::from_millis(millis)).await;
            turns.until_none_open(&session.0).await;
            if let Err(e) = say(&proxy, session, format!("job {name} finished")).await {
                tracing::warn!(error = %e, "a job's end could not be reported");
            }
        });
        Ok(started)
    }

    /// ACP v2: `/remind` as in v1, the proxy's own turn told as a v2 turn (its user message,
    /// `running`, idle) before the reminder; `/later` is v1's alone. Every other prompt is the
    /// agent's, open until its idle update.
    #[on_request]
    async fn prompt_v2(&self, req: v2::PromptRequest, cx: &Cx) -> sacp::Result<v2::PromptResponse> {
        let first = match req.prompt.first() {
            Some(v2::ContentBlock::Text(text)) => Some(text.text.as_str()),
            _ => None,
        };
        let Some((kind, delay, text)) = command(first)? else {
            let session = req.session_id.0.clone();
            self.turns.open(&session);
            let idle = cx.idle(&req.session_id);
            let answer = cx.successor().request(req).await;
            let turns = self.turns.clone();
            cx.spawn(async move {
                let _ = idle.await;
                turns.close(&session);
            });
            return answer;
        };
        if kind == Command::Later {
            return Err(sacp::Error::invalid_params(
                "/later is ACP v1's alone: a proxy's own turn is not written for v2 yet",
            ));
        }
        let user = v2::MessageId(uuid::Uuid::new_v4().to_string());
        let (proxy, session, content) = (cx.clone(), req.session_id, req.prompt);
        let ack = v2::PromptResponse::new(user.clone());
        cx.after_answer(async move {
            let own = SessionId(session.0.clone());
            let idle = v2::IdleStateUpdate::new(
                v2::IdleStateUpdateCommon::new(),
                v2::IdleStateUpdateKind::EndTurn,
            );
            let turn = [
                v2::SessionUpdate::UserMessage(v2::UserMessage::new(user).content(content)),
                v2::SessionUpdate::StateUpdate(v2::StateUpdate::Running(
                    v2::RunningStateUpdate::new(),
                )),
                v2::SessionUpdate::StateUpdate(v2::StateUpdate::Idle(idle)),
            ];
            for update in turn {
                let update = v2::UpdateSessionNotification::new(session.clone(), update);
                if proxy.client().notify(update).await.is_err() {
                    return;
                }
            }
            tokio::time::sleep(delay).await;
            if let Err(e) = say(&proxy, own, format!("reminder: {text}")).await {
                tracing::warn!(error = %e, "a reminder could not be sent");
            }
        })?;
        Ok(ack)
    }

    #[on_request]
    async fn prompt(&self, req: PromptRequest, cx: &Cx) -> sacp::Result<PromptResponse> {
        let first = match req.prompt.first() {
            Some(ContentBlock::Text(text)) => Some(text.text.as_str()),
            _ => None,
        };
        let Some((kind, delay, text)) = command(first)? else {
            // The agent's turn: open until its answer is on its way to the editor.
            let session = req.session_id.0.clone();
            self.turns.open(&session);
            let answer = cx.successor().request(req).await;
            let turns = self.turns.clone();
            cx.after_answer(async move { turns.close(&session) })?;
            return answer;
        };
        let (client, session, cx2) = (cx.client(), req.session_id, cx.clone());
        cx.after_answer(async move {
            tokio::time::sleep(delay).await;
            let message = match kind {
                Command::Remind => format!("reminder: {text}"),
                Command::Later => {
                    let prompt = vec![ContentBlock::Text(TextContent::new(text))];
                    match cx2.start_turn(&session, prompt).await {
                        Ok(answer) => format!("later: the turn ended ({})", stop_reason(&answer)),
                        Err(e) => format!("later: the turn failed: {e}"),
                    }
                }
            };
            if let Err(e) = client.notify(said(session, message)).await {
                tracing::warn!(error = %e, "a reminder could not be sent");
            }
        })?;
        Ok(PromptResponse::new(StopReason::EndTurn))
    }
}

/// An answer's stop reason as the wire writes it (`end_turn`, `cancelled`, …).
fn stop_reason(answer: &PromptResponse) -> String {
    serde_json::to_value(answer.stop_reason)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// `text` as an agent message of `session`.
fn said(session: sacp::acp::SessionId, text: String) -> SessionNotification {
    let chunk = ContentChunk::new(ContentBlock::Text(TextContent::new(text)));
    SessionNotification::new(session, SessionUpdate::AgentMessageChunk(chunk))
}

/// Sends `text` to the editor as an agent message of `session`, in the version the
/// connection speaks (a v2 chunk is a message of its own, with a new id).
async fn say(cx: &Cx, session: SessionId, text: String) -> sacp::Result<()> {
    if cx.protocol() != Some(2) {
        return cx.client().notify(said(session, text)).await;
    }
    let block = v2::ContentBlock::Text(v2::TextContent::new(text));
    let message = v2::MessageId(uuid::Uuid::new_v4().to_string());
    let chunk = v2::ContentChunk::new(message, block);
    let update = v2::SessionUpdate::AgentMessageChunk(chunk);
    let session = v2::SessionId(session.0);
    cx.client()
        .notify(v2::UpdateSessionNotification::new(session, update))
        .await
}

/// The agent's turns that are open, by session: a prompt passed on and not yet answered.
#[derive(Debug, Default)]
struct OpenTurns {
    open: Mutex<HashMap<String, usize>>,
    closed: Notify,
}

impl OpenTurns {
    fn open(&self, session: &str) {
        *lock(&self.open).entry(session.to_owned()).or_default() += 1;
    }

    fn close(&self, session: &str) {
        let mut open = lock(&self.open);
        if let Some(n) = open.get_mut(session) {
            *n -= 1;
            if *n == 0 {
                open.remove(session);
            }
        }
        drop(open);
        self.closed.notify_waiters();
    }

    /// Completes when `session` has no turn open.
    async fn until_none_open(&self, session: &str) {
        loop {
            let closed = self.closed.notified();
            tokio::pin!(closed);
            // Registered before looking, so that a close in between still wakes it.
            closed.as_mut().enable();
            if !lock(&self.open).contains_key(session) {
                return;
            }
            closed.await;
        }
    }
}

/// What a prompt of the proxy's own asks for.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Command {
    /// `/remind`: a message.
    Remind,
    /// `/later`: a turn of the proxy's own.
    Later,
}

/// The `/remind DELAY TEXT` (or `/later …`) of a prompt, if it is one; an error for one that
/// is malformed, saying how it is written.
fn command(first: Option<&str>) -> sacp::Result<Option<(Command, Duration, String)>> {
    let Some(first) = first else {
        return Ok(None);
    };
    let text = first.trim_start();
    let (kind, name, rest) = if let Some(rest) = text.strip_prefix("/remind") {
        (Command::Remind, "/remind", rest)
    } else if let Some(rest) = text.strip_prefix("/later") {
        (Command::Later, "/later", rest)
    } else {
        return Ok(None);
    };
    let usage = || {
        sacp::Error::invalid_params(format!(
            "usage: {name} DELAY TEXT, DELAY as 250ms, 2s or 1m (and TEXT not empty)"
        ))
    };
    let mut words = rest.trim_start().splitn(2, char::is_whitespace);
    let delay = words.next().and_then(delay).ok_or_else(usage)?;
    let text = words.next().map(str::trim).unwrap_or_default();
    if text.is_empty() {
        return Err(usage());
    }
    Ok(Some((kind, delay, text.to_owned())))
}

/// `250ms`, `2s`, `1m`.
fn delay(word: &str) -> Option<Duration> {
    let split = word.find(|c: char| !c.is_ascii_digit())?;
    let (number, unit) = word.split_at(split);
    let n: u64 = number.parse().ok()?;
    match unit {
        "ms" => Some(Duration::from_millis(n)),
        "s" => Some(Duration::from_secs(n)),
        "m" => Some(Duration::from_secs(n.checked_mul(60)?)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prompt(text: &str) -> Option<&str> {
        Some(text)
    }

    #[test]
    fn reminders_are_read_and_anything_else_is_not_one() {
        assert_eq!(
            command(prompt("/remind 2s stretch your legs")).unwrap(),
            Some((
                Command::Remind,
                Duration::from_secs(2),
                "stretch your legs".to_owned()
            ))
        );
        assert_eq!(
            command(prompt("/later 250ms x")).unwrap(),
            Some((Command::Later, Duration::from_millis(250), "x".to_owned()))
        );
        assert_eq!(command(prompt("remind me")).unwrap(), None);
        for bad in ["/remind", "/remind 2s", "/remind soon x", "/remind 2h x"] {
            let error = command(prompt(bad)).unwrap_err();
            assert!(error.message.contains("usage: /remind"), "{bad}: {error}");
        }
        let error = command(prompt("/later x")).unwrap_err();
        assert!(error.message.contains("usage: /later"), "{error}");
    }
}
