use sacp::mcp::ToolCx;

#[derive(serde::Deserialize)]
struct Note {
    text: String,
}

struct P;

#[sacp::proxy]
impl P {
    /// Keeps a note.
    #[tool]
    async fn keep(&self, note: Note, _cx: &ToolCx) -> sacp::Result<String> {
        Ok(note.text)
    }
}

fn main() {}
