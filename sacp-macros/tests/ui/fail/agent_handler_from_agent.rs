use sacp::acp::SessionNotification;
use sacp::agent::AgentCx;

struct A;

#[sacp::agent]
impl A {
    #[on_notification(from = agent)]
    async fn update(&self, _n: SessionNotification, _cx: &AgentCx) -> sacp::Result<()> {
        Ok(())
    }
}

fn main() {}
