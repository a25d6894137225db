//! Support for the code `#[sacp::proxy]` and `#[sacp::agent]` generate. Not a public API.
//!
//! Each handler becomes a route, `request::<Message, side>()`; the generated `takes` asks it
//! whether a method and side are its own, the generated `dispatch` asks it to take the message
//! and to answer with the handler's result. Both go through the one generic function, so a
//! message type that is not an ACP message of that side is reported once, at the type.

#![allow(non_camel_case_types, missing_debug_implementations)]
// A message that is not a rung's goes back by value to the next rung; boxing it would cost an
// allocation per message for a move of a few hundred bytes.
#![allow(clippy::result_large_err)]

use std::marker::PhantomData;

use crate::acp::{AcpNotification, AcpRequest, Side};
use crate::agent::AgentCx;
use crate::incoming::{Incoming, Reply};
use crate::jsonrpc::Error;
use crate::proxy::Cx;

/// The client side, as a type: `from = client`.
pub struct client;
/// The agent side, as a type: `from = agent`.
pub struct agent;

/// A side as a type.
pub trait Sender {
    /// The side.
    const SIDE: Side;
}

impl Sender for client {
    const SIDE: Side = Side::Client;
}

impl Sender for agent {
    const SIDE: Side = Side::Agent;
}

/// A request type that side `S` sends.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an ACP request that the {S} sends",
    label = "not a request from the {S}",
    note = "`#[on_request]` takes a request type from `sacp::acp` (e.g. `PromptRequest`); the \
            requests an agent sends (e.g. `RequestPermissionRequest`) need \
            `#[on_request(from = agent)]` in a `#[proxy]`"
)]
pub trait RequestFrom<S>: AcpRequest {}

/// A notification type that side `S` sends.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an ACP notification that the {S} sends",
    label = "not a notification from the {S}",
    note = "`#[on_notification]` takes a notification type from `sacp::acp` (e.g. \
            `CancelNotification`); the notifications an agent sends (e.g. `SessionNotification`) \
            need `#[on_notification(from = agent)]` in a `#[proxy]`"
)]
pub trait NotificationFrom<S>: AcpNotification {}

/// The route of one request handler.
pub struct RequestRoute<R, S>(PhantomData<fn() -> (R, S)>);

impl<R, S> Clone for RequestRoute<R, S> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<R, S> Copy for RequestRoute<R, S> {}

/// The route of requests of type `R` from side `S`.
pub const fn request<R: RequestFrom<S>, S: Sender>() -> RequestRoute<R, S> {
    RequestRoute(PhantomData)
}

impl<R: AcpRequest, S: Sender> RequestRoute<R, S> {
    /// Whether a message of `method` from `from` is this route's.
    pub fn matches(self, method: &str, from: Side) -> bool {
        from == S::SIDE && method == R::METHOD
    }

    /// Takes the message if it is this route's; gives it back otherwise, or when its params
    /// do not fit `R` (then it is marked rejected, and the role's fallback decides).
    pub fn take(self, mut message: Incoming) -> Result<(R, Reply), Incoming> {
        if !self.matches(&message.method, message.from) {
            return Err(message);
        }
        let Some(reply) = message.reply.take() else {
            return Err(message);
        };
        match parse::<R>(&mut message) {
            Some(request) => Ok((request, reply)),
            None => {
                message.reply = Some(reply);
                Err(message)
            }
        }
    }

    /// Answers with the handler's result.
    pub fn answer(self, reply: Reply, result: Result<R::Response, Error>) {
        reply.answer(result)
    }
}

/// The route of one notification handler.
pub struct NotificationRoute<N, S>(PhantomData<fn() -> (N, S)>);

impl<N, S> Clone for NotificationRoute<N, S> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<N, S> Copy for NotificationRoute<N, S> {}

/// The route of notifications of type `N` from side `S`.
pub const fn notification<N: NotificationFrom<S>, S: Sender>() -> NotificationRoute<N, S> {
    NotificationRoute(PhantomData)
}

impl<N: AcpNotification, S: Sender> NotificationRoute<N, S> {
    /// Whether a message of `method` from `from` is this route's.
    pub fn matches(self, method: &str, from: Side) -> bool {
        from == S::SIDE && method == N::METHOD
    }

    /// Takes the message if it is this route's (see [`RequestRoute::take`]).
    pub fn take(self, mut message: Incoming) -> Result<N, Incoming> {
        if !self.matches(&message.method, message.from) || message.reply.is_some() {
            return Err(message);
        }
        parse::<N>(&mut message).ok_or(message)
    }

    /// Logs the handler's error: notifications are never answered.
    pub fn finish(self, result: Result<(), Error>) {
        if let Err(e) = result {
            tracing::warn!(method = N::METHOD, error = %e, "notification handler failed");
        }
    }
}

fn parse<T: serde::de::DeserializeOwned>(message: &mut Incoming) -> Option<T> {
    let parsed = match &message.params {
        Some(params) => params.parse::<T>(),
        None => serde_json::from_str::<T>("{}").map_err(Error::from),
    };
    match parsed {
        Ok(value) => Some(value),
        Err(e) => {
            let e = Error::invalid_params(format!(
                "{} params do not fit the schema: {}",
                message.method, e.message
            ));
            tracing::warn!(error = %e, "a handled message does not parse");
            message.rejected = Some(e);
            None
        }
    }
}

/// What a role does with a message its handlers did not take after all.
pub trait Fallback {
    /// Forwards it (proxy) or answers it (agent).
    fn unhandled(&self, message: Incoming);
}

impl Fallback for Cx {
    fn unhandled(&self, message: Incoming) {
        if let Some(relay) = crate::proxy::runtime::forward(message, self) {
            self.spawn(relay.run());
        }
    }
}

impl Fallback for AgentCx {
    fn unhandled(&self, message: Incoming) {
        crate::agent::unhandled(message)
    }
}

/// The last rung of a generated `dispatch`.
pub fn unhandled<C: Fallback>(message: Incoming, cx: &C) {
    cx.unhandled(message)
}
