use sacp::acp::SessionNotification;
use sacp::proxy::Cx;

struct P;

#[sacp::proxy]
impl P {
    #[on_notification(from = server)]
    async fn update(&self, n: SessionNotification, cx: &Cx) -> sacp::Result<()> {
        cx.client().notify(n).await
    }
}

fn main() {}
