use sacp::acp::{PromptRequest, PromptResponse};
use sacp::proxy::Cx;

struct P;

#[sacp::proxy]
impl P {
    #[on_request]
    async fn prompt(&self, req: PromptRequest, cx: &Cx) -> sacp::Result<PromptResponse> {
        cx.successor().request(req).await
    }

    #[on_request]
    async fn prompt_again(&self, req: PromptRequest, cx: &Cx) -> sacp::Result<PromptResponse> {
        cx.successor().request(req).await
    }
}

fn main() {}
