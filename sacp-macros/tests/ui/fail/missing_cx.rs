use sacp::acp::{PromptRequest, PromptResponse};

struct P;

#[sacp::proxy]
impl P {
    #[on_request]
    async fn prompt(&self, _req: PromptRequest) -> sacp::Result<PromptResponse> {
        Err(sacp::Error::internal_error("no"))
    }
}

fn main() {}
