//! A set of handlers taking `&self` (a [`HandlerSet`]: a proxy's or an agent's), the context
//! its handlers get with the role's one default path ([`Context`]), and the one rule that
//! turns each message they receive into work for the connection's lanes ([`schedule`]).
//!
//! The connection hands every message over in arrival order (see [`crate::jsonrpc::Handler`]);
//! here each message meets one of three fates, in the lane of the side it came from:
//! - a **request** that a handler takes: its handler starts once the lane has dealt with what
//!   came before it, then runs in a task of its own for as long as it likes — awaiting the
//!   successor, the client, a timer — while everything else goes on;
//! - a **notification** that a handler takes: its handler runs in turn; the next message of the
//!   same side waits until it has finished, so notifications are handled in arrival order;
//! - anything **no handler takes** goes down the role's one default path in turn
//!   ([`Context::unhandled`]: a proxy forwards it unchanged, an agent answers `-32601`), the
//!   same path a handler's message takes when its params do not fit the handler's type. When
//!   nothing of its side is waiting and the outgoing queue has room, that happens at once, in
//!   the reader's call, without a task or an allocation: the path every streamed update of a
//!   pass-through proxy takes.
//!
//! Answers need no queue of their own: a handler's answer goes out when it returns, and
//! whatever it awaited from a peer was delivered only after everything that peer sent before
//! its response, and holds what the peer sent after it until the handler has acted on it (see
//! the `lanes` and `hold` modules of `jsonrpc`). So a prompt handler's answer is never
//! overtaken, transformed or not, and never overtakes.
//!
//! Messages are sorted into lanes by the side they come from ([`Side`] is the lane type).

use std::future::Future;
use std::sync::Arc;

use super::incoming::Incoming;
use crate::acp::Side;
use crate::jsonrpc::{BoxFuture, Connection, Work};

/// A set of handlers: a proxy's or an agent's.
pub(crate) trait HandlerSet: Send + Sync + 'static {
    /// What each handler gets.
    type Cx: Context;

    /// Whether [`HandlerSet::dispatch`] handles messages of `method` from `from`.
    fn takes(method: &str, from: Side) -> bool;

    /// Runs the handler of a message that [`HandlerSet::takes`].
    fn dispatch(&self, message: Incoming, cx: &Self::Cx) -> impl Future<Output = ()> + Send;
}

/// What a role's handlers get ([`proxy::Cx`](crate::proxy::Cx), [`agent::Cx`](crate::agent::Cx)),
/// with the role's one default path for a message no handler takes (or whose params its
/// handler's type rejected): a proxy forwards it unchanged, an agent answers `-32601` (or the
/// rejection).
pub trait Context: Clone + Send + Sync + 'static {
    /// Takes `message` down the default path.
    #[doc(hidden)]
    fn unhandled(&self, message: Incoming) -> impl Future<Output = ()> + Send;

    /// The same, at once, when that needs no waiting (the outgoing queue has room); gives the
    /// message back otherwise.
    #[doc(hidden)]
    #[allow(clippy::result_large_err)]
    fn unhandled_now(&self, message: Incoming) -> Result<(), Incoming>;
}

/// The work for one message, per the rule in the module docs.
///
/// The work is boxed: a handler's future can be kilobytes (a pass-through proxy's: 1.8 KB), and
/// work holding it unboxed was copied several times on the way to its lane for every message,
/// even the ones forwarded at once with no work at all (the lane boxes the work anyway).
pub(crate) fn schedule<H: HandlerSet>(
    handlers: &Arc<H>,
    message: Incoming,
    cx: H::Cx,
    conn: &Connection,
) -> Work<BoxFuture, Side> {
    let lane = message.from;
    if !H::takes(&message.method, message.from) {
        // Nothing of this side waits: forward (or answer) it right here, without a task.
        let message = if conn.lane_is_idle(lane) {
            match cx.unhandled_now(message) {
                Ok(()) => return Work::done(lane),
                Err(message) => message,
            }
        } else {
            message
        };
        let work: BoxFuture = Box::pin(async move { cx.unhandled(message).await });
        return Work::in_turn(work, lane);
    }
    let request = message.is_request();
    let handlers = handlers.clone();
    let work: BoxFuture = Box::pin(async move { handlers.dispatch(message, &cx).await });
    if request {
        Work::start(work, lane)
    } else {
        Work::in_turn(work, lane)
    }
}
