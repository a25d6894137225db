use sacp::acp::{PromptRequest, PromptResponse};
use sacp::proxy::Cx;

struct Sparkle {
    prompts: u64,
}

#[sacp::proxy]
impl Sparkle {
    #[on_request]
    async fn prompt(&mut self, req: PromptRequest, cx: &Cx) -> sacp::Result<PromptResponse> {
        self.count();
        cx.successor().request(req).await
    }

    /// Not a handler: left as it is.
    fn count(&mut self) {
        self.prompts += 1;
    }
}
