use sacp::mcp::ToolCx;

struct P;

#[sacp::proxy]
impl P {
    /// One.
    #[tool(name = "keep")]
    async fn first(&self, _cx: &ToolCx) -> sacp::Result<String> {
        Ok(String::new())
    }

    /// Two.
    #[tool]
    async fn keep(&self, _cx: &ToolCx) -> sacp::Result<String> {
        Ok(String::new())
    }
}

fn main() {}
