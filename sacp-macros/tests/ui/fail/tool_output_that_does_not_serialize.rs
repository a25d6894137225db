use sacp::mcp::ToolCx;

struct Opaque;

struct P;

#[sacp::proxy]
impl P {
    /// Its output cannot be sent.
    #[tool]
    async fn make(&self, _cx: &ToolCx) -> sacp::Result<Opaque> {
        Ok(Opaque)
    }
}

fn main() {}
