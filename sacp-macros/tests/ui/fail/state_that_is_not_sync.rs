use std::cell::Cell;

use sacp::acp::{PromptRequest, PromptResponse};
use sacp::proxy::Cx;

struct Counter {
    prompts: Cell<u64>,
}

#[sacp::proxy]
impl Counter {
    #[on_request]
    async fn prompt(&self, req: PromptRequest, cx: &Cx) -> sacp::Result<PromptResponse> {
        self.prompts.set(self.prompts.get() + 1);
        cx.successor().request(req).await
    }
}

fn main() {}
