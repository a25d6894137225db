use sacp::acp::PromptRequest;
use sacp::proxy::Cx;

struct P;

#[sacp::proxy]
impl P {
    #[on_request]
    async fn prompt(&self, _req: PromptRequest, _cx: &Cx) -> sacp::Result<String> {
        Ok("done".into())
    }
}

fn main() {}
