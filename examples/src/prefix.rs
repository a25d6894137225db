//! A proxy that transforms what the agent says: it prefixes each text chunk of the agent's
//! messages, and leaves everything else alone.

use sacp::acp::{ContentBlock, SessionNotification, SessionUpdate};
use sacp::proxy::Cx;

/// Prefixes the text of every `agent_message_chunk` with [`Prefixer::prefix`].
#[derive(Debug, Clone)]
pub struct Prefixer {
    /// What goes in front of each chunk.
    pub prefix: String,
    /// How many chunks it changed.
    pub changed: u64,
}

impl Prefixer {
    /// A prefixer writing `prefix` in front of each chunk.
    pub fn new(prefix: impl Into<String>) -> Self {
        Prefixer {
            prefix: prefix.into(),
            changed: 0,
        }
    }
}

#[sacp::proxy]
impl Prefixer {
    #[on_notification(from = agent)]
    async fn update(&mut self, mut n: SessionNotification, cx: &Cx) -> sacp::Result<()> {
        if let SessionUpdate::AgentMessageChunk(chunk) = &mut n.update
            && let ContentBlock::Text(text) = &mut chunk.content
        {
            text.text.insert_str(0, &self.prefix);
            self.changed += 1;
        }
        cx.client().notify(n)
    }
}
