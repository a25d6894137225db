use sacp::acp::{PromptRequest, PromptResponse};
use sacp::proxy::Cx;

struct P;

#[sacp::proxy]
impl P {
    #[on_request]
    async fn prompt(&mut self, req: PromptRequest, cx: &Cx) -> sacp::Result<PromptResponse> {
        cx.successor().request(req).await
    }
}

fn main() {}
