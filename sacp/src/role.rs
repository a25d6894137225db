//! What the proxy and agent runtimes share: a set of handlers taking `&self` (a [`Role`]), and
//! the one rule that turns each message they receive into work for the connection's lanes.
//!
//! The connection hands every message over in arrival order (see [`crate::jsonrpc::Handler`]);
//! here each message meets one of three fates, in the lane of the side it came from:
//! - a **request** that a handler takes: its handler starts once the lane has dealt with what
//!   came before it, then runs in a task of its own for as long as it likes — awaiting the
//!   successor, the client, a timer — while everything else goes on;
//! - a **notification** that a handler takes: its handler runs in turn; the next message of the
//!   same side waits until it has finished, so notifications are handled in arrival order;
//! - anything **no handler takes** goes down the role's one default path in turn
//!   ([`Fallback::unhandled`]: a proxy forwards it unchanged, an agent answers `-32601`), the
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

use std::future::Future;
use std::sync::Arc;

use crate::acp::Side;
use crate::incoming::Incoming;
use crate::jsonrpc::BoxFuture;
use crate::jsonrpc::Dispatch;
use crate::ladder::Fallback;

/// The lane of what comes from the client side.
pub(crate) const CLIENT_LANE: usize = 0;
/// The lane of what comes from the successor (proxies only).
pub(crate) const AGENT_LANE: usize = 1;

/// The lane of the messages that come from `side`.
pub(crate) fn lane(side: Side) -> usize {
    match side {
        Side::Client => CLIENT_LANE,
        Side::Agent => AGENT_LANE,
    }
}

/// A set of handlers: a proxy's or an agent's.
pub(crate) trait Role: Send + Sync + 'static {
    type Cx: Fallback + Clone + Send + Sync + 'static;

    /// Whether [`Role::dispatch`] handles messages of `method` from `from`.
    fn takes(method: &str, from: Side) -> bool;

    /// Runs the handler of a message that [`Role::takes`].
    fn dispatch(&self, message: Incoming, cx: &Self::Cx) -> impl Future<Output = ()> + Send;
}

/// The work for one message, per the rule in the module docs.
///
/// The work is boxed: a handler's future can be kilobytes (a pass-through proxy's: 1.8 KB), and
/// a `Dispatch` holding it unboxed was copied several times on the way to its lane for every
/// message, even the ones forwarded at once with no work at all (the lane boxes the work
/// anyway).
pub(crate) fn dispatch<R: Role>(
    role: &Arc<R>,
    message: Incoming,
    cx: R::Cx,
) -> Dispatch<BoxFuture> {
    let lane = lane(message.from);
    if !R::takes(&message.method, message.from) {
        // Nothing of this side waits: forward (or answer) it right here, without a task.
        let message = if R::Cx::connection(&cx).lane_is_idle(lane) {
            match R::Cx::unhandled_now(message, &cx) {
                Ok(()) => return Dispatch::done().on_lane(lane),
                Err(message) => message,
            }
        } else {
            message
        };
        let work: BoxFuture = Box::pin(async move { R::Cx::unhandled(message, &cx).await });
        return Dispatch::in_turn(work).on_lane(lane);
    }
    let request = message.is_request();
    let role = role.clone();
    let work: BoxFuture = Box::pin(async move { role.dispatch(message, &cx).await });
    if request {
        Dispatch::start(work).on_lane(lane)
    } else {
        Dispatch::in_turn(work).on_lane(lane)
    }
}
