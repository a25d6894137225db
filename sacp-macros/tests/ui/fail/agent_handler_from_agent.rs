use sacp::acp::SessionNotification;
use sacp::agent::Cx;

struct A;

#[sacp::agent]
impl A {
    #[on_notification(from = agent)]
    async fn update(&self, _n: SessionNotification, _cx: &Cx) -> sacp::Result<()> {
        Ok(())
    }
}

fn main() {}
