//! The routes of a generated `dispatch`: what the code `#[sacp::proxy]` and `#[sacp::agent]`
//! write calls, one route per handler, and the impls of the route traits for every ACP message
//! type (from the schema's method tables: the typed `acp` module knows nothing of them).
//!
//! Each handler's message type is asked, through one of four traits (request or notification,
//! from the client or the agent), whether a method and side are its own (`matches`), to take
//! the message, and to answer with the handler's result. A type that is not an ACP message of
//! that side fails the same bound at the same span each time, so the compiler reports it once,
//! at the type, with the trait's advice. The ladder ends in [`unhandled`]: the role's one
//! default path, the same the runtime takes for messages no handler takes.

#![allow(missing_debug_implementations)]
// A message that is not a rung's goes back by value to the next rung; boxing it would cost an
// allocation per message for a move of a few hundred bytes.
#![allow(clippy::result_large_err)]

use crate::acp::{AcpNotification, AcpRequest, Side};
use crate::jsonrpc::{Error, JsonRpcRequest, RawJson};
use crate::runtime::{Context, Incoming, Reply};

/// A request the client sends: `#[on_request]` / `#[on_request(from = client)]`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an ACP request that the client sends",
    label = "not a request from the client",
    note = "`#[on_request]` takes a request type from `sacp::acp` that the client sends (e.g. \
            `PromptRequest`); a request the agent sends (e.g. `RequestPermissionRequest`) needs \
            `#[on_request(from = agent)]` in a `#[proxy]`"
)]
pub trait RequestFromClient: AcpRequest {
    /// The ACP version whose schema defines the message (a `#[sacp::proxy]` or
    /// `#[sacp::agent]` checks its handlers against the versions it declares).
    const VERSION: u16;

    /// The handler's result type (the request's response), named through this trait so that
    /// a wrong message type is reported once, as this trait's error.
    type Response: serde::Serialize;

    /// Writes the handler's result (see [`JsonRpcRequest::write_response`]).
    fn write_response(response: &<Self as RequestFromClient>::Response) -> Result<RawJson, Error>;

    /// Whether a message of `method` from `from` is this handler's.
    fn matches(method: &str, from: Side) -> bool {
        from == Side::Client && method == Self::METHOD
    }

    /// Takes the message if it is this handler's (see [`take_request`]).
    #[allow(clippy::type_complexity)]
    fn take(
        message: Incoming,
    ) -> Result<(Self, TypedReply<<Self as RequestFromClient>::Response>), Incoming> {
        take_request(message, Side::Client, Self::VERSION).map(|(request, reply)| {
            (
                request,
                TypedReply::new(reply, <Self as RequestFromClient>::write_response),
            )
        })
    }
}

/// A request the agent sends: `#[on_request(from = agent)]`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an ACP request that the agent sends",
    label = "not a request from the agent",
    note = "`#[on_request(from = agent)]` takes a request type from `sacp::acp` that the agent \
            sends (e.g. `RequestPermissionRequest`); a request the client sends (e.g. \
            `PromptRequest`) needs `#[on_request]`"
)]
pub trait RequestFromAgent: AcpRequest {
    /// The ACP version whose schema defines the message (a `#[sacp::proxy]` or
    /// `#[sacp::agent]` checks its handlers against the versions it declares).
    const VERSION: u16;

    /// The handler's result type (the request's response), named through this trait so that
    /// a wrong message type is reported once, as this trait's error.
    type Response: serde::Serialize;

    /// Writes the handler's result (see [`JsonRpcRequest::write_response`]).
    fn write_response(response: &<Self as RequestFromAgent>::Response) -> Result<RawJson, Error>;

    /// Whether a message of `method` from `from` is this handler's.
    fn matches(method: &str, from: Side) -> bool {
        from == Side::Agent && method == Self::METHOD
    }

    /// Takes the message if it is this handler's (see [`take_request`]).
    #[allow(clippy::type_complexity)]
    fn take(
        message: Incoming,
    ) -> Result<(Self, TypedReply<<Self as RequestFromAgent>::Response>), Incoming> {
        take_request(message, Side::Agent, Self::VERSION).map(|(request, reply)| {
            (
                request,
                TypedReply::new(reply, <Self as RequestFromAgent>::write_response),
            )
        })
    }
}

