//! A typed ACP v2 proxy that only observes: it reads every prompt and every session update as
//! `sacp::acp::v2` types, counts them, and sends each on as it came (typed is lossless). At
//! each idle update it says on stderr how many prompts and updates it has seen, and each
//! prompt's handler, waiting for its turn's end with `cx.idle`, says how the turn ended. Run
//! it in a v2 chain: `conductor agent v2-observer-proxy "test-agent --protocol 2"`. It gives
//! the agent one tool, `prompts` (server `observer`): how many prompts went through.
//!
//! `v2-observer-proxy PREFIX` also puts `PREFIX` in front of the text of every agent message
//! chunk: only that text changes, every other field leaves as it came.

use std::sync::atomic::{AtomicU64, Ordering};

use sacp::acp::v2::{
    ContentBlock, PromptRequest, PromptResponse, SessionUpdate, StateUpdate,
    UpdateSessionNotification,
};
use sacp::mcp::ToolCx;
use sacp::proxy::Cx;

/// Counts prompts and updates.
#[derive(Default)]
struct Observer {
    prompts: AtomicU64,
    updates: AtomicU64,
    /// Put in front of the agent's text chunks, if given.
    prefix: Option<String>,
}

#[sacp::proxy(protocol = 2, mcp_name = "observer")]
impl Observer {
    /// How many prompts went through.
    #[tool]
    async fn prompts(&self, _cx: &ToolCx) -> sacp::Result<String> {
        Ok(self.prompts.load(Ordering::Relaxed).to_string())
    }

    #[on_request]
    async fn prompt(&self, req: PromptRequest, cx: &Cx) -> sacp::Result<PromptResponse> {
        self.prompts.fetch_add(1, Ordering::Relaxed);
        // Waiting from before the prompt goes on: its idle update cannot be missed.
        let idle = cx.idle(&req.session_id);
        let session = req.session_id.clone();
        let ack = cx.successor().request(req).await?;
        cx.spawn(async move {
            if let Ok(idle) = idle.await {
                let stop = serde_json::to_value(&idle).unwrap_or_default();
                eprintln!(
                    "v2-observer-proxy: the turn of {session} ended {}",
                    stop["stopReason"]
                );
            }
        });
        Ok(ack)
    }

    #[on_notification(from = agent)]
    async fn update(&self, mut n: UpdateSessionNotification, cx: &Cx) -> sacp::Result<()> {
        if let (Some(prefix), SessionUpdate::AgentMessageChunk(chunk)) =
            (&self.prefix, &mut n.update)
            && let ContentBlock::Text(text) = &mut chunk.content
        {
            text.text.insert_str(0, prefix);
        }
        let updates = self.updates.fetch_add(1, Ordering::Relaxed) + 1;
        if let SessionUpdate::StateUpdate(StateUpdate::Idle(_)) = &n.update {
            let prompts = self.prompts.load(Ordering::Relaxed);
            eprintln!("v2-observer-proxy: {prompts} prompts, {updates} updates");
        }
        cx.client().notify(n).await
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> sacp::Result<()> {
    sacp_examples::init_logging();
    let observer = Observer {
        prefix: std::env::args().nth(1),
        ..Observer::default()
    };
    sacp::proxy::serve_stdio(observer).await
}
