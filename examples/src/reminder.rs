//! A proxy that speaks between turns: a message the editor gets after a turn has ended, from a
//! component and not in answer to anything (the seed book's agent-initiated messages).
//!
//! - A prompt whose text is `/remind DELAY TEXT` (`DELAY` as `2s`, `250ms` or `1m`) is the
//!   proxy's own: it answers it at once, `end_turn`, and the agent never sees it. `DELAY` after
//!   that answer, the editor gets `reminder: TEXT` as an `agent_message_chunk` of the same
//!   session, with no turn open.
//! - Its MCP server `reminders` gives the agent a tool, `start_job {name, millis}`: a
//!   background job that runs `millis` ms and whose end the editor hears of as
//!   `job NAME finished` in the session that started it — after the turn that started it is
//!   over, never inside a turn.
//! - Every other prompt, and everything else, passes through untouched.
//!
//! The reminder is timed from the answer ([`Cx::after_answer`]), so it can never overtake it,
//! whatever the delay; what the editor sees is the answer, then, later, the reminder. A
//! reminder or a job due when the connection ends is not reported.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sacp::acp::{
    ContentBlock, ContentChunk, PromptRequest, PromptResponse, SessionNotification, SessionUpdate,
    StopReason, TextContent,
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

#[sacp::proxy(mcp_name = "reminders")]
impl Reminder {
    /// Starts a background job that runs `millis` ms; its end is reported to the session as
    /// a message once the turn that started it is over.
    #[tool]
    async fn start_job(&self, input: JobInput, cx: &ToolCx) -> sacp::Result<String> {
        let session = cx
            .session_id()
            .ok_or_else(|| sacp::Error::invalid_params("start_job: the call names no session"))?;
        let (client, turns) = (cx.proxy().client(), self.turns.clone());
        let JobInput { name, millis } = input;
        let started = format!("job {name} started");
        cx.proxy().spawn(async move {
            tokio::time::sleep(Duration::from_millis(millis)).await;
            turns.until_none_open(&session.0).await;
            if let Err(e) = client
                .notify(said(session, format!("job {name} finished")))
                .await
            {
                tracing::warn!(error = %e, "a job's end could not be reported");
            }
        });
        Ok(started)
    }

    #[on_request]
    async fn prompt(&self, req: PromptRequest, cx: &Cx) -> sacp::Result<PromptResponse> {
        let Some((delay, text)) = command(&req)? else {
            // The agent's turn: open until its answer is on its way to the editor.
            let session = req.session_id.0.clone();
            self.turns.open(&session);
            let answer = cx.successor().request(req).await;
            let turns = self.turns.clone();
            cx.after_answer(async move { turns.close(&session) })?;
            return answer;
        };
        let (client, session) = (cx.client(), req.session_id);
        cx.after_answer(async move {
            tokio::time::sleep(delay).await;
            if let Err(e) = client
                .notify(said(session, format!("reminder: {text}")))
                .await
            {
                tracing::warn!(error = %e, "a reminder could not be sent");
            }
        })?;
        Ok(PromptResponse::new(StopReason::EndTurn))
    }
}

/// `text` as an agent message of `session`.
fn said(session: sacp::acp::SessionId, text: String) -> SessionNotification {
    let chunk = ContentChunk::new(ContentBlock::Text(TextContent::new(text)));
    SessionNotification::new(session, SessionUpdate::AgentMessageChunk(chunk))
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

/// The `/remind DELAY TEXT` of a prompt, if it is one; an error for a `/remind` that is
/// malformed, saying how it is written.
fn command(req: &PromptRequest) -> sacp::Result<Option<(Duration, String)>> {
    let Some(ContentBlock::Text(first)) = req.prompt.first() else {
        return Ok(None);
    };
    let Some(rest) = first.text.trim_start().strip_prefix("/remind") else {
        return Ok(None);
    };
    let usage = || {
        sacp::Error::invalid_params(
            "usage: /remind DELAY TEXT, DELAY as 250ms, 2s or 1m (and TEXT not empty)",
        )
    };
    let mut words = rest.trim_start().splitn(2, char::is_whitespace);
    let delay = words.next().and_then(delay).ok_or_else(usage)?;
    let text = words.next().map(str::trim).unwrap_or_default();
    if text.is_empty() {
        return Err(usage());
    }
    Ok(Some((delay, text.to_owned())))
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

    fn prompt(text: &str) -> PromptRequest {
        PromptRequest::new(
            "s".to_owned(),
            vec![ContentBlock::Text(TextContent::new(text))],
        )
    }

    #[test]
    fn reminders_are_read_and_anything_else_is_not_one() {
        assert_eq!(
            command(&prompt("/remind 2s stretch your legs")).unwrap(),
            Some((Duration::from_secs(2), "stretch your legs".to_owned()))
        );
        assert_eq!(
            command(&prompt("/remind 250ms x")).unwrap(),
            Some((Duration::from_millis(250), "x".to_owned()))
        );
        assert_eq!(command(&prompt("remind me")).unwrap(), None);
        for bad in ["/remind", "/remind 2s", "/remind soon x", "/remind 2h x"] {
            let error = command(&prompt(bad)).unwrap_err();
            assert!(error.message.contains("usage: /remind"), "{bad}: {error}");
        }
    }
}
