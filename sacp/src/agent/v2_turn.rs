//! ACP v2 prompt turns for agents: the acknowledgement, then the turn's updates.
//!
//! In v2, `session/prompt` is answered at once with the id of the user message it inserted;
//! the turn then runs in `session/update`s: the user message, `state_update` `running`, the
//! agent's chunks and tool calls, and an idle `state_update` with the stop reason last.
//! [`Cx::run_turn`] does that order for a handler, so the handler writes only the middle.

use std::future::Future;

use crate::acp::v2::{
    self, ContentBlock, IdleStateUpdate, IdleStateUpdateCommon, IdleStateUpdateKind, MessageId,
    PromptRequest, PromptResponse, RunningStateUpdate, SessionId, SessionUpdate, StateUpdate,
    TextContent, UpdateSessionNotification, UserMessage,
};
use crate::jsonrpc::Error;

use super::{Cx, Turn};

/// One v2 prompt turn being run by [`Cx::run_turn`]: what its work needs to report on it.
#[derive(Debug, Clone)]
pub struct V2Turn {
    cx: Cx,
    session: SessionId,
    user_message: MessageId,
    agent_message: MessageId,
    turn: Turn,
}

impl Cx {
    /// Runs a v2 prompt turn: returns the acknowledgement to answer `prompt` with (a new user
    /// message id), and once that answer has gone out sends the user message, `state_update`
    /// `running`, whatever `work` sends, and an idle `state_update` with the stop reason `work`
    /// returns — `cancelled` when the client cancels the turn first (`work` is then dropped),
    /// `error` with the error when `work` fails.
    ///
    /// ```no_run
    /// use sacp::acp::v2;
    /// use sacp::agent::Cx;
    ///
    /// struct Echo;
    ///
    /// #[sacp::agent(protocol = 2)]
    /// impl Echo {
    ///     #[on_request]
    ///     async fn prompt(&self, req: v2::PromptRequest, cx: &Cx) -> sacp::Result<v2::PromptResponse> {
    ///         let text = format!("{} blocks", req.prompt.len());
    ///         cx.run_turn(req, |turn| async move {
    ///             turn.say(text).await?;
    ///             Ok(v2::IdleStateUpdateKind::EndTurn)
    ///         })
    ///     }
    /// }
    /// ```
    pub fn run_turn<F, W>(&self, prompt: PromptRequest, work: F) -> crate::Result<PromptResponse>
    where
        F: FnOnce(V2Turn) -> W + Send + 'static,
        W: Future<Output = crate::Result<IdleStateUpdateKind>> + Send + 'static,
    {
        let user_message = MessageId(uuid::Uuid::new_v4().to_string());
        let turn = V2Turn {
            cx: self.clone(),
            turn: self.turn_of(&prompt.session_id.0),
            session: prompt.session_id,
            user_message: user_message.clone(),
            agent_message: MessageId(uuid::Uuid::new_v4().to_string()),
        };
        let content = prompt.prompt;
        self.after_answer(async move {
            if let Err(e) = turn.run(content, work).await {
                tracing::debug!(error = %e, "a v2 turn could not report to the client");
            }
        })?;
        Ok(PromptResponse::new(user_message))
    }
}

impl V2Turn {
    async fn run<F, W>(self, content: Vec<ContentBlock>, work: F) -> crate::Result<()>
    where
        F: FnOnce(V2Turn) -> W,
        W: Future<Output = crate::Result<IdleStateUpdateKind>>,
    {
        let user = UserMessage::new(self.user_message.clone()).content(content);
        self.send(SessionUpdate::UserMessage(user)).await?;
        self.send(SessionUpdate::StateUpdate(StateUpdate::Running(
            RunningStateUpdate::new(),
        )))
        .await?;
        let turn = self.turn.clone();
        let stop = tokio::select! {
            biased;
            () = turn.cancelled() => IdleStateUpdateKind::Cancelled,
            stop = work(self.clone()) => stop.unwrap_or_else(|e| failed(&e)),
        };
        // A cancel that came while the work was finishing still ends the turn `cancelled`.
        let stop = if turn.is_cancelled() {
            IdleStateUpdateKind::Cancelled
        } else {
            stop
        };
        let idle = IdleStateUpdate::new(IdleStateUpdateCommon::new(), stop);
        self.send(SessionUpdate::StateUpdate(StateUpdate::Idle(idle)))
            .await
    }

    /// The session of the turn.
    pub fn session_id(&self) -> &SessionId {
        &self.session
    }

    /// The id of the user message the prompt inserted (the acknowledgement's).
    pub fn user_message_id(&self) -> &MessageId {
        &self.user_message
    }

    /// The id of the agent message [`V2Turn::say`] streams into.
    pub fn agent_message_id(&self) -> &MessageId {
        &self.agent_message
    }

    /// Sends an update of the turn's session.
    pub async fn send(&self, update: SessionUpdate) -> crate::Result<()> {
        let notification = UpdateSessionNotification::new(self.session.clone(), update);
        self.cx.client().notify(notification).await
    }

    /// Streams `text` as a chunk of the agent's message.
    pub async fn say(&self, text: impl Into<String>) -> crate::Result<()> {
        let block = ContentBlock::Text(TextContent::new(text));
        let chunk = v2::ContentChunk::new(self.agent_message.clone(), block);
        self.send(SessionUpdate::AgentMessageChunk(chunk)).await
    }

    /// Completes when the client cancels the turn (`session/cancel`).
    pub async fn cancelled(&self) {
        self.turn.cancelled().await
    }

    /// Whether the client has cancelled the turn.
    pub fn is_cancelled(&self) -> bool {
        self.turn.is_cancelled()
    }

    /// The agent's context, to ask the client things (a permission, say).
    pub fn cx(&self) -> &Cx {
        &self.cx
    }
}

/// The stop reason of a turn whose work failed: `error`, with the error.
fn failed(e: &Error) -> IdleStateUpdateKind {
    let error = serde_json::json!({ "code": e.code, "message": e.message });
    let reason = match serde_json::from_value::<v2::Error>(error) {
        Ok(error) => v2::ErrorStopReason::new().error(error),
        Err(_) => v2::ErrorStopReason::new(),
    };
    IdleStateUpdateKind::Error(reason)
}
