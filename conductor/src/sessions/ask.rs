//! A request of the agent's for an editor — `session/request_permission`, `fs/*`,
//! `terminal/*`, `elicitation/create`, or any other that names the session — held by the
//! session until a client answers it.
//!
//! Every attached client is sent it; the first answer goes to the agent, later ones are
//! dropped. A client that goes away before answering leaves it waiting for the next one. While
//! no client is attached, it waits at most the layer's deadline, then gets what an editor that
//! refuses would answer: a permission request `cancelled`, an elicitation `cancel`, anything
//! else an error saying no editor was there.

use std::sync::{Mutex, Weak};

use sacp::jsonrpc::{Error, Id, RawJson};
use tokio::sync::Notify;

use super::chain::ChainLink;
use crate::lock::lock;

/// One request of the agent's, waiting for an editor.
#[derive(Debug)]
pub(crate) struct Ask {
    pub(super) method: String,
    /// With the editor's session ids.
    pub(super) params: RawJson,
    /// Its id in the chain, and the chain, until the first answer (or the chain gives it up).
    asker: Mutex<Option<(Id, Weak<ChainLink>)>>,
    /// Woken by the answer.
    done: Notify,
}

impl Ask {
    pub(super) fn new(method: String, params: RawJson, id: Id, chain: Weak<ChainLink>) -> Ask {
        Ask {
            method,
            params,
            asker: Mutex::new(Some((id, chain))),
            done: Notify::new(),
        }
    }

    pub(super) fn size(&self) -> usize {
        self.method.len() + self.params.len()
    }

    /// Whether it needs no answer any more: answered, or given up by the agent.
    pub(super) fn is_answered(&self) -> bool {
        lock(&self.asker).is_none()
    }

    /// Gives the agent `result` if nobody answered before; whether this was the answer.
    pub(super) fn answer(&self, result: Result<RawJson, Error>) -> bool {
        let asker = lock(&self.asker).take();
        match asker {
            Some((id, chain)) => {
                if let Some(chain) = chain.upgrade() {
                    chain.answer(id, result);
                }
                self.done.notify_waiters();
                true
            }
            None => false,
        }
    }

    /// The agent gave it up (`$/cancel_request`): nobody answers it.
    pub(super) fn cancelled(&self) {
        if lock(&self.asker).take().is_some() {
            self.done.notify_waiters();
        }
    }

    /// Completes once it is answered (or given up).
    pub(super) async fn answered(&self) {
        loop {
            let done = self.done.notified();
            tokio::pin!(done);
            done.as_mut().enable();
            if self.is_answered() {
                return;
            }
            done.await;
        }
    }

    /// Answers as an editor that refuses would, saying `why` where the answer can.
    pub(super) fn refuse(&self, why: &str) -> bool {
        self.answer(refusal(&self.method, why))
    }
}

/// What an editor that refuses `method` answers.
fn refusal(method: &str, why: &str) -> Result<RawJson, Error> {
    match method {
        "session/request_permission" => {
            RawJson::to_raw(&serde_json::json!({"outcome": {"outcome": "cancelled"}}))
        }
        "elicitation/create" => RawJson::to_raw(&serde_json::json!({"action": "cancel"})),
        _ => Err(Error::internal_error(why.to_owned())),
    }
}
