//! Prompt turns and their cancellation, seen without waiting for the agent's handlers.
//!
//! A turn opens when a `session/prompt` arrives — in arrival order, before its handler starts —
//! and ends when its handler finishes. A `session/cancel` that arrives meanwhile cancels it at
//! once, before any handler runs (the notification then goes to the agent's own handler as
//! usual). The prompt handler sees it through [`Cx::turn`](super::Cx::turn). Because
//! the turn opens on arrival, a cancel sent right after the prompt is never missed, however
//! late the handler's task gets to run.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;

use crate::jsonrpc::RawJson;
use crate::lock::lock;

/// The open turn of each session.
#[derive(Debug, Default)]
pub(crate) struct Turns {
    open: Mutex<HashMap<String, (u64, CancellationToken)>>,
    next: AtomicU64,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct SessionOf {
    session_id: String,
}

impl Turns {
    /// Opens a new turn for `session` (a turn still open there is left to its own fate).
    pub(crate) fn open(self: &Arc<Self>, session: &str) -> Turn {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let token = CancellationToken::new();
        lock(&self.open).insert(session.to_owned(), (id, token.clone()));
        Turn(Arc::new(Inner {
            turns: self.clone(),
            session: session.to_owned(),
            id,
            token,
        }))
    }

    /// Opens the turn of a `session/prompt` with these params (`None` if they name no session).
    pub(crate) fn open_for(self: &Arc<Self>, params: Option<&RawJson>) -> Option<Turn> {
        let prompt = params?.parse::<SessionOf>().ok()?;
        Some(self.open(&prompt.session_id))
    }

    /// Cancels the open turn of the session named by `session/cancel` params.
    pub(crate) fn cancel(&self, params: Option<&RawJson>) {
        let Some(Ok(cancel)) = params.map(RawJson::parse::<SessionOf>) else {
            return;
        };
        if let Some((_, token)) = lock(&self.open).remove(&cancel.session_id) {
            token.cancel();
        }
    }
}

/// One prompt turn of a session, from [`Cx::turn`](super::Cx::turn). Cheap to clone.
#[derive(Debug, Clone)]
pub struct Turn(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    turns: Arc<Turns>,
    session: String,
    id: u64,
    token: CancellationToken,
}

impl Turn {
    /// Completes when the client sends `session/cancel` for this session.
    pub async fn cancelled(&self) {
        self.0.token.cancelled().await
    }

    /// Whether the client has cancelled this turn.
    pub fn is_cancelled(&self) -> bool {
        self.0.token.is_cancelled()
    }

    /// Whether this is a turn of `session`.
    pub(crate) fn is_of(&self, session: &str) -> bool {
        self.0.session == session
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        let mut open = lock(&self.turns.open);
        if open
            .get(&self.session)
            .is_some_and(|(id, _)| *id == self.id)
        {
            open.remove(&self.session);
        }
    }
}
