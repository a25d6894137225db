use sacp::mcp::ToolCx;

struct A;

#[sacp::agent]
impl A {
    /// Agents do not give tools.
    #[tool]
    async fn keep(&self, _cx: &ToolCx) -> sacp::Result<String> {
        Ok(String::new())
    }
}

fn main() {}
