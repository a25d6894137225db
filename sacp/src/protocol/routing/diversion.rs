//! The one seam through which a driver plugs connections of its own into a chain: a
//! [`Diversion`] serves connections numbered after the components', speaks on them from a
//! seat in the chain, and takes messages that would otherwise go to their target.
//!
//! The conductor plugs in its MCP bridges (which speak for an agent that knows nothing of
//! `acp:` URLs) and its MCP translator (which stands in for a provider of MCP over ACP in a
//! form its caller does not speak). `sacp::testing`'s chain plugs in nothing: its routing
//! table has the editor's connection and the components', and no other.

use std::fmt;

use crate::jsonrpc::RawJson;

use super::{Dir, RoutingTable};

/// Where what a diversion sends on one of its connections travels from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Seat {
    /// As the agent: up the chain from the agent's position (the MCP bridges, which call
    /// the proxies' servers on the agent's behalf). It sends no successor envelope.
    AsAgent,
    /// As the agent's neighbour: down to the agent (the MCP translator, which answers the
    /// agent in place of a provider). It sends no successor envelope.
    BesideAgent,
}

/// A request or notification on its way, unwrapped, as a [`Diversion`] is shown it.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Passing<'a> {
    /// The position it comes from (`0`: the editor; `n + 1`: the outer conductor).
    pub from: usize,
    /// The position it goes to.
    pub to: usize,
    /// Which way it travels.
    pub dir: Dir,
    /// Its method.
    pub method: &'a str,
    /// Its params.
    pub params: Option<&'a RawJson>,
    /// Whether it is a request.
    pub request: bool,
}

/// Connections a driver serves itself, plugged into a chain's routing table with
/// [`RoutingTable::plug`]. Its connection `k` is the table's connection `n + 1 + k`, where
/// `n` is the number of components: [`Delivery`](super::Delivery)s on them are the
/// driver's to carry, and what arrives on them goes to
/// [`ChainCore::inbound`](super::ChainCore::inbound) like any other connection's.
///
/// The table keeps the ids on these connections as on any other (requests to them get the
/// table's ids; their answers come back to whoever asked); a diversion only says where
/// things go.
pub trait Diversion: Send + fmt::Debug {
    /// How many connections it serves.
    fn conns(&self) -> usize;

    /// Where what arrives on its connection `k` travels from.
    fn seat(&self, k: usize) -> Seat;

    /// The connection of its own that `passing` goes to instead of its target's, if any.
    /// `chain` says what the chain knows (the agent's MCP, the RFD servers declared).
    fn divert(&self, passing: &Passing<'_>, chain: &RoutingTable) -> Option<usize>;

    /// A request on its way to its connection `k`: its params, rewritten, when they need to
    /// be (`None`: as they are).
    fn on_the_way(&self, k: usize, passing: &Passing<'_>, chain: &RoutingTable) -> Option<RawJson> {
        let _ = (k, passing, chain);
        None
    }

    /// A request's successful answer passed, when the request came from one of its
    /// connections (`asked`) or went to one (`answered`).
    fn answered(
        &mut self,
        method: &str,
        asked: Option<usize>,
        answered: Option<usize>,
        result: &RawJson,
    ) {
        let _ = (method, asked, answered, result);
    }

    /// A notification passed, when it came from one of its connections (`from`) or goes to
    /// one (`to`).
    fn notified(&mut self, passing: &Passing<'_>, from: Option<usize>, to: Option<usize>) {
        let _ = (passing, from, to);
    }

    /// Whether it stands in for the RFD's MCP servers (`{"type": "acp"}`) for an agent that
    /// does not speak the RFD's MCP over ACP: then such an agent is shown them as `acp:` URLs,
    /// and an RFD agent's call that no proxy served is its to take rather than an error.
    fn translates_rfd(&self) -> bool {
        false
    }
}

impl<'a> Passing<'a> {
    pub(super) fn of(resolved: &'a super::Resolved, request: bool) -> Passing<'a> {
        Passing {
            from: resolved.from,
            to: resolved.to,
            dir: resolved.dir,
            method: &resolved.method,
            params: resolved.params.as_ref(),
            request,
        }
    }
}
