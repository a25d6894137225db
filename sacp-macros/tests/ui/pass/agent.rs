use sacp::acp::{CancelNotification, PromptRequest, PromptResponse, StopReason};
use sacp::agent::AgentCx;

#[derive(Default)]
struct Quiet {
    cancelled: bool,
}

#[sacp::agent]
impl Quiet {
    #[on_request]
    async fn prompt(&mut self, _req: PromptRequest, _cx: &AgentCx) -> sacp::Result<PromptResponse> {
        Ok(PromptResponse::new(StopReason::EndTurn))
    }

    #[on_notification(from = client)]
    async fn cancel(&mut self, _n: CancelNotification, _cx: &AgentCx) -> sacp::Result<()> {
        self.cancelled = true;
        Ok(())
    }
}

fn main() {
    let _ = sacp::agent::serve_stdio(Quiet::default());
}
