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

/// The ACP methods whose `mcpServers` declare MCP servers.
const SESSION_SETUP: [&str; 3] = ["session/new", "session/load", "session/resume"];

impl RoutingTable {
    /// A session setup's `mcpServers` as the component at `to` can parse them: an S11 proxy
    /// cannot parse the RFD's `{"type": "acp", "name", "serverId"}` (it never answers such a
    /// `session/new`), so it gets `{"type": "http", "url": "acp:…"}` for them, and every hop
    /// after it gets the RFD's form back. `None` when nothing changes.
    pub(super) fn declarations_for(
        &mut self,
        to: usize,
        method: &str,
        params: Option<&RawJson>,
    ) -> Option<RawJson> {
        use serde_json::{Map, Value};
        if !SESSION_SETUP.contains(&method) || to == 0 || to > self.n() {
            return None;
        }
        let s11 = self.dialect(to) == crate::protocol::dialect::Dialect::S11 && self.is_proxy(to);
        // An agent that speaks the RFD's MCP over ACP (and not ours) gets the proxies' `acp:`
        // servers as RFD entries, the URL as the server id.
        let rfd_agent = to == self.n()
            && !self.proxy_mode
            && self.agent_mcp.is_some_and(|a| a.rfd && !a.native);
        if !s11 && !rfd_agent && self.rfd_servers.is_empty() {
            return None;
        }
        let mut value: Map<String, Value> = params?.parse().ok()?;
        let Some(Value::Array(servers)) = value.get_mut("mcpServers") else {
            return None;
        };
        let mut changed = false;
        for server in servers.iter_mut() {
            let field = |key: &str| server.get(key).and_then(Value::as_str).map(str::to_owned);
            match (
                field("type").as_deref(),
                field("name"),
                field("serverId"),
                field("url"),
            ) {
                (Some("acp"), Some(name), Some(id), _) if s11 => {
                    let url = if mcp::is_acp_url(&id) {
                        id.clone()
                    } else {
                        format!("{}{id}", mcp::SCHEME)
                    };
                    *server = serde_json::json!({"type": "http", "name": name, "url": url, "headers": []});
                    self.rfd_servers.insert(url, id);
                    changed = true;
                }
                (Some("http"), Some(name), _, Some(url)) if !s11 => {
                    if let Some(id) = self.rfd_servers.get(&url) {
                        *server = mcp::rfd_entry(&name, id);
                        changed = true;
                    } else if rfd_agent && mcp::is_acp_url(&url) {
                        *server = mcp::rfd_entry(&name, &url);
                        self.lent_to_rfd_agent.insert(url);
                        changed = true;
                    }
                }
                _ => {}
            }
        }
        if changed {
            RawJson::to_raw(&value).ok()
        } else {
            None
        }
    }

    /// MCP over ACP in the form of the hop a message makes: an S11 proxy carries MCP messages
    /// in `_mcp/message` (`connectionId`) where ours has `_mcp/request` and
    /// `_mcp/notification` (`connection_id`); what comes to it is put in its form, what comes
    /// from it down the chain in ours. `request`: whether the message is a request. `None`
    /// when nothing changes.
    pub(super) fn mcp_for_hop(
        &self,
        (from, to, dir): (usize, usize, Dir),
        request: bool,
        method: &str,
        params: Option<&RawJson>,
    ) -> Option<(String, Option<RawJson>)> {
        use crate::protocol::dialect::Dialect;
        let s11 = |p: usize| (1..=self.n()).contains(&p) && self.dialect(p) == Dialect::S11;
        match method {
            mcp::REQUEST | mcp::NOTIFICATION if dir == Dir::Up && s11(to) => {
                let message = mcp::MessageParams::parse(params).ok()?;
                let theirs =
                    mcp::S11Message::new(message.connection_id, message.method, message.params);
                Some((mcp::S11_MESSAGE.to_owned(), RawJson::to_raw(&theirs).ok()))
            }
            mcp::S11_MESSAGE if dir == Dir::Down && s11(from) => {
                // `connectionId` reads as `connection_id`; written back in ours.
                let message = mcp::MessageParams::parse(params).ok()?;
                let ours = if request {
                    mcp::REQUEST
                } else {
                    mcp::NOTIFICATION
                };
                Some((ours.to_owned(), RawJson::to_raw(&message).ok()))
            }
            _ => None,
        }
    }

    /// For an RFD agent's `mcp/message` that went up the whole chain unserved: the binding error
    /// when the server was a proxy's (given to the agent as an RFD entry) — that proxy does not
    /// serve the RFD's stateless form (an S11 proxy, say) — rather than the editor's "method not
    /// found". `None` for the editor's own servers, and in proxy mode.
    pub(super) fn unserved_for_rfd_agent(
        &self,
        to: usize,
        method: &str,
        params: Option<&RawJson>,
    ) -> Option<crate::jsonrpc::Error> {
        if to != 0
            || self.proxy_mode
            || method != mcp::RFD_MESSAGE
            || self.lent_to_rfd_agent.is_empty()
        {
            return None;
        }
        let message: mcp::RfdMessage = params?.parse().ok()?;
        self.lent_to_rfd_agent.contains(&message.server_id).then(|| {
            crate::jsonrpc::Error::new(
                mcp::RFD_SERVER_UNAVAILABLE,
                format!(
                    "MCP server {} is unavailable to this agent: the proxy that declared it does \
                     not serve ACP's stateless `mcp/message` (only `_mcp/*` connections), and the \
                     conductor cannot bridge the two",
                    message.server_id
                ),
            )
        })
    }

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
