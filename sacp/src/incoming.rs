//! A message on its way to a proxy's or an agent's handlers, and the way to answer it.

use std::fmt;
use std::sync::Arc;

use serde::Serialize;

use crate::acp::Side;
use crate::jsonrpc::{Error, RawJson, Responder};
use crate::mcp::registry::Registry;

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
        Incoming {
            from: reply.to,
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
///
/// The answer goes out at once: what the handler sent before it (and, once it awaited a
/// response, everything the peer sent before that response) is already queued ahead of it.
pub struct Reply {
    responder: Responder,
    finish: Finish,
    /// The side the request came from, where the answer goes.
    to: Side,
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
#[derive(Debug, Clone)]
enum Finish {
    AsIs,
    /// The answer to `initialize` of a proxy: it says that the proxy capability was accepted.
    AcceptProxy,
    /// The answer to a `session/new` that declared these MCP server URLs: it names their
    /// session.
    BindSession(Arc<Registry>, Vec<String>),
}

impl Reply {
    pub(crate) fn new(responder: Responder, to: Side) -> Reply {
        Reply {
            responder,
            finish: Finish::AsIs,
            to,
        }
    }

    /// The answer to a proxy's `initialize`: marked as accepting the proxy capability.
    pub(crate) fn accepting_proxy(mut self) -> Reply {
        self.finish = Finish::AcceptProxy;
        self
    }

    /// The answer to a `session/new` that declared MCP servers under `urls`: their session is
    /// the one it names.
    pub(crate) fn binding_session(mut self, registry: Arc<Registry>, urls: Vec<String>) -> Reply {
        self.finish = Finish::BindSession(registry, urls);
        self
    }

    /// Answers with a result or an error (any error type that converts into [`Error`]).
    pub fn answer<T: Serialize, E: Into<Error>>(self, result: Result<T, E>) {
        self.relay(
            result
                .map_err(Into::into)
                .and_then(|value| RawJson::to_raw(&value)),
        )
    }

    /// Answers with a raw result (for example one forwarded from elsewhere) or an error.
    pub fn relay(self, result: Result<RawJson, Error>) {
        let result = match &self.finish {
            Finish::AsIs => result,
            Finish::AcceptProxy => result.and_then(crate::protocol::handshake::mark_accepted),
            Finish::BindSession(registry, urls) => {
                if let Ok(answer) = &result {
                    registry.bind_from_result(urls, answer);
                }
                result
            }
        };
        self.responder.respond(result)
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
