use sacp::mcp::ToolCx;

struct P;

impl P {
    /// No `#[sacp::proxy]` here.
    #[sacp::tool]
    async fn keep(&self, _cx: &ToolCx) -> sacp::Result<String> {
        Ok(String::new())
    }
}

fn main() {}
