//! The routing table's part in MCP over ACP (spec §4): what the agent can do, the MCP server
//! declarations each hop can parse, and MCP messages in the form of each hop's dialect.
//!
//! Where the conductor's own MCP bridges and translator sit, and which messages go to them
//! instead of their target, is not the table's business: the conductor plugs them in as a
//! [`Diversion`](super::Diversion), which asks the table what it knows here (the agent's MCP,
//! the RFD servers declared, the servers lent to an RFD agent).

use serde::Deserialize;

use crate::jsonrpc::RawJson;
use crate::protocol::mcp;

use super::{Dir, RoutingTable};

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
    /// It answered ACP v2 (`protocolVersion` 2 or more): its MCP entries are v2's (a stdio one
    /// says `"type": "stdio"`), and `http` and `stdio` come from `capabilities.session.mcp`.
    pub v2: bool,
    /// v2's `capabilities.session.mcp.stdio`: it can run stdio MCP servers (every v1 agent can).
    pub stdio: bool,
}

impl AgentMcp {
    /// Reads an agent's `initialize` result.
    fn of(result: &RawJson) -> AgentMcp {
        #[derive(Deserialize, Default)]
        #[serde(rename_all = "camelCase")]
        struct Result {
            #[serde(default)]
            protocol_version: Option<serde_json::Value>,
            #[serde(rename = "_meta", default)]
            meta: Option<serde_json::Map<String, serde_json::Value>>,
            /// v1's.
            #[serde(default)]
            agent_capabilities: Option<Capabilities>,
            /// v2's.
            #[serde(default)]
            capabilities: Option<V2Capabilities>,
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
        #[derive(Deserialize, Default)]
        struct V2Capabilities {
            #[serde(default)]
            session: Option<V2Session>,
        }
        #[derive(Deserialize, Default)]
        struct V2Session {
            #[serde(default)]
            mcp: Option<V2Mcp>,
        }
        /// v2 says a transport is supported by giving its object (`{}`); `null` is not.
        #[derive(Deserialize, Default)]
        struct V2Mcp {
            #[serde(default)]
            http: Option<serde_json::Map<String, serde_json::Value>>,
            #[serde(default)]
            stdio: Option<serde_json::Map<String, serde_json::Value>>,
        }
        let parsed: Result = result.parse().unwrap_or_default();
        let native = parsed
            .meta
            .and_then(|m| m.get(mcp::TRANSPORT_CAPABILITY).cloned())
            == Some(serde_json::Value::Bool(true));
        let v2 = parsed
            .protocol_version
            .and_then(|v| v.as_u64())
            .is_some_and(|v| v >= 2);
        if v2 {
            let mcp = parsed
                .capabilities
                .and_then(|c| c.session)
                .and_then(|s| s.mcp)
                .unwrap_or_default();
            return AgentMcp {
                native,
                http: mcp.http.is_some(),
                rfd: false,
                v2,
                stdio: mcp.stdio.is_some(),
            };
        }
        let mcp = parsed
            .agent_capabilities
            .and_then(|c| c.mcp_capabilities)
            .unwrap_or_default();
        AgentMcp {
            native,
            http: mcp.http.unwrap_or(false),
            rfd: mcp.acp.unwrap_or(false),
            v2,
            stdio: true,
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
pub(super) const SESSION_SETUP: [&str; 3] = ["session/new", "session/load", "session/resume"];

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
        let agent = (to == self.n() && !self.proxy_mode)
            .then_some(self.agent_mcp)
            .flatten();
        // An agent that speaks the RFD's MCP over ACP (and not ours) gets the proxies' `acp:`
        // servers as RFD entries, the URL as the server id.
        let rfd_agent = agent.is_some_and(|a| a.rfd && !a.native);
        // One that does not gets RFD servers as `acp:` URLs, which the conductor's translator
        // serves (for the agent itself, or for the bridges that call them on its behalf).
        let translated_for = self.translating() && agent.is_some_and(|a| !a.rfd);
        // Who cannot parse `{"type": "acp"}`.
        let no_rfd_entries = s11 || translated_for;
        if !no_rfd_entries && !rfd_agent && self.rfd_servers.is_empty() {
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
                (Some("acp"), Some(name), Some(id), _) if no_rfd_entries => {
                    let url = if mcp::is_acp_url(&id) {
                        id.clone()
                    } else {
                        format!("{}{id}", mcp::SCHEME)
                    };
                    *server = serde_json::json!({"type": "http", "name": name, "url": url, "headers": []});
                    self.rfd_servers.insert(url, id);
                    changed = true;
                }
                (Some("http"), Some(name), _, Some(url)) if !no_rfd_entries => {
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

    /// For an RFD agent's `mcp/message` that went up the whole chain unserved, in a chain
    /// whose diversion does not translate (see
    /// [`Diversion::translates_rfd`](super::Diversion::translates_rfd)), or that has none (as
    /// `sacp::testing`'s): the binding error when the server was lent to it as an RFD entry —
    /// its provider does not serve the RFD's stateless form (an S11 proxy, say) — rather than
    /// the editor's "method not found".
    /// `None` for the editor's own RFD servers, and in proxy mode.
    pub(super) fn unserved_for_rfd_agent(
        &self,
        to: usize,
        method: &str,
        params: Option<&RawJson>,
    ) -> Option<crate::jsonrpc::Error> {
        if to != 0
            || self.proxy_mode
            || self.translating()
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
                     not serve ACP's stateless `mcp/message` (only `_mcp/*` connections), and this \
                     chain has no MCP translator to bridge the two",
                    message.server_id
                ),
            )
        })
    }

    /// What the agent said of MCP, once it answered `initialize` (never in proxy mode, where
    /// the last component's successor is another conductor).
    pub fn agent_mcp(&self) -> Option<AgentMcp> {
        self.agent_mcp
    }

    /// Whether an `initialize` is on its way to the agent, or the agent's answer to it is
    /// (until then, [`RoutingTable::agent_mcp`] cannot say what the agent speaks).
    pub fn agent_initializing(&self) -> bool {
        !self.proxy_mode && self.agent_inits > 0
    }

    /// Notes the agent's `initialize` result.
    pub(super) fn note_agent_initialize(&mut self, position: usize, result: &RawJson) {
        if position == self.n() && !self.proxy_mode {
            self.agent_mcp = Some(AgentMcp::of(result));
        }
    }

    /// Whether the diversion stands in for the RFD's MCP servers (see
    /// [`Diversion::translates_rfd`](super::Diversion::translates_rfd)).
    fn translating(&self) -> bool {
        self.diversion.as_ref().is_some_and(|d| d.translates_rfd())
    }

    /// The RFD server id of an RFD server (`{"type": "acp"}`) shown to an S11 proxy or an
    /// agent as this `acp:` URL.
    pub fn rfd_server_id(&self, url: &str) -> Option<&str> {
        self.rfd_servers.get(url).map(String::as_str)
    }

    /// Whether this server id is a proxy's `acp:` server lent to an RFD agent as an RFD entry.
    pub fn lent_to_rfd_agent(&self, server_id: &str) -> bool {
        self.lent_to_rfd_agent.contains(server_id)
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
                stdio: true,
                ..AgentMcp::default()
            }
        );
        assert_eq!(
            AgentMcp::of(&raw(
                r#"{"agentCapabilities":{"mcpCapabilities":{"http":true,"sse":false}}}"#
            )),
            AgentMcp {
                http: true,
                stdio: true,
                ..AgentMcp::default()
            }
        );
        assert_eq!(
            AgentMcp::of(&raw(
                r#"{"agentCapabilities":{"mcpCapabilities":{"acp":true}}}"#
            )),
            AgentMcp {
                rfd: true,
                stdio: true,
                ..AgentMcp::default()
            }
        );
        let v1 = AgentMcp {
            stdio: true,
            ..AgentMcp::default()
        };
        assert_eq!(AgentMcp::of(&raw("[]")), v1);
        // v2: `capabilities.session.mcp`, a transport supported when its object is there.
        assert_eq!(
            AgentMcp::of(&raw(
                r#"{"protocolVersion":2,"capabilities":{"session":{"mcp":{"http":{}}}}}"#
            )),
            AgentMcp {
                http: true,
                v2: true,
                ..AgentMcp::default()
            }
        );
        assert_eq!(
            AgentMcp::of(&raw(
                r#"{"protocolVersion":2,"capabilities":{"session":{"mcp":{"stdio":{},"http":null}}}}"#
            )),
            AgentMcp {
                stdio: true,
                v2: true,
                ..AgentMcp::default()
            }
        );
    }
}
