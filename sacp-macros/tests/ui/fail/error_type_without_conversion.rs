use sacp::acp::{PromptRequest, PromptResponse};
use sacp::proxy::Cx;

struct Oops;

struct P;

#[sacp::proxy]
impl P {
    #[on_request]
    async fn prompt(&self, _req: PromptRequest, _cx: &Cx) -> Result<PromptResponse, Oops> {
        Err(Oops)
    }
}

fn main() {}