/// A notification the client sends: `#[on_notification]`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an ACP notification that the client sends",
    label = "not a notification from the client",
    note = "`#[on_notification]` takes a notification type from `sacp::acp` that the client \
            sends (e.g. `CancelNotification`); one the agent sends (e.g. \
            `SessionNotification`) needs `#[on_notification(from = agent)]` in a `#[proxy]`"
)]
pub trait NotificationFromClient: AcpNotification {
    /// The ACP version whose schema defines the message (a `#[sacp::proxy]` or
    /// `#[sacp::agent]` checks its handlers against the versions it declares).
    const VERSION: u16;

    /// Whether a message of `method` from `from` is this handler's.
    fn matches(method: &str, from: Side) -> bool {
        from == Side::Client && method == Self::METHOD
    }

    /// Takes the message if it is this handler's (see [`take_notification`]).
    fn take(message: Incoming) -> Result<Self, Incoming> {
        take_notification(message, Side::Client, Self::VERSION)
    }

    /// Logs the handler's error: notifications are never answered.
    fn finish<E: Into<Error>>(result: Result<(), E>) {
        finish_notification(Self::METHOD, result.map_err(Into::into))
    }
}

/// A notification the agent sends: `#[on_notification(from = agent)]`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an ACP notification that the agent sends",
    label = "not a notification from the agent",
    note = "`#[on_notification(from = agent)]` takes a notification type from `sacp::acp` that \
            the agent sends (e.g. `SessionNotification`); one the client sends (e.g. \
            `CancelNotification`) needs `#[on_notification]`"
)]
pub trait NotificationFromAgent: AcpNotification {
    /// The ACP version whose schema defines the message (a `#[sacp::proxy]` or
    /// `#[sacp::agent]` checks its handlers against the versions it declares).
    const VERSION: u16;

    /// Whether a message of `method` from `from` is this handler's.
    fn matches(method: &str, from: Side) -> bool {
        from == Side::Agent && method == Self::METHOD
    }

    /// Takes the message if it is this handler's (see [`take_notification`]).
    fn take(message: Incoming) -> Result<Self, Incoming> {
        take_notification(message, Side::Agent, Self::VERSION)
    }

    /// Logs the handler's error: notifications are never answered.
    fn finish<E: Into<Error>>(result: Result<(), E>) {
        finish_notification(Self::METHOD, result.map_err(Into::into))
    }
}

/// The answer to a request, typed by the handler's response: a handler whose result does not
/// fit is reported at its return type.
pub struct TypedReply<T> {
    reply: Reply,
    /// How the result is written: keeping what it was read from, for an ACP response the
    /// handler got from its successor and returns.
    write: fn(&T) -> Result<RawJson, Error>,
}

impl<T: serde::Serialize> TypedReply<T> {
    fn new(reply: Reply, write: fn(&T) -> Result<RawJson, Error>) -> Self {
        TypedReply { reply, write }
    }

    /// Answers with the handler's result.
    pub fn answer<E: Into<Error>>(self, result: Result<T, E>) {
        let write = self.write;
        self.reply
            .answer_raw(result.map_err(Into::into).and_then(|value| write(&value)))
    }
}

/// Takes a request of type `R` (of ACP `version`) from `side`; gives the message back if it
/// is not one — another method, or a connection that speaks another version — or when its
/// params do not fit `R` (then it is marked rejected, and the role's default path decides).
pub fn take_request<R: AcpRequest>(
    mut message: Incoming,
    side: Side,
    version: u16,
) -> Result<(R, Reply), Incoming> {
    if message.from != side || message.method != R::METHOD || !message.speaks(version) {
        return Err(message);
    }
    let Some(reply) = message.reply.take() else {
        return Err(message);
    };
    match parse(&mut message, R::read) {
        Some(request) => Ok((request, reply)),
        None => {
            message.reply = Some(reply);
            Err(message)
        }
    }
}

