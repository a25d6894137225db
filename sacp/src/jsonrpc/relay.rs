//! [`relay`]: a request passed on to another connection, and its answer passed back.
//!
//! One primitive for every place that does this: a proxy forwarding what no handler takes, the
//! session router sending a session's request to its backend, the conductor's MCP bridges.

use std::future::{Future, IntoFuture};
use std::sync::Arc;

use super::hold::Marks;
use super::{Error, PendingResponse, RawJson, Responder};

/// Where the answer of a relayed request goes: a [`Responder`], a proxy's or agent's
/// [`Reply`](crate::proxy::Reply), or any other way back to whoever asked (the conductor's MCP
/// bridges write to a socket).
pub trait Answer: Send + 'static {
    /// Completes when the original request is cancelled (never, for an asker that cannot
    /// cancel).
    fn cancelled(&self) -> impl Future<Output = ()> + Send + '_;

    /// Answers the original request.
    fn answer_raw(self, result: Result<RawJson, Error>) -> impl Future<Output = ()> + Send;
}

impl Answer for Responder {
    fn cancelled(&self) -> impl Future<Output = ()> + Send + '_ {
        Responder::cancelled(self)
    }

    fn answer_raw(self, result: Result<RawJson, Error>) -> impl Future<Output = ()> + Send {
        Responder::answer_raw(self, result);
        std::future::ready(())
    }
}

impl PendingResponse<RawJson> {
    /// Relays this request's answer to `to` from a task of its own, tied to the connection the
    /// request went out on ([`relay`] in the background). The task is the response's awaiter
    /// from now on, so the response keeps its place in its peer's stream until the answer is
    /// passed on, however early it comes (see the `hold` module).
    pub fn relay_to<A: Answer>(self, to: A) {
        let Some((conn, slot)) = self.connection_and_slot() else {
            // It could not be sent: the error is the answer.
            tokio::spawn(relay(self, to));
            return;
        };
        let marks = Arc::new(Marks::default());
        slot.hand_to(marks.clone());
        conn.lanes().spawn_marked(marks, relay(self, to));
    }
}

/// Waits for the answer of `pending` (a request sent on somebody's behalf) and gives it to
/// `to`, as it came — unless the original request is cancelled first: then dropping `pending`
/// cancels the relayed request too (`$/cancel_request` to its peer), and `to` has already been
/// answered by its own connection.
pub async fn relay<A: Answer>(pending: PendingResponse<RawJson>, to: A) {
    let answer = pending.into_future();
    let result = tokio::select! {
        biased;
        () = to.cancelled() => None,
        result = answer => Some(result),
    };
    if let Some(result) = result {
        to.answer_raw(result).await;
    }
}
