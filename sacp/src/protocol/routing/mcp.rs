//! The router's part in MCP over ACP (spec §4): what the agent can do, where the conductor's
//! own MCP bridges sit, and which `_mcp/*` messages go to them instead of the agent.
//!
//! A conductor's bridges (the `sacp-chain` crate's) speak for an agent that knows nothing of `acp:` URLs: they
//! are one more connection of the router, [`RoutingTable::bridge_conn`], that sends and receives as if
//! it were the agent — what it sends travels up from the agent's position, and the owner's
//! `_mcp/request` and `_mcp/notification` for a connection it opened come to it rather than to
//! the agent. It learns those connections from the answers to its `_mcp/connect`s.

use serde::Deserialize;

use crate::jsonrpc::RawJson;
use crate::protocol::mcp;

use super::{Conn, Dir, RoutingTable};

/// What the agent said of MCP in its `initialize` result.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AgentMcp {
    /// `_meta.mcp_acp_transport: true`: it speaks `_mcp/*` itself.
    pub native: bool,
    /// `agentCapabilities.mcpCapabilities.http: true`: it can reach MCP servers over HTTP.
    pub http: bool,
    /// `agentCapabilities.mcpCapabilities.acp: true`: it speaks ACP's RFD MCP over ACP
    /// (`{"type": "acp"}` entries, stateless `mcp/message`).
    pub rfd: bool,
}

impl AgentMcp {
    /// Reads an agent's `initialize` result.
    fn of(result: &RawJson) -> AgentMcp {
        #[derive(Deserialize, Default)]
        #[serde(rename_all = "camelCase")]
        struct Result {
            #[serde(rename = "_meta", default)]
            meta: Option<serde_json::Map<String, serde_json::Value>>,
            #[serde(default)]
            agent_capabilities: Option<Capabilities>,
        }
        #[derive(Deserialize, Default)]
        #[serde(rename_all = "camelCase")]
        struct Capabilities {
            #[serde(default)]
            mcp_capabilities: Option<McpCapabilities>,
        }
        #[derive(Deserialize, Default)]
        struct McpCapabilities {
            #[serde(default)]
            http: Option<bool>,
            #[serde(default)]
            acp: Option<bool>,
        }
        let parsed: Result = result.parse().unwrap_or_default();
        let mcp = parsed
            .agent_capabilities
            .and_then(|c| c.mcp_capabilities)
            .unwrap_or_default();
        AgentMcp {
            native: parsed
                .meta
                .and_then(|m| m.get(mcp::TRANSPORT_CAPABILITY).cloned())
                == Some(serde_json::Value::Bool(true)),
            http: mcp.http.unwrap_or(false),
            rfd: mcp.acp.unwrap_or(false),
        }
    }
}

/// An `initialize` result that says whether its sender speaks MCP over ACP (spec §4: the
/// conductor says so to every proxy, and bridges for an agent that does not).
pub(super) fn with_transport_as(
    result: RawJson,
    speaks: bool,
) -> Result<RawJson, crate::jsonrpc::Error> {
    use serde_json::{Map, Value};
    let mut value: Map<String, Value> = result.parse()?;
    let said = value
        .get("_meta")
        .and_then(|m| m.get(mcp::TRANSPORT_CAPABILITY))
        .is_some();
    if !speaks && !said {
        return Ok(result);
    }
    if let Value::Object(meta) = value
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()))
    {
        if speaks {
            meta.insert(mcp::TRANSPORT_CAPABILITY.into(), Value::Bool(true));
        } else {
            meta.shift_remove(mcp::TRANSPORT_CAPABILITY);
        }
    }
    if value
        .get("_meta")
        .is_some_and(|m| m.as_object().is_some_and(Map::is_empty))
    {
        value.shift_remove("_meta");
    }
    RawJson::to_raw(&value)
}

impl RoutingTable {
    /// The connection of the conductor's MCP bridges (after the components').
    pub fn bridge_conn(&self) -> Conn {
        self.n() + 1
    }

    /// What the agent said of MCP, once it answered `initialize` (never in proxy mode, where
    /// the last component's successor is another conductor).
    pub fn agent_mcp(&self) -> Option<AgentMcp> {
        self.agent_mcp
    }

    /// Notes the agent's `initialize` result.
    pub(super) fn note_agent_initialize(&mut self, position: usize, result: &RawJson) {
        if position == self.n() && !self.proxy_mode {
            self.agent_mcp = Some(AgentMcp::of(result));
        }
    }

    /// Notes the answer to a bridge's `_mcp/connect`: the connection is the bridge's.
    pub(super) fn note_bridge_connect(&mut self, result: &RawJson) {
        if let Ok(connected) = result.parse::<mcp::ConnectResult>() {
            self.bridged.insert(connected.connection_id);
        }
    }

    /// Notes a bridge's `_mcp/disconnect`.
    pub(super) fn note_bridge_disconnect(&mut self, params: Option<&RawJson>) {
        if let Some(id) = mcp::connection_of(params) {
            self.bridged.remove(&id);
        }
    }

    /// The connection a message travelling `dir` to `to` goes out on: the bridges', for the
    /// owner's messages to a connection a bridge opened; `conn` otherwise.
    pub(super) fn divert(
        &self,
        conn: Conn,
        to: usize,
        dir: Dir,
        method: &str,
        params: Option<&RawJson>,
    ) -> Conn {
        let for_agent = dir == Dir::Down && to == self.n() && !self.proxy_mode;
        if for_agent
            && !self.bridged.is_empty()
            && (method == mcp::REQUEST || method == mcp::NOTIFICATION)
            && mcp::connection_of(params).is_some_and(|id| self.bridged.contains(&id))
        {
            self.bridge_conn()
        } else {
            conn
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_the_agent_says_of_mcp() {
        let raw = |s: &str| RawJson::from_string(s).unwrap();
        assert_eq!(
            AgentMcp::of(&raw(
                r#"{"protocolVersion":1,"_meta":{"mcp_acp_transport":true}}"#
            )),
            AgentMcp {
                native: true,
                ..AgentMcp::default()
            }
        );
        assert_eq!(
            AgentMcp::of(&raw(
                r#"{"agentCapabilities":{"mcpCapabilities":{"http":true,"sse":false}}}"#
            )),
            AgentMcp {
                http: true,
                ..AgentMcp::default()
            }
        );
        assert_eq!(
            AgentMcp::of(&raw(
                r#"{"agentCapabilities":{"mcpCapabilities":{"acp":true}}}"#
            )),
            AgentMcp {
                rfd: true,
                ..AgentMcp::default()
            }
        );
        assert_eq!(AgentMcp::of(&raw("[]")), AgentMcp::default());
    }
}
