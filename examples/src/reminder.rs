//! A proxy that speaks between turns: a message the editor gets after a turn has ended, from a
//! component and not in answer to anything (the seed book's agent-initiated messages).
//!
//! - A prompt whose text is `/remind DELAY TEXT` (`DELAY` as `2s`, `250ms` or `1m`) is the
//!   proxy's own: it answers it at once, `end_turn`, and the agent never sees it. `DELAY` after
//!   that answer, the editor gets `reminder: TEXT` as an `agent_message_chunk` of the same
//!   session, with no turn open.
//! - Every other prompt, and everything else, passes through untouched.
//!
//! The reminder is timed from the answer ([`Cx::after_answer`]), so it can never overtake it,
//! whatever the delay; what the editor sees is the answer, then, later, the reminder. A
//! reminder due when the connection ends is not sent.

use std::time::Duration;

use sacp::acp::{
    ContentBlock, ContentChunk, PromptRequest, PromptResponse, SessionNotification, SessionUpdate,
    StopReason, TextContent,
};
use sacp::proxy::Cx;

/// The reminder proxy: see the module docs.
#[derive(Debug, Default)]
pub struct Reminder;

#[sacp::proxy]
impl Reminder {
    #[on_request]
    async fn prompt(&self, req: PromptRequest, cx: &Cx) -> sacp::Result<PromptResponse> {
        let Some((delay, text)) = command(&req)? else {
            return cx.successor().request(req).await;
        };
        let (client, session) = (cx.client(), req.session_id);
        cx.after_answer(async move {
            tokio::time::sleep(delay).await;
            let chunk = ContentChunk::new(ContentBlock::Text(TextContent::new(format!(
                "reminder: {text}"
            ))));
            let update = SessionNotification::new(session, SessionUpdate::AgentMessageChunk(chunk));
            if let Err(e) = client.notify(update).await {
                tracing::warn!(error = %e, "a reminder could not be sent");
            }
        })?;
        Ok(PromptResponse::new(StopReason::EndTurn))
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
