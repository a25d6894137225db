use sacp::mcp::ToolCx;

struct P;

#[sacp::proxy]
impl P {
    /// Too many parameters.
    #[tool]
    async fn keep(&self, a: String, b: String, _cx: &ToolCx) -> sacp::Result<String> {
        Ok(a + &b)
    }

    /// Not async, and no result.
    #[tool]
    fn count(&self, _cx: &ToolCx) {}
}

fn main() {}
