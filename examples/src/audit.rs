//! A proxy that shows the editor which turn each permission request belongs to
//! (`audit-proxy`).
//!
//! It takes part in every prompt turn — it remembers the prompt's first words while its prompt
//! handler awaits the agent — and answers the agent's `session/request_permission` itself, by
//! asking the editor with the tool call's title extended by those words. Both handlers run at
//! the same time: the permission request arrives while the prompt handler is still waiting for
//! the agent's answer, which only comes once permission was given.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::lock::lock;
use sacp::acp::{
    ContentBlock, PromptRequest, PromptResponse, RequestPermissionRequest,
    RequestPermissionResponse,
};
use sacp::proxy::Cx;

/// How many words of the prompt the annotation quotes.
const QUOTED_WORDS: usize = 6;

/// The audit proxy: see the module docs.
#[derive(Debug, Default)]
pub struct Auditor {
    /// The first words of the prompt each session is working on.
    turns: Mutex<HashMap<String, String>>,
    /// How many permission requests it passed on.
    pub asked: AtomicU64,
}

impl Auditor {
    fn turns(&self) -> std::sync::MutexGuard<'_, HashMap<String, String>> {
        lock(&self.turns)
    }
}

#[sacp::proxy]
impl Auditor {
    #[on_request]
    async fn prompt(&self, req: PromptRequest, cx: &Cx) -> sacp::Result<PromptResponse> {
        let session = req.session_id.0.clone();
        let words = req
            .prompt
            .iter()
            .find_map(|block| match block {
                ContentBlock::Text(text) => Some(text.text.as_str()),
                _ => None,
            })
            .unwrap_or("(no text)")
            .split_whitespace()
            .take(QUOTED_WORDS)
            .collect::<Vec<_>>()
            .join(" ");
        self.turns().insert(session.clone(), words);
        let answer = cx.successor().request(req).await;
        self.turns().remove(&session);
        answer
    }

    #[on_request(from = agent)]
    async fn permission(
        &self,
        mut req: RequestPermissionRequest,
        cx: &Cx,
    ) -> sacp::Result<RequestPermissionResponse> {
        let turn = self.turns().get(&req.session_id.0).cloned();
        if let Some(turn) = turn {
            let title = req
                .tool_call
                .title
                .take()
                .unwrap_or_else(|| req.tool_call.tool_call_id.0.clone());
            req.tool_call.title = Some(format!("{title} (during «{turn}»)"));
        }
        self.asked.fetch_add(1, Ordering::Relaxed);
        let answer = cx.client().request(req).await?;
        tracing::info!(outcome = ?answer.outcome, "the editor answered a permission request");
        Ok(answer)
    }
}
