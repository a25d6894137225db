use sacp::acp::{PromptRequest, PromptResponse};
use sacp::on_request;
use sacp::proxy::Cx;

struct P;

impl P {
    #[on_request]
    async fn prompt(&self, req: PromptRequest, cx: &Cx) -> sacp::Result<PromptResponse> {
        cx.successor().request(req).await
    }
}

fn main() {}
