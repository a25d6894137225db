//! A proxy that tells what it can reach, for testing a sandbox: `probe-proxy NAME`. A prompt
//! `probe NAME read PATH` is answered by the proxy named `NAME` itself (the agent never sees
//! it) with one message, `NAME read PATH: CONTENT` or `NAME read PATH: error: WHY`; `probe
//! NAME list DIR` with the directory's entries, sorted; `probe NAME connect HOST:PORT` with
//! `NAME connect HOST:PORT: connected` or `…: error: WHY`; `probe NAME env VAR` with the
//! variable's value. To test limits, `probe NAME spin` computes forever, `probe NAME trap`
//! aborts (a trap, as a component), `probe NAME grow MIB` allocates that many MiB. Every other
//! prompt, and probes named for another proxy, go on to the agent. Built natively and as a WebAssembly component (`wasm32-wasip2`), where what it
//! reaches is what the conductor grants it.

use sacp::acp::{
    ContentBlock, ContentChunk, PromptRequest, PromptResponse, SessionNotification, SessionUpdate,
    StopReason, TextContent,
};
use sacp::proxy::Cx;

/// The probe proxy: see the module docs.
#[derive(Debug)]
pub struct Probe {
    /// The name its prompts are addressed to.
    pub name: String,
}

#[sacp::proxy]
impl Probe {
    #[on_request]
    async fn prompt(&self, req: PromptRequest, cx: &Cx) -> sacp::Result<PromptResponse> {
        let text = match req.prompt.first() {
            Some(ContentBlock::Text(text)) => text.text.clone(),
            _ => String::new(),
        };
        let mut words = text.split_whitespace();
        let addressed = words.next() == Some("probe") && words.next() == Some(self.name.as_str());
        if !addressed {
            return cx.successor().request(req).await;
        }
        let (what, arg) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
        let result = match what {
            "read" => std::fs::read_to_string(arg).map_err(|e| e.to_string()),
            "list" => list(arg),
            "connect" => std::net::TcpStream::connect(arg)
                .map(|_| "connected".to_owned())
                .map_err(|e| e.to_string()),
            "env" => std::env::var(arg).map_err(|e| e.to_string()),
            "spin" => loop {
                std::hint::spin_loop();
            },
            "trap" => std::process::abort(),
            "grow" => {
                let mib: usize = arg.parse().unwrap_or(1);
                let grown = std::hint::black_box(vec![1u8; mib << 20]);
                Ok(format!("{} MiB", grown.len() >> 20))
            }
            other => Err(format!("unknown probe {other:?}")),
        };
        let said = match result {
            Ok(found) => format!("{} {what} {arg}: {found}", self.name),
            Err(why) => format!("{} {what} {arg}: error: {why}", self.name),
        };
        let chunk = ContentChunk::new(ContentBlock::Text(TextContent::new(said)));
        let update =
            SessionNotification::new(req.session_id, SessionUpdate::AgentMessageChunk(chunk));
        cx.client().notify(update).await?;
        Ok(PromptResponse::new(StopReason::EndTurn))
    }
}

/// The entries of `dir`, sorted, comma-separated.
fn list(dir: &str) -> Result<String, String> {
    let mut names = std::fs::read_dir(dir)
        .map_err(|e| e.to_string())?
        .map(|entry| entry.map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    names.sort();
    Ok(names.join(","))
}
