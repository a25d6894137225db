//! What the proxy and agent runtimes share, below both (crate-private).
//!
//! - [`HandlerSet`] (`handlers.rs`): a proxy's or an agent's set of `&self` handlers, the
//!   [`Context`] its handlers get with the role's one default path, and [`schedule`], the one
//!   rule that turns each received message into lane work;
//! - the lanes of each side (`lane.rs`): [`Side`](crate::acp::Side) is the runtimes' lane type;
//! - [`Incoming`] and [`Reply`] (`incoming.rs`): a message on its way to the handlers, and the
//!   answer to it, with a finishing hook the role sets;
//! - [`Neighbour`] and [`Neighbours`] (`neighbour.rs`): the handles to a component's client
//!   and successor, over its one connection, with one send primitive;
//! - [`AfterAnswer`] (`after.rs`): the work a request handler leaves for after its answer
//!   (both roles' `Cx::after_answer`);
//! - [`spawn`] and [`builder`]: the one entry point both roles' `serve` functions go through,
//!   and the connection settings they start from ([`EOF_GRACE`]).

mod after;
mod content;
mod handlers;
mod incoming;
mod lane;
mod neighbour;

use std::time::Duration;

pub(crate) use self::after::AfterAnswer;
pub(crate) use self::content::Adapter;
pub use self::handlers::Context;
pub(crate) use self::handlers::{HandlerSet, schedule};
pub use self::incoming::{Incoming, Reply};
pub use self::neighbour::Neighbour;
pub(crate) use self::neighbour::{MessageKind, Neighbours};

use crate::jsonrpc::{Builder, Connection, Handler, Transport};

/// How long the requests still being handled get when the peer closes the connection.
pub(crate) const EOF_GRACE: Duration = Duration::from_millis(250);

/// The connection settings a role runs with by default: the peer is named `peer`, and
/// requests get [`EOF_GRACE`] once the peer closes the connection.
pub(crate) fn builder(peer: &str) -> Builder {
    Connection::builder().name(peer).eof_grace(Some(EOF_GRACE))
}

/// Starts a role's connection handler on `transport`.
pub(crate) fn spawn<H: Handler>(
    handler: H,
    transport: impl Transport,
    builder: Builder,
) -> Connection {
    builder.spawn(transport, handler)
}
