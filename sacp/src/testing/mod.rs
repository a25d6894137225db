//! Test utilities for proxies and agents built with `sacp` (feature `testing`).
//!
//! - [`TestChain`]: your proxies between a [`ScriptedEditor`] and a [`ScriptedAgent`] (or your
//!   own `#[sacp::agent]`), in one process, through the real runtimes and the conductor's own
//!   routing — handshake, per-hop ids, successor envelopes, ordering, MCP over ACP — with no
//!   processes and no sleeps. Deterministic under `tokio::time::pause()`.
//! - [`ScriptedEditor`] opens sessions and prompts; a [`TurnSeen`] is exactly the updates that came
//!   between a prompt and its answer, with assertions that fail with a readable diff.
//! - [`ScriptedAgent`] plays a script of [`Step`]s per prompt and records what it met.
//! - [`Transcript`]: every message of every hop, in delivery order.
//! - [`within`] and [`PATIENCE`]: every await on a peer in a test gets a timeout, and a
//!   failure says what it was waiting for; [`Tally`]: a count handlers bump and tests wait on,
//!   instead of sleeping and polling.
//!
//! ```
//! use sacp::acp::{ContentBlock, PromptRequest, PromptResponse};
//! use sacp::proxy::Cx;
//! use sacp::testing::TestChain;
//!
//! /// Says "please" for the user.
//! struct Polite;
//!
//! #[sacp::proxy]
//! impl Polite {
//!     #[on_request]
//!     async fn prompt(&self, mut req: PromptRequest, cx: &Cx) -> sacp::Result<PromptResponse> {
//!         if let Some(ContentBlock::Text(text)) = req.prompt.first_mut() {
//!             text.text.push_str(", please");
//!         }
//!         cx.successor().request(req).await
//!     }
//! }
//!
//! // In a test: `#[tokio::test] async fn the_agent_hears_please() -> sacp::Result<()>`.
//! #[tokio::main(flavor = "current_thread")]
//! async fn main() -> sacp::Result<()> {
//!     let chain = TestChain::new().proxy(Polite).start().await?;
//!     let session = chain.new_session().await?;
//!     // The scripted agent echoes what it is sent unless given a script.
//!     session.prompt("tea").await?.assert_text("tea, please");
//!     chain.close().await?;
//!     Ok(())
//! }
//! ```

mod agent;
mod chain;
mod editor;
mod patience;
mod transcript;
mod turn;

pub use self::agent::{ScriptedAgent, Step};
pub use self::chain::{RunningChain, TestChain};
pub use self::editor::{PendingTurn, Permission, ScriptedEditor, Session};
pub use self::patience::{PATIENCE, Tally, within};
pub use self::transcript::{MessageKind, Record, Transcript};
pub use self::turn::{TurnSeen, line};
