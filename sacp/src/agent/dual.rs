//! An agent that speaks ACP v1 and v2 with a handler set for each.

use super::{Agent, Cx, runtime};
use crate::acp::Side;
use crate::runtime::Incoming;

/// An agent that speaks v1 and v2: `V1` (an agent of v1) serves the connections that
/// negotiate 1, `V2` (one of `#[sacp::agent(protocol = 2)]`) those that negotiate 2. The
/// runtime picks at `initialize` (the highest at or below the client's), and from then on each
/// message goes to that side's handlers only: a v2 connection never reaches a v1 handler, and
/// what a side has no handler for is answered as for any agent (`-32601`).
///
/// ```no_run
/// use sacp::acp::{self, v2};
/// use sacp::agent::{Cx, Dual};
///
/// struct Old;
/// #[sacp::agent]
/// impl Old {
///     #[on_request]
///     async fn prompt(&self, _: acp::PromptRequest, _: &Cx) -> sacp::Result<acp::PromptResponse> {
///         Ok(acp::PromptResponse::new(acp::StopReason::EndTurn))
///     }
/// }
///
/// struct New;
/// #[sacp::agent(protocol = 2)]
/// impl New {
///     #[on_request]
///     async fn prompt(&self, req: v2::PromptRequest, cx: &Cx) -> sacp::Result<v2::PromptResponse> {
///         cx.run_turn(req, |_turn| async { Ok(v2::IdleStateUpdateKind::EndTurn) })
///     }
/// }
///
/// # async fn run() -> sacp::Result<()> {
/// sacp::agent::serve_stdio(Dual::new(Old, New)).await
/// # }
/// ```
#[derive(Debug, Default)]
pub struct Dual<V1, V2> {
    /// The handlers of v1 connections.
    pub v1: V1,
    /// The handlers of v2 connections.
    pub v2: V2,
}

impl<V1: Agent, V2: Agent> Dual<V1, V2> {
    /// `v1` for the connections that negotiate 1, `v2` for those that negotiate 2.
    pub fn new(v1: V1, v2: V2) -> Self {
        const {
            assert!(
                speaks_only(V1::PROTOCOLS, 1),
                "the first agent of a `Dual` speaks ACP v1 only"
            );
            assert!(
                speaks_only(V2::PROTOCOLS, 2),
                "the second agent of a `Dual` speaks ACP v2 only: `#[sacp::agent(protocol = 2)]`"
            );
        }
        Dual { v1, v2 }
    }

    fn side(cx: &Cx) -> u16 {
        cx.protocol().unwrap_or(1)
    }
}

const fn speaks_only(protocols: &[u16], version: u16) -> bool {
    protocols.len() == 1 && protocols[0] == version
}

impl<V1: Agent, V2: Agent> Agent for Dual<V1, V2> {
    const MCP_OVER_ACP: bool = V1::MCP_OVER_ACP || V2::MCP_OVER_ACP;
    const PROTOCOLS: &'static [u16] = &[1, 2];
    const INFO: (&'static str, &'static str) = V2::INFO;

    fn takes(method: &str, from: Side) -> bool {
        V1::takes(method, from) || V2::takes(method, from)
    }

    fn takes_in(version: u16, method: &str, from: Side) -> bool {
        match version {
            2 => V2::takes(method, from),
            _ => V1::takes(method, from),
        }
    }

    async fn dispatch(&self, message: Incoming, cx: &Cx) {
        let (method, from) = (message.method(), message.from());
        let version = Dual::<V1, V2>::side(cx);
        if !Self::takes_in(version, method, from) {
            runtime::unhandled(message);
        } else if version == 2 {
            self.v2.dispatch(message, cx).await
        } else {
            self.v1.dispatch(message, cx).await
        }
    }
}
