//! [`TurnSeen`]: what one prompt brought back, and the assertions tests make of it.

use std::fmt::Write as _;
use std::sync::Arc;

use crate::acp::{ContentBlock, PromptResponse, SessionUpdate, StopReason, ToolCall};

use super::editor::Log;

/// One prompt's turn as the editor saw it: the session's updates that arrived after the prompt
/// was sent and before its answer — exactly those, in arrival order — and the answer.
///
/// The assertions ([`TurnSeen::assert_text`], [`TurnSeen::assert_lines`]) fail with the turn
/// written out line by line, a diff against what was expected, and the updates of the session
/// that arrived *after* the answer (a proxy that lets its answer overtake its updates shows
/// there).
#[derive(Clone)]
pub struct TurnSeen {
    updates: Vec<SessionUpdate>,
    response: PromptResponse,
    /// The session's log and where this turn's updates begin in it, for what came later.
    log: Arc<Log>,
    from: usize,
}

impl std::fmt::Debug for TurnSeen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TurnSeen")
            .field("lines", &self.lines())
            .field("stop_reason", &self.response.stop_reason)
            .finish()
    }
}

impl TurnSeen {
    pub(super) fn new(
        updates: Vec<SessionUpdate>,
        response: PromptResponse,
        log: Arc<Log>,
        from: usize,
    ) -> TurnSeen {
        TurnSeen {
            updates,
            response,
            log,
            from,
        }
    }

    /// The turn's updates, in arrival order.
    pub fn updates(&self) -> &[SessionUpdate] {
        &self.updates
    }

    /// The answer to the prompt.
    pub fn response(&self) -> &PromptResponse {
        &self.response
    }

    /// Why the turn ended.
    pub fn stop_reason(&self) -> &StopReason {
        &self.response.stop_reason
    }

    /// What the agent said (its `agent_message_chunk` texts, joined).
    pub fn text(&self) -> String {
        self.joined(|u| match u {
            SessionUpdate::AgentMessageChunk(chunk) => Some(&chunk.content),
            _ => None,
        })
    }

    /// What the agent thought aloud (its `agent_thought_chunk` texts, joined).
    pub fn thoughts(&self) -> String {
        self.joined(|u| match u {
            SessionUpdate::AgentThoughtChunk(chunk) => Some(&chunk.content),
            _ => None,
        })
    }

    /// The tool calls the agent reported (`tool_call` updates), in order.
    pub fn tool_calls(&self) -> Vec<&ToolCall> {
        self.updates
            .iter()
            .filter_map(|u| match u {
                SessionUpdate::ToolCall(call) => Some(call),
                _ => None,
            })
            .collect()
    }

    /// The turn's updates, one short line each (see [`line`](fn@line)).
    pub fn lines(&self) -> Vec<String> {
        self.updates.iter().map(line).collect()
    }

    /// The session's updates that arrived after this turn's answer, so far.
    pub fn late(&self) -> Vec<SessionUpdate> {
        self.log.since(self.from + self.updates.len())
    }

    fn joined(&self, pick: impl Fn(&SessionUpdate) -> Option<&ContentBlock>) -> String {
        let mut text = String::new();
        for block in self.updates.iter().filter_map(pick) {
            if let ContentBlock::Text(t) = block {
                text.push_str(&t.text);
            }
        }
        text
    }

    /// Asserts that the agent said `expected` in this turn ([`TurnSeen::text`]).
    ///
    /// # Panics
    /// With the turn, and what arrived after its answer, when it did not.
    #[track_caller]
    pub fn assert_text(&self, expected: &str) {
        let text = self.text();
        if text != expected {
            panic!(
                "the turn's text is not what was expected\n  expected: {expected:?}\n  came:     \
                 {text:?}\n{}",
                self.report()
            );
        }
    }

    /// Asserts that the turn's updates are `expected`, line for line ([`TurnSeen::lines`]).
    ///
    /// # Panics
    /// With a diff (`-` expected and missing, `+` came unexpected) and what arrived after the
    /// answer, when they are not.
    #[track_caller]
    pub fn assert_lines<S: AsRef<str>>(&self, expected: impl IntoIterator<Item = S>) {
        let expected: Vec<String> = expected
            .into_iter()
            .map(|s| s.as_ref().to_owned())
            .collect();
        let came = self.lines();
        if came != expected {
            panic!(
                "the turn's updates are not what was expected (- expected, + came):\n{}{}",
                diff(&expected, &came),
                self.late_report()
            );
        }
    }

