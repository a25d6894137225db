use sacp::acp::{PromptRequest, PromptResponse};
use sacp::proxy::Cx;

struct P;

#[sacp::proxy]
impl P {
    #[on_request]
    fn prompt(&self, _req: PromptRequest, _cx: &Cx) -> sacp::Result<PromptResponse> {
        Err(sacp::Error::internal_error("no"))
    }
}

fn main() {}
