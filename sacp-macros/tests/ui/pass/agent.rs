use sacp::acp::{CancelNotification, PromptRequest, PromptResponse, StopReason};
use sacp::agent::Cx;
use std::sync::atomic::{AtomicBool, Ordering};

#[derive(Default)]
struct Quiet {
    cancelled: AtomicBool,
}

#[sacp::agent]
impl Quiet {
    #[on_request]
    async fn prompt(&self, _req: PromptRequest, _cx: &Cx) -> sacp::Result<PromptResponse> {
        Ok(PromptResponse::new(StopReason::EndTurn))
    }

    #[on_notification(from = client)]
    async fn cancel(&self, _n: CancelNotification, _cx: &Cx) -> sacp::Result<()> {
        self.cancelled.store(true, Ordering::Relaxed);
        Ok(())
    }
}

fn main() {
    let _ = sacp::agent::serve_stdio(Quiet::default());
}
