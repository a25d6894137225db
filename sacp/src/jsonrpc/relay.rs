//! [`PendingResponse::relay_to`]: a request passed on, and its answer passed back.
//!
//! One primitive for every place that does this: a proxy forwarding what no handler takes, the
//! session router sending a session's request to its backend, the conductor's MCP bridges.
//!
//! A relayed answer needs no task of its own: the response is handed over in its lane's turn
//! (after what its peer sent before it, before anything it sent after, see the `lanes`
//! module) and answered right there, since a connection queues an answer without waiting. A
//! cancellation of the original request drops the relayed one (`$/cancel_request` to its peer)
//! through a callback of the original's connection, again without a task.

use std::future::Future;
use std::sync::{Arc, Mutex};

use super::{Error, PendingResponse, RawJson, Responder};
use crate::lock::lock;

/// Where the answer of a relayed request goes: a [`Responder`], a proxy's or agent's
/// [`Reply`](crate::proxy::Reply), or any other way back to whoever asked (the conductor's MCP
/// bridges write to a socket).
pub trait Answer: Send + Sized + 'static {
    /// Answers the original request if that needs no waiting; gives the result back if it
    /// does (a full queue of the asker's own).
    #[allow(clippy::result_large_err)]
    fn answer_now(
        self,
        result: Result<RawJson, Error>,
    ) -> Result<(), (Self, Result<RawJson, Error>)>;

    /// Answers the original request, waiting for room if need be.
    fn answer_later(self, result: Result<RawJson, Error>) -> impl Future<Output = ()> + Send;

    /// Runs `f` once the original request is cancelled (at once if it no longer waits for an
    /// answer; never, for an asker that cannot cancel).
    fn on_cancel(&self, f: Box<dyn FnOnce() + Send>);
}

impl Answer for Responder {
    fn answer_now(
        self,
        result: Result<RawJson, Error>,
    ) -> Result<(), (Self, Result<RawJson, Error>)> {
        Responder::answer_raw(self, result);
        Ok(())
    }

    fn answer_later(self, result: Result<RawJson, Error>) -> impl Future<Output = ()> + Send {
        Responder::answer_raw(self, result);
        std::future::ready(())
    }

    fn on_cancel(&self, f: Box<dyn FnOnce() + Send>) {
        Responder::on_cancel(self, f)
    }
}

impl PendingResponse<RawJson> {
    /// Passes this request's answer to `to` as it comes — unless the original request is
    /// cancelled first: then this one is cancelled too (`$/cancel_request` to its peer), and
    /// `to` has been answered `-32800` by its own connection. A request that could not be sent
    /// answers `to` with the reason at once; one whose connection ends, with that error.
    pub fn relay_to<A: Answer>(self, to: A) {
        let Some(slot) = self.slot() else {
            let error = self
                .failure()
                .unwrap_or_else(|| Error::internal_error("the request was not sent"));
            answer(to, Err(error));
            return;
        };
        // Dropped on cancel (which cancels it downstream); taken when the answer comes.
        let pending = Arc::new(Mutex::new(Some(self)));
        to.on_cancel(Box::new({
            let pending = pending.clone();
            move || drop(lock(&pending).take())
        }));
        slot.hand_over(Box::new(move |result| {
            // Answered: nothing to cancel any more.
            let relayed = lock(&pending).take();
            if let Some(relayed) = relayed {
                relayed.answered();
            }
            answer(to, result);
        }));
    }
}

/// Answers `to` at once, or from a task when it has to wait for room.
fn answer<A: Answer>(to: A, result: Result<RawJson, Error>) {
    if let Err((to, result)) = to.answer_now(result) {
        tokio::spawn(to.answer_later(result));
    }
}
