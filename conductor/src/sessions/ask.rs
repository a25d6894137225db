//! A request of the agent's for an editor — `session/request_permission`, `fs/*`,
//! `terminal/*`, `elicitation/create`, or any other that names the session — held by the
//! session until a client answers it.
//!
//! Every attached client is sent it (but `fs/*` and `terminal/*`: one controller, see
//! `attach.rs`); the first controller's answer goes to the agent, the other copies are
//! withdrawn (`$/cancel_request`), later answers are dropped. A client that goes away before answering leaves it waiting for the next one. While
//! no client is attached, it waits at most the layer's deadline, then gets what an editor that
//! refuses would answer: a permission request `cancelled`, an elicitation `cancel`, anything
//! else an error saying no editor was there.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, Weak};

use sacp::jsonrpc::{Error, Id, RawJson};
use tokio::sync::Notify;

use super::who::Who;
use crate::lock::lock;

/// Where a request came from and its answer goes: the chain whose agent asked.
pub(super) trait Requester: Send + Sync + std::fmt::Debug {
    /// The answer to its request `id`.
    fn answer(&self, id: Id, result: Result<RawJson, Error>);
    /// What a client did about a session, for the chain's trace.
    fn note(&self, session: &str, event: &'static str, who: &Who, method: Option<&str>);
}

/// One request of the agent's, waiting for an editor.
#[derive(Debug)]
pub(crate) struct Ask {
    pub(super) method: String,
    /// With the editor's session ids.
    pub(super) params: RawJson,
    /// Its id in the chain, and the chain, until the first answer (or the chain gives it up).
    asker: Mutex<Option<(Id, Weak<dyn Requester>)>>,
    /// Woken by the answer.
    done: Notify,
    /// For a request one client only is to answer ([`Ask::for_one`]): that client's
    /// attachment (0 while none is chosen: the first controller that takes it).
    target: AtomicU64,
}

impl Ask {
    pub(super) fn new(method: String, params: RawJson, id: Id, chain: Weak<dyn Requester>) -> Ask {
        Ask {
            method,
            params,
            asker: Mutex::new(Some((id, chain))),
            done: Notify::new(),
            target: AtomicU64::new(0),
        }
    }

    /// Whether one client only is to answer it: `fs/*` and `terminal/*` act on the machine of
    /// the client that answers.
    pub(super) fn for_one(&self) -> bool {
        self.method.starts_with("fs/") || self.method.starts_with("terminal/")
    }

    /// The client chosen to answer it, if one is.
    pub(super) fn target(&self) -> Option<u64> {
        Some(self.target.load(Ordering::Acquire)).filter(|t| *t != 0)
    }

    pub(super) fn set_target(&self, target: Option<u64>) {
        self.target.store(target.unwrap_or(0), Ordering::Release);
    }

    /// Whether client `who` (attachment `att`) is sent it: every client is, but one that is
    /// for one controller goes to that one (the first controller to take it, while none is
    /// chosen) and never to an observer.
    pub(super) fn is_for(&self, who: &Who, att: u64) -> bool {
        if !self.for_one() {
            return true;
        }
        if who.is_observer() {
            return false;
        }
        match self
            .target
            .compare_exchange(0, att, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => true,
            Err(chosen) => chosen == att,
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

    /// [`Ask::answer`] by client `who`, which the chain's trace is told when its answer is
    /// the one.
    pub(super) fn answer_by(&self, result: Result<RawJson, Error>, who: &Who) -> bool {
        let chain = lock(&self.asker).as_ref().and_then(|(_, c)| c.upgrade());
        let answered = self.answer(result);
        if answered
            && let Some(chain) = chain
            && let Some(session) = self.params.plain_str("sessionId")
        {
            chain.note(session, "answered", who, Some(&self.method));
        }
        answered
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
