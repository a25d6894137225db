//! A proxy that transforms what the agent says: it prefixes each text chunk of the agent's
//! messages, and leaves everything else alone. It also takes part in every prompt turn (it
//! counts them), so its update handler runs while its own prompt handler awaits the agent —
//! and the answer to the prompt still comes after every transformed chunk of the turn.

use std::sync::atomic::{AtomicU64, Ordering};

use sacp::acp::{ContentBlock, PromptRequest, PromptResponse, SessionNotification, SessionUpdate};
use sacp::proxy::Cx;

/// Prefixes the text of every `agent_message_chunk` with [`Prefixer::prefix`].
#[derive(Debug)]
pub struct Prefixer {
    /// What goes in front of each chunk.
    pub prefix: String,
    /// How many chunks it changed.
    pub changed: AtomicU64,
    /// How many prompt turns it has seen end.
    pub turns: AtomicU64,
}

impl Prefixer {
    /// A prefixer writing `prefix` in front of each chunk.
    pub fn new(prefix: impl Into<String>) -> Self {
        Prefixer {
            prefix: prefix.into(),
            changed: AtomicU64::new(0),
            turns: AtomicU64::new(0),
        }
    }
}

#[sacp::proxy]
impl Prefixer {
    #[on_request]
    async fn prompt(&self, req: PromptRequest, cx: &Cx) -> sacp::Result<PromptResponse> {
        let answer = cx.successor().request(req).await;
        self.turns.fetch_add(1, Ordering::Relaxed);
        answer
    }

    #[on_notification(from = agent)]
    async fn update(&self, mut n: SessionNotification, cx: &Cx) -> sacp::Result<()> {
        if let SessionUpdate::AgentMessageChunk(chunk) = &mut n.update
            && let ContentBlock::Text(text) = &mut chunk.content
        {
            text.text.insert_str(0, &self.prefix);
            self.changed.fetch_add(1, Ordering::Relaxed);
        }
        cx.client().notify(n).await
    }
}
