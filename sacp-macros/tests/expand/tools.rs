use sacp::mcp::ToolCx;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Note {
    text: String,
}

struct Notes;

#[sacp::proxy]
impl Notes {
    /// Keeps a note.
    #[tool(name = "keep_note")]
    async fn keep(&self, note: Note, _cx: &ToolCx) -> sacp::Result<String> {
        Ok(note.text)
    }

    /// Counts the notes.
    #[tool]
    async fn count(&self, _cx: &ToolCx) -> sacp::Result<String> {
        Ok(String::new())
    }
}
