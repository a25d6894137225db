use sacp::acp::{PromptRequest, PromptResponse};
use sacp::proxy::Cx;
use std::sync::atomic::{AtomicU64, Ordering};

struct Sparkle {
    prompts: AtomicU64,
}

#[sacp::proxy]
impl Sparkle {
    #[on_request]
    async fn prompt(&self, req: PromptRequest, cx: &Cx) -> sacp::Result<PromptResponse> {
        self.count();
        cx.successor().request(req).await
    }

    /// Not a handler: left as it is.
    fn count(&self) {
        self.prompts.fetch_add(1, Ordering::Relaxed);
    }
}
