use std::sync::atomic::{AtomicU64, Ordering};

use sacp::mcp::ToolCx;
use sacp::schema::mcp::CallToolResult;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Note {
    /// The note's text.
    text: String,
}

#[derive(serde::Serialize)]
struct Count {
    notes: u64,
}

#[derive(Default)]
struct Notes {
    count: AtomicU64,
}

#[sacp::proxy(mcp_name = "notes")]
impl Notes {
    /// Keeps a note.
    #[tool]
    async fn keep(&self, note: Note, _cx: &ToolCx) -> sacp::Result<Count> {
        let _ = note.text;
        Ok(Count {
            notes: self.count.fetch_add(1, Ordering::Relaxed) + 1,
        })
    }

    /// How many notes there are.
    #[tool(name = "notes.count")]
    async fn how_many(&self, _cx: &ToolCx) -> sacp::Result<String> {
        Ok(self.count.load(Ordering::Relaxed).to_string())
    }

    /// Forgets every note.
    #[tool]
    async fn forget(&self, _cx: &ToolCx) -> Result<(), sacp::Error> {
        self.count.store(0, Ordering::Relaxed);
        Ok(())
    }

    /// Answers the whole result itself.
    #[tool]
    async fn raw(&self, _cx: &ToolCx) -> sacp::Result<CallToolResult> {
        Ok(CallToolResult::new(Vec::new()))
    }
}

struct Named {
    name: String,
}

#[sacp::proxy(mcp_name = self.name.clone())]
impl Named {
    /// Says hello.
    #[tool]
    async fn hello(&self, _cx: &ToolCx) -> sacp::Result<&'static str> {
        Ok("hello")
    }

    /// Another server, for every session.
    #[mcp_server]
    fn more(&self) -> sacp::mcp::ToolServer<Notes> {
        sacp::mcp::ToolServer::new(std::sync::Arc::new(Notes::default()))
    }
}

fn main() {
    let _ = sacp::proxy::serve_stdio(Notes::default());
    let _ = sacp::proxy::serve_stdio(Named { name: "x".into() });
}
