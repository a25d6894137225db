//! A message on its way to a proxy's or an agent's handlers, and the way to answer it.

use std::fmt;
use std::future::Future;

use serde::Serialize;

use crate::acp::Side;
use crate::jsonrpc::{Answer, Error, RawJson, Responder};

/// A request or notification for a proxy's or an agent's handlers, with the side it came from.
///
/// The generated `dispatch` takes it apart by type; a hand-written one can read the method and
/// the raw params.
#[derive(Debug)]
pub struct Incoming {
    pub(crate) from: Side,
    pub(crate) method: String,
    pub(crate) params: Option<RawJson>,
    /// `Some` for a request.
    pub(crate) reply: Option<Reply>,
    /// Set when a handler took the method but the params did not fit its type.
    pub(crate) rejected: Option<Error>,
    /// The ACP version of the connection, once it is known: a handler takes only messages of
    /// its type's version (a proxy or agent that speaks two has a handler for each).
    pub(crate) version: Option<u16>,
}

impl Incoming {
    pub(crate) fn request(method: String, params: Option<RawJson>, reply: Reply) -> Self {
        Incoming {
            from: reply.to,
            method,
            params,
            reply: Some(reply),
            rejected: None,
            version: None,
        }
    }

    pub(crate) fn notification(from: Side, method: String, params: Option<RawJson>) -> Self {
        Incoming {
            from,
            method,
            params,
            reply: None,
            rejected: None,
            version: None,
        }
    }

    /// Whether a handler of a message type of ACP `version` may take it: the connection
    /// speaks that version, or has not said yet.
    pub(crate) fn speaks(&self, version: u16) -> bool {
        self.version.is_none_or(|v| v == version)
    }

    /// The JSON-RPC method.
    pub fn method(&self) -> &str {
        &self.method
    }

    /// The side that sent it: [`Side::Client`] for what comes from the editor's end,
    /// [`Side::Agent`] for what comes from the successor.
    pub fn from(&self) -> Side {
        self.from
    }

    /// The params, as they arrived.
    pub fn params(&self) -> Option<&RawJson> {
        self.params.as_ref()
    }

    /// Whether it is a request (it expects an answer).
    pub fn is_request(&self) -> bool {
        self.reply.is_some()
    }

    /// Takes it apart: the method, the params and, for a request, how to answer it.
    pub fn into_parts(self) -> (String, Option<RawJson>, Option<Reply>) {
        (self.method, self.params, self.reply)
    }
}

/// How to answer one request. Dropping it unanswered answers the peer with an internal error.
///
/// The answer goes out at once: what the handler sent before it (and, once it awaited a
/// response, everything the peer sent before that response) is already queued ahead of it.
pub struct Reply {
    responder: Responder,
    /// What the role does to a result before it goes out.
    finish: Option<Finish>,
    /// The side the request came from, where the answer goes.
    to: Side,
}

/// A role's finishing hook: what happens to a result before it goes out (the answer to a
/// proxy's `initialize` says that it accepted the proxy capability, say).
pub(crate) type Finish =
    Box<dyn FnOnce(Result<RawJson, Error>) -> Result<RawJson, Error> + Send + Sync>;

impl fmt::Debug for Reply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reply")
            .field("responder", &self.responder)
            .field("to", &self.to)
            .field("finishing", &self.finish.is_some())
            .finish()
    }
}

impl Reply {
    pub(crate) fn new(responder: Responder, to: Side) -> Reply {
        Reply {
            responder,
            finish: None,
            to,
        }
    }

    /// Adds a hook the result goes through before it goes out, after those added before.
    pub(crate) fn finishing(mut self, finish: Finish) -> Reply {
        self.finish = Some(match self.finish.take() {
            None => finish,
            Some(first) => Box::new(move |result| finish(first(result))),
        });
        self
    }

    /// Answers with a result or an error (any error type that converts into [`Error`]).
    pub fn answer<T: Serialize, E: Into<Error>>(self, result: Result<T, E>) {
        self.answer_raw(
            result
                .map_err(Into::into)
                .and_then(|value| RawJson::to_raw(&value)),
        )
    }

    /// Answers with a raw result (for example one forwarded from elsewhere) or an error.
    pub fn answer_raw(self, result: Result<RawJson, Error>) {
        let result = match self.finish {
            Some(finish) => finish(result),
            None => result,
        };
        self.responder.answer_raw(result)
    }

    /// Whether the peer cancelled the request.
    pub fn is_cancelled(&self) -> bool {
        self.responder.is_cancelled()
    }

    /// Completes when the peer cancels the request.
    pub async fn cancelled(&self) {
        self.responder.cancelled().await
    }
}

impl Answer for Reply {
    fn answer_now(
        self,
        result: Result<RawJson, Error>,
    ) -> Result<(), (Self, Result<RawJson, Error>)> {
        Reply::answer_raw(self, result);
        Ok(())
    }

    fn answer_later(self, result: Result<RawJson, Error>) -> impl Future<Output = ()> + Send {
        Reply::answer_raw(self, result);
        std::future::ready(())
    }

    fn on_cancel(&self, f: Box<dyn FnOnce() + Send>) {
        self.responder.on_cancel(f)
    }
}
