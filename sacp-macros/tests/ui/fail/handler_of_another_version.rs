use sacp::acp::{self, v2};
use sacp::proxy::Cx;

struct OnlyTwo;

// Declares v2, and takes a v1 prompt: the handler could never run.
#[sacp::proxy(protocol = 2)]
impl OnlyTwo {
    #[on_request]
    async fn prompt(&self, req: acp::PromptRequest, cx: &Cx) -> sacp::Result<acp::PromptResponse> {
        cx.successor().request(req).await
    }
}

struct Default1;

// Speaks v1 (the default with a handler), and takes a v2 update.
#[sacp::proxy]
impl Default1 {
    #[on_notification(from = agent)]
    async fn update(&self, n: v2::UpdateSessionNotification, cx: &Cx) -> sacp::Result<()> {
        cx.client().notify(n).await
    }
}

fn main() {}
