//! Prompt turns and their cancellation, seen without waiting for the agent's handlers.
//!
//! A prompt handler holds `&mut self` for the whole turn, so a `session/cancel` handler of the
//! same agent runs only after it. To stop a turn early, the handler takes a [`Turn`] when it
//! starts and waits on [`Turn::cancelled`]: the runtime fires it as soon as `session/cancel`
//! arrives for that session, before any handler runs (the notification then goes to the
//! agent's own handler as usual).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;

use crate::acp::SessionId;
use crate::jsonrpc::RawJson;

/// The open turn of each session.
#[derive(Debug, Default)]
pub(crate) struct Turns {
    open: Mutex<HashMap<String, (u64, CancellationToken)>>,
    next: AtomicU64,
}

impl Turns {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (u64, CancellationToken)>> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Opens a new turn for `session` (a turn still open there is left to its own fate).
    pub(crate) fn open(self: &Arc<Self>, session: &SessionId) -> Turn {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let token = CancellationToken::new();
        self.lock().insert(session.0.clone(), (id, token.clone()));
        Turn {
            turns: self.clone(),
            session: session.0.clone(),
            id,
            token,
        }
    }

    /// Cancels the open turn of the session named by `session/cancel` params.
    pub(crate) fn cancel(&self, params: Option<&RawJson>) {
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Cancel {
            session_id: String,
        }
        let Some(Ok(cancel)) = params.map(RawJson::parse::<Cancel>) else {
            return;
        };
        if let Some((_, token)) = self.lock().remove(&cancel.session_id) {
            token.cancel();
        }
    }
}

/// One prompt turn of a session, from [`AgentCx::turn`](super::AgentCx::turn).
#[derive(Debug)]
pub struct Turn {
    turns: Arc<Turns>,
    session: String,
    id: u64,
    token: CancellationToken,
}

impl Turn {
    /// Completes when the client sends `session/cancel` for this session.
    pub async fn cancelled(&self) {
        self.token.cancelled().await
    }

    /// Whether the client has cancelled this turn.
    pub fn is_cancelled(&self) -> bool {
        self.token.is_cancelled()
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        let mut open = self.turns.lock();
        if open
            .get(&self.session)
            .is_some_and(|(id, _)| *id == self.id)
        {
            open.remove(&self.session);
        }
    }
}
