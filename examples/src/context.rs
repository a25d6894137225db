//! A proxy that adds context to every prompt (`context-proxy TEXT` or
//! `context-proxy --file FILE`): a text block put in front of the user's own, so the agent
//! reads the project's conventions (say, an `AGENTS.md`) with every request.

use sacp::acp::{ContentBlock, PromptRequest, PromptResponse, TextContent};
use sacp::proxy::Cx;

/// The context proxy; see the module docs.
#[derive(Debug)]
pub struct Context {
    /// What goes in front of every prompt.
    pub text: String,
}

#[sacp::proxy]
impl Context {
    /// Puts the context first, then passes the prompt on.
    #[on_request]
    async fn prompt(&self, mut req: PromptRequest, cx: &Cx) -> sacp::Result<PromptResponse> {
        let context = ContentBlock::Text(TextContent::new(self.text.clone()));
        req.prompt.insert(0, context);
        cx.successor().request(req).await
    }
}
