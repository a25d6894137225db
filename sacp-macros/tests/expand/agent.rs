use sacp::acp::{CancelNotification, PromptRequest, PromptResponse, StopReason};
use sacp::agent::Cx;

struct Echo;

#[sacp::agent]
impl Echo {
    #[on_request]
    async fn prompt(&self, _req: PromptRequest, _cx: &Cx) -> sacp::Result<PromptResponse> {
        Ok(PromptResponse::new(StopReason::EndTurn))
    }

    #[on_notification]
    async fn cancel(&self, _n: CancelNotification, _cx: &Cx) -> sacp::Result<()> {
        Ok(())
    }
}