/// Takes a notification of type `N` from `side` (see [`take_request`]).
pub fn take_notification<N: AcpNotification>(
    mut message: Incoming,
    side: Side,
    version: u16,
) -> Result<N, Incoming> {
    if message.from != side
        || message.method != N::METHOD
        || message.reply.is_some()
        || !message.speaks(version)
    {
        return Err(message);
    }
    parse(&mut message, N::read).ok_or(message)
}

fn finish_notification(method: &str, result: Result<(), Error>) {
    if let Err(e) = result {
        tracing::warn!(%method, error = %e, "notification handler failed");
    }
}

fn parse<T>(message: &mut Incoming, read: fn(Option<RawJson>) -> Result<T, Error>) -> Option<T> {
    // A clone of the params is a reference count, not a copy.
    match read(message.params.clone()) {
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

/// The last route of a generated `dispatch`: the role's one default path.
pub async fn unhandled<C: Context>(message: Incoming, cx: &C) {
    cx.unhandled(message).await
}

/// The side that sends a message, from the schema's receiver; and the route trait for
/// handlers of it.
macro_rules! route {
    ($version:literal, request, Agent, $params:ty, $response:ty) => {
        impl RequestFromClient for $params {
            const VERSION: u16 = $version;
            type Response = $response;

            fn write_response(response: &$response) -> Result<RawJson, Error> {
                <$params as JsonRpcRequest>::write_response(response)
            }
        }
    };
    ($version:literal, request, Client, $params:ty, $response:ty) => {
        impl RequestFromAgent for $params {
            const VERSION: u16 = $version;
            type Response = $response;

            fn write_response(response: &$response) -> Result<RawJson, Error> {
                <$params as JsonRpcRequest>::write_response(response)
            }
        }
    };
    ($version:literal, notification, Agent, $params:ty) => {
        impl NotificationFromClient for $params {
            const VERSION: u16 = $version;
        }
    };
    ($version:literal, notification, Client, $params:ty) => {
        impl NotificationFromAgent for $params {
            const VERSION: u16 = $version;
        }
    };
    // `$/cancel_request` is handled by every connection itself: no handler takes it.
    ($version:literal, notification, Protocol, $params:ty) => {};
    // The RFD's `proxy/*` methods (unstable schema) are the proxy runtime's own.
    ($version:literal, request, Protocol, $params:ty, $response:ty) => {};
}

macro_rules! route_requests {
    ($version:literal; $(($params:ty, $response:ty, $method:literal, $receiver:ident),)*) => {$(
        route!($version, request, $receiver, $params, $response);
    )*};
}

macro_rules! route_notifications {
    ($version:literal; $(($params:ty, $method:literal, $receiver:ident),)*) => {$(
        route!($version, notification, $receiver, $params);
    )*};
}

macro_rules! route_v1_requests {
    ($($table:tt)*) => { route_requests!(1; $($table)*); };
}

macro_rules! route_v1_notifications {
    ($($table:tt)*) => { route_notifications!(1; $($table)*); };
}

#[cfg(feature = "unstable_protocol_v2")]
macro_rules! route_v2_requests {
    ($($table:tt)*) => { route_requests!(2; $($table)*); };
}

#[cfg(feature = "unstable_protocol_v2")]
macro_rules! route_v2_notifications {
    ($($table:tt)*) => { route_notifications!(2; $($table)*); };
}

sacp_schema::for_each_acp_v1_request!(route_v1_requests);
sacp_schema::for_each_acp_v1_notification!(route_v1_notifications);
#[cfg(feature = "unstable_protocol_v2")]
sacp_schema::for_each_acp_v2_request!(route_v2_requests);
#[cfg(feature = "unstable_protocol_v2")]
sacp_schema::for_each_acp_v2_notification!(route_v2_notifications);

/// Whether `version` is one of `spoken`: what a handler's check asks at compile time.
pub const fn speaks(spoken: &[u16], version: u16) -> bool {
    let mut i = 0;
    while i < spoken.len() {
        if spoken[i] == version {
            return true;
        }
        i += 1;
    }
    false
}
