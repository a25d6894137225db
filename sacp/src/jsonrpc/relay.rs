//! [`relay`]: a request passed on to another connection, and its answer passed back.
//!
//! One primitive for every place that does this: a proxy forwarding what no handler takes, the
//! session router sending a session's request to its backend, the conductor's MCP bridges.

use std::future::{Future, IntoFuture};

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
