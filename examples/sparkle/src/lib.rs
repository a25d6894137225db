//! Sparkle: a proxy that gives the agent a persona and a notebook.
//!
//! Put it in front of any agent: `conductor agent sparkle "my-agent --acp"`.
//!
//! - It serves an MCP server named `sparkle`, injected into every `session/new`, `session/load`
//!   and `session/resume`, with three tools: `embody_sparkle` (returns the embodiment text),
//!   `save_insight {topic, insight, tags}` (keeps an insight for the session) and
//!   `list_insights` (the session's insights).
//! - On the **first prompt of each session** it first sends the agent an embodiment prompt that
//!   asks it to call `embody_sparkle`, waits for that turn to end, then sends the user's prompt
//!   and answers the editor with the agent's answer to it.
//! - **What the editor sees of the embodiment turn**: its tool calls (`tool_call`,
//!   `tool_call_update`) as they are, and what the agent says during it as *thoughts*
//!   (`agent_thought_chunk`) marked `[sparkle] `, never as the answer (`agent_message_chunk`).
//!   Other updates of that turn are dropped.
//! - Every later prompt, and everything else, passes through untouched.
//!
//! The embodiment text is [`DEFAULT_EMBODIMENT`], or the `SPARKLE_EMBODIMENT` environment
//! variable, or the file given with `--embodiment-file FILE` (the flag wins). Sessions run at
//! once, each with its own embodiment turn and its own notebook.

#![forbid(unsafe_code)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use sacp::acp::{
    ContentBlock, ContentChunk, PromptRequest, PromptResponse, SessionId, SessionNotification,
    SessionUpdate, StopReason, TextContent,
};
use sacp::mcp::ToolCx;
use sacp::proxy::Cx;
use tokio::sync::OnceCell;

/// The embodiment text unless told otherwise.
pub const DEFAULT_EMBODIMENT: &str = "You are Sparkle: a warm, curious and precise \
collaborator. You think out loud about trade-offs, you name what you do not know, and you keep \
the insights worth remembering with the `save_insight` tool.";

/// What the agent is asked before a session's first prompt.
pub const EMBODIMENT_PROMPT: &str = "Before we start: Call the `embody_sparkle` tool of the \
`sparkle` MCP server, and take on what it returns for the rest of this session.";

/// What marks the agent's words during the embodiment turn.
pub const MARK: &str = "[sparkle] ";

/// `save_insight`'s input.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Insight {
    /// What the insight is about.
    pub topic: String,
    /// The insight itself.
    pub insight: String,
    /// Tags to find it by.
    #[serde(default)]
    pub tags: Vec<String>,
}

/// `save_insight`'s output.
#[derive(Debug, serde::Serialize)]
pub struct Saved {
    /// How many insights the session has now.
    pub insights: usize,
}

/// `list_insights`' output.
#[derive(Debug, serde::Serialize)]
pub struct Insights {
    /// The session's insights, oldest first.
    pub insights: Vec<Insight>,
}

/// One session, as Sparkle keeps it.
#[derive(Debug, Default)]
struct Session {
    /// Set once the embodiment turn is over.
    embodied: OnceCell<()>,
    /// Held while the embodiment turn runs, so that it runs once.
    embodying_turn: tokio::sync::Mutex<()>,
    /// While the embodiment turn runs: its updates are Sparkle's, not the answer.
    embodying: AtomicBool,
    insights: Mutex<Vec<Insight>>,
}

/// The Sparkle proxy; see the crate docs.
#[derive(Debug)]
pub struct Sparkle {
    embodiment: String,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
}

impl Default for Sparkle {
    fn default() -> Self {
        Sparkle::new(DEFAULT_EMBODIMENT)
    }
}

impl Sparkle {
    /// Sparkle with this embodiment text.
    pub fn new(embodiment: impl Into<String>) -> Self {
        Sparkle {
            embodiment: embodiment.into(),
            sessions: Mutex::default(),
        }
    }

    fn session(&self, id: &str) -> Arc<Session> {
        let mut sessions = lock(&self.sessions);
        sessions.entry(id.to_owned()).or_default().clone()
    }

