//! Where the bridges and the translator sit in the chain, and what goes to them instead of its
//! target: the conductor's [`Diversion`], plugged into the routing table at start.
//!
//! - The **bridges** ([`BRIDGES`]) speak as the agent: what they send travels up from the
//!   agent's position, and the owner's `_mcp/request` and `_mcp/notification` for a connection
//!   they opened come to them rather than to the agent. They learn those connections from the
//!   answers to their `_mcp/connect`s.
//! - The **translator** ([`TRANSLATOR`]) speaks to the agent as the provider it stands in for.
//!   It gets the agent's side's `_mcp/connect` for an RFD server (and the `_mcp/*` on the
//!   connection it opened), and an RFD agent's `mcp/message` for a server lent to it that went
//!   up the whole chain unserved. An RFD provider's `mcp/message` notifications to an agent
//!   that does not speak the RFD go to the bridges' connection, whose hub carries the
//!   translator's stateless calls.
//!
//! Nothing is diverted in proxy mode: the last component's successor is then another
//! conductor, whose own bridges serve its agent.

use std::collections::HashSet;

use sacp::jsonrpc::RawJson;
use sacp::protocol::mcp;
use sacp::protocol::routing::{Dir, Diversion, Passing, RoutingTable, Seat};
use serde_json::{Map, Value};

/// The bridges' connection, the diversion's first.
pub(crate) const BRIDGES: usize = 0;
/// The translator's connection, after the bridges'.
pub(crate) const TRANSLATOR: usize = 1;

/// The MCP connections the bridges and the translator hold, as the routing table's traffic
/// shows them.
#[derive(Debug, Default)]
pub(crate) struct McpDiversion {
    /// The MCP connections the bridges opened.
    bridged: HashSet<String>,
    /// The MCP connections the translator opened for the agent's side (to RFD servers).
    translated: HashSet<String>,
}

impl Diversion for McpDiversion {
    fn conns(&self) -> usize {
        2
    }

    fn seat(&self, k: usize) -> Seat {
        if k == TRANSLATOR {
            Seat::BesideAgent
        } else {
            Seat::AsAgent
        }
    }

    fn divert(&self, p: &Passing<'_>, chain: &RoutingTable) -> Option<usize> {
        if chain.proxy_mode() {
            return None;
        }
        let agent = chain.agent_conn();
        if p.dir == Dir::Down && p.to == agent {
            let bridged = (p.method == mcp::REQUEST || p.method == mcp::NOTIFICATION)
                && !self.bridged.is_empty()
                && mcp::connection_of(p.params).is_some_and(|id| self.bridged.contains(&id));
            let rfd_note = !p.request
                && p.method == mcp::RFD_MESSAGE
                && chain.agent_mcp().is_some_and(|a| !a.rfd);
            return (bridged || rfd_note).then_some(BRIDGES);
        }
        if p.dir != Dir::Up {
            return None;
        }
        // The agent's side's connections to RFD servers: at once, from the agent's position.
        let translated = p.from == agent
            && match p.method {
                mcp::CONNECT => p
                    .params
                    .and_then(|p| p.parse::<mcp::ConnectParams>().ok())
                    .is_some_and(|c| chain.rfd_server_id(&c.acp_url).is_some()),
                mcp::REQUEST | mcp::NOTIFICATION | mcp::DISCONNECT => {
                    !self.translated.is_empty()
                        && mcp::connection_of(p.params)
                            .is_some_and(|id| self.translated.contains(&id))
                }
                _ => false,
            };
        // An RFD agent's call that no proxy served, for a server it was lent.
        let unserved = p.to == 0
            && p.request
            && p.method == mcp::RFD_MESSAGE
            && p.params
                .and_then(|p| p.parse::<mcp::RfdMessage>().ok())
                .is_some_and(|m| chain.lent_to_rfd_agent(&m.server_id));
        (translated || unserved).then_some(TRANSLATOR)
    }

    /// An `_mcp/connect` on its way to the translator learns the RFD server id of its `acp:`
    /// URL (`server_id`, next to the URL).
    fn on_the_way(&self, k: usize, p: &Passing<'_>, chain: &RoutingTable) -> Option<RawJson> {
        if k != TRANSLATOR || p.method != mcp::CONNECT {
            return None;
        }
        let mut params: Map<String, Value> = p.params?.parse().ok()?;
        let id = params
            .get("acp_url")
            .and_then(Value::as_str)
            .and_then(|url| chain.rfd_server_id(url))?
            .to_owned();
        params.insert("server_id".to_owned(), Value::String(id));
        RawJson::to_raw(&params).ok()
    }

    fn answered(
        &mut self,
        method: &str,
        asked: Option<usize>,
        answered: Option<usize>,
        result: &RawJson,
    ) {
        if method != mcp::CONNECT {
            return;
        }
        let Ok(connected) = result.parse::<mcp::ConnectResult>() else {
            return;
        };
        if answered == Some(TRANSLATOR) {
            self.translated.insert(connected.connection_id.clone());
        }
        if asked == Some(BRIDGES) {
            self.bridged.insert(connected.connection_id);
        }
    }

    fn notified(&mut self, p: &Passing<'_>, from: Option<usize>, to: Option<usize>) {
        if p.method != mcp::DISCONNECT {
            return;
        }
        let Some(id) = mcp::connection_of(p.params) else {
            return;
        };
        if from == Some(BRIDGES) {
            self.bridged.remove(&id);
        }
        if to == Some(TRANSLATOR) {
            self.translated.remove(&id);
        }
    }

    fn translates_rfd(&self) -> bool {
        true
    }
}

#[cfg(test)]
#[path = "diversion_tests.rs"]
mod tests;
