//! A message on its way to a proxy's or an agent's handlers, and the way to answer it.

use std::fmt;
use std::sync::Arc;

use serde::Serialize;
use tokio_util::sync::CancellationToken;

use crate::acp::Side;
use crate::jsonrpc::{Error, RawJson, Responder};
use crate::serving::AnswerSink;

/// A request or notification for a [`Proxy`](crate::proxy::Proxy) or an
/// [`Agent`](crate::agent::Agent), with the side it came from.
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
}

impl Incoming {
    pub(crate) fn request(method: String, params: Option<RawJson>, reply: Reply) -> Self {
        let from = reply.to;
        Incoming {
            from,
            method,
            params,
            reply: Some(reply),
            rejected: None,
        }
    }

    pub(crate) fn notification(from: Side, method: String, params: Option<RawJson>) -> Self {
        Incoming {
            from,
            method,
            params,
            reply: None,
            rejected: None,
        }
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
pub struct Reply {
    responder: Responder,
    finish: Finish,
    /// The side the request came from, where the answer goes.
    to: Side,
    /// Keeps the answer behind what it must not overtake (see `serving`).
    sink: Arc<dyn AnswerSink>,
}

impl fmt::Debug for Reply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reply")
            .field("responder", &self.responder)
            .field("to", &self.to)
            .finish_non_exhaustive()
    }
}

/// What happens to a result before it goes out.
#[derive(Debug, Clone, Copy)]
enum Finish {
    AsIs,
    /// The answer to `initialize` of a proxy: it says that the proxy capability was accepted.
    AcceptProxy,
}

impl Reply {
    pub(crate) fn new(responder: Responder, to: Side, sink: Arc<dyn AnswerSink>) -> Reply {
        Reply {
            responder,
            finish: Finish::AsIs,
            to,
            sink,
        }
    }

    /// The answer to a proxy's `initialize`: marked as accepting the proxy capability.
    pub(crate) fn accepting_proxy(mut self) -> Reply {
        self.finish = Finish::AcceptProxy;
        self
    }

    /// Answers with a result or an error.
    pub fn answer<T: Serialize>(self, result: Result<T, Error>) {
        self.relay(result.and_then(|value| RawJson::to_raw(&value)))
    }

    /// Answers with a raw result (for example one forwarded from elsewhere) or an error.
    pub fn relay(self, result: Result<RawJson, Error>) {
        let result = match self.finish {
            Finish::AsIs => result,
            Finish::AcceptProxy => result.and_then(crate::proxy::handshake::mark_accepted),
        };
        self.sink.answer(self.responder, result, self.to)
    }

    /// Whether the peer cancelled the request.
    pub fn is_cancelled(&self) -> bool {
        self.responder.is_cancelled()
    }

    pub(crate) fn cancel_token(&self) -> CancellationToken {
        self.responder.token().clone()
    }
}