    /// The turn written out, with what came after its answer.
    fn report(&self) -> String {
        let mut report = String::from("the turn's updates:\n");
        for line in self.lines() {
            let _ = writeln!(report, "    {line}");
        }
        if self.updates.is_empty() {
            report.push_str("    (none)\n");
        }
        let _ = writeln!(report, "  answer: {:?}", self.response.stop_reason);
        report + &self.late_report()
    }

    fn late_report(&self) -> String {
        let late = self.late();
        if late.is_empty() {
            return "nothing of the session arrived after the answer (yet)\n".to_owned();
        }
        let mut report =
            String::from("updates of the session that arrived after the answer (so far):\n");
        for update in &late {
            let _ = writeln!(report, "    {}", line(update));
        }
        report
    }
}

/// One update as a short line: `message: hi`, `thought: hmm`, `user: hello`,
/// `tool_call t1 "Read file" pending`, `tool_call_update t1 completed`, `plan: 2 entries`;
/// other kinds as their tag and JSON.
pub fn line(update: &SessionUpdate) -> String {
    let text = |block: &ContentBlock| match block {
        ContentBlock::Text(t) => t.text.clone(),
        other => format!("[{}]", tag_of(other)),
    };
    match update {
        SessionUpdate::AgentMessageChunk(c) => format!("message: {}", text(&c.content)),
        SessionUpdate::AgentThoughtChunk(c) => format!("thought: {}", text(&c.content)),
        SessionUpdate::UserMessageChunk(c) => format!("user: {}", text(&c.content)),
        SessionUpdate::ToolCall(call) => {
            let status = call
                .status
                .as_ref()
                .map_or("pending".to_owned(), |s| s.to_string());
            format!(
                "tool_call {} {:?} {status}",
                call.tool_call_id.0, call.title
            )
        }
        SessionUpdate::ToolCallUpdate(update) => {
            let mut line = format!("tool_call_update {}", update.tool_call_id.0);
            if let Some(status) = &update.status {
                let _ = write!(line, " {status}");
            }
            if let Some(title) = &update.title {
                let _ = write!(line, " {title:?}");
            }
            line
        }
        SessionUpdate::Plan(plan) => format!("plan: {} entries", plan.entries.len()),
        other => {
            let value = serde_json::to_value(other).unwrap_or_default();
            let tag = value
                .get("sessionUpdate")
                .and_then(|t| t.as_str())
                .unwrap_or("update")
                .to_owned();
            format!("{tag}: {value}")
        }
    }
}

fn tag_of(block: &ContentBlock) -> String {
    serde_json::to_value(block)
        .ok()
        .and_then(|v| v.get("type").and_then(|t| t.as_str()).map(str::to_owned))
        .unwrap_or_else(|| "content".to_owned())
}

/// A line diff of `expected` and `came`: unchanged lines indented, missing ones `-`, extra
/// ones `+` (a longest common subsequence; turns are short).
pub(super) fn diff(expected: &[String], came: &[String]) -> String {
    let (n, m) = (expected.len(), came.len());
    // common[i][j]: the longest common subsequence of expected[i..] and came[j..].
    let mut common = vec![vec![0usize; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            common[i][j] = if expected[i] == came[j] {
                common[i + 1][j + 1] + 1
            } else {
                common[i + 1][j].max(common[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, String::new());
    while i < n || j < m {
        if i < n && j < m && expected[i] == came[j] {
            let _ = writeln!(out, "    {}", expected[i]);
            i += 1;
            j += 1;
        } else if j < m && (i == n || common[i][j + 1] >= common[i + 1][j]) {
            let _ = writeln!(out, "  + {}", came[j]);
            j += 1;
        } else {
            let _ = writeln!(out, "  - {}", expected[i]);
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::diff;

    fn lines(text: &[&str]) -> Vec<String> {
        text.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_diff_marks_what_is_missing_and_what_is_extra() {
        let expected = lines(&["message: one", "message: two", "message: three"]);
        let came = lines(&["message: one", "message: three", "message: four"]);
        assert_eq!(
            diff(&expected, &came),
            "    message: one\n  - message: two\n    message: three\n  + message: four\n"
        );
    }
}