    fn session_of(cx: &ToolCx) -> sacp::Result<String> {
        cx.session_id()
            .map(|s| s.0)
            .ok_or_else(|| sacp::Error::invalid_params("this tool belongs to a session"))
    }

    /// The embodiment turn of `session`: the embodiment prompt, until the agent ends it. Its
    /// stop reason.
    async fn embody(
        &self,
        session: &SessionId,
        state: &Session,
        cx: &Cx,
    ) -> sacp::Result<StopReason> {
        let prompt = vec![ContentBlock::Text(TextContent::new(EMBODIMENT_PROMPT))];
        state.embodying.store(true, Ordering::SeqCst);
        // The answer comes after every update of the turn was handled (the SDK's ordering),
        // so once it is here, nothing of the turn is left to mark.
        let turn = cx
            .successor()
            .request(PromptRequest::new(session.clone(), prompt))
            .await;
        state.embodying.store(false, Ordering::SeqCst);
        tracing::info!(session = %session, outcome = ?turn.as_ref().map(|t| &t.stop_reason), "embodied");
        turn.map(|t| t.stop_reason)
    }
}

#[sacp::proxy(mcp_name = "sparkle")]
impl Sparkle {
    /// Returns Sparkle's embodiment: who to be for the rest of the session.
    #[tool]
    async fn embody_sparkle(&self, _cx: &ToolCx) -> sacp::Result<String> {
        Ok(self.embodiment.clone())
    }

    /// Keeps an insight for this session.
    #[tool]
    async fn save_insight(&self, insight: Insight, cx: &ToolCx) -> sacp::Result<Saved> {
        let session = self.session(&Self::session_of(cx)?);
        let mut insights = lock(&session.insights);
        insights.push(insight);
        Ok(Saved {
            insights: insights.len(),
        })
    }

    /// Lists this session's insights, oldest first.
    #[tool]
    async fn list_insights(&self, cx: &ToolCx) -> sacp::Result<Insights> {
        let session = self.session(&Self::session_of(cx)?);
        let insights = lock(&session.insights);
        Ok(Insights {
            insights: insights.clone(),
        })
    }

    /// The first prompt of a session comes after the embodiment turn; later ones pass on. A
    /// cancelled embodiment turn cancels the prompt (the next one tries again).
    #[on_request]
    async fn prompt(&self, req: PromptRequest, cx: &Cx) -> sacp::Result<PromptResponse> {
        let state = self.session(&req.session_id.0);
        if state.embodied.get().is_none() {
            let _turn = state.embodying_turn.lock().await;
            if state.embodied.get().is_none() {
                match self.embody(&req.session_id, &state, cx).await? {
                    StopReason::Cancelled => {
                        return Ok(PromptResponse::new(StopReason::Cancelled));
                    }
                    _ => {
                        let _ = state.embodied.set(());
                    }
                }
            }
        }
        cx.successor().request(req).await
    }

    /// What the agent says during the embodiment turn is Sparkle's: marked thoughts.
    #[on_notification(from = agent)]
    async fn update(&self, mut n: SessionNotification, cx: &Cx) -> sacp::Result<()> {
        let embodying = {
            let sessions = lock(&self.sessions);
            sessions
                .get(&n.session_id.0)
                .is_some_and(|s| s.embodying.load(Ordering::SeqCst))
        };
        if embodying {
            n.update = match n.update {
                SessionUpdate::AgentMessageChunk(chunk)
                | SessionUpdate::AgentThoughtChunk(chunk) => {
                    SessionUpdate::AgentThoughtChunk(marked(chunk))
                }
                tool @ (SessionUpdate::ToolCall(_) | SessionUpdate::ToolCallUpdate(_)) => tool,
                _ => return Ok(()),
            };
        }
        cx.client().notify(n).await
    }
}

fn marked(mut chunk: ContentChunk) -> ContentChunk {
    if let ContentBlock::Text(text) = &mut chunk.content {
        text.text.insert_str(0, MARK);
    }
    chunk
}

/// Locks `mutex`, taking it as it is when a thread panicked while holding it (the notebooks stay
/// consistent between statements).
fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}
