//! The routing table's part in MCP over ACP (spec §4): what the agent can do, where the
//! conductor's own MCP bridges sit, and which `_mcp/*` messages go to them instead of the agent.
//!
//! A conductor's bridges (the `sacp-chain` crate's) speak for an agent that knows nothing of
//! `acp:` URLs: they are one more connection of the routing table,
//! [`RoutingTable::bridge_conn`], that sends and receives as if it were the agent — what it sends travels up from the agent's position, and the owner's
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
        let translated_for = self.translating && agent.is_some_and(|a| !a.rfd);
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

    /// For an RFD agent's `mcp/message` that went up the whole chain unserved, in a chain without
    /// the translator ([`RoutingTable::translate`], e.g. `sacp::testing`'s): the binding error
    /// when the server was lent to it as an RFD entry — its provider does not serve the RFD's
    /// stateless form (an S11 proxy, say) — rather than the editor's "method not found".
    /// `None` for the editor's own RFD servers, and in proxy mode.
    pub(super) fn unserved_for_rfd_agent(
        &self,
        to: usize,
        method: &str,
        params: Option<&RawJson>,
    ) -> Option<crate::jsonrpc::Error> {
        if to != 0
            || self.proxy_mode
            || self.translating
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

    /// The connection of the conductor's MCP bridges (after the components').
    pub fn bridge_conn(&self) -> Conn {
        self.n() + 1
    }

    /// What the agent said of MCP, once it answered `initialize` (never in proxy mode, where
    /// the last component's successor is another conductor).
    pub fn agent_mcp(&self) -> Option<AgentMcp> {
        self.agent_mcp
    }

    /// Whether an `initialize` is on its way to the agent, or the agent's answer to it is
    /// (until then, [`RoutingTable::agent_mcp`] cannot say what the agent speaks).
    pub fn agent_initializing(&self) -> bool {
        !self.proxy_mode
            && self
                .conns
                .get(self.agent_conn())
                .is_some_and(|ids| ids.pending.values().any(|p| p.initialize.is_some()))
    }

    /// Notes the agent's `initialize` result.
    pub(super) fn note_agent_initialize(&mut self, position: usize, result: &RawJson) {
        if position == self.n() && !self.proxy_mode {
            self.agent_mcp = Some(AgentMcp::of(result));
        }
    }

    /// The connection of the conductor's MCP translator (after the bridges'): it stands in for
    /// a provider of MCP over ACP in a form its caller does not speak (see
    /// [`RoutingTable::translate`]).
    pub fn translator_conn(&self) -> Conn {
        self.n() + 2
    }

    /// Says that the conductor serves [`RoutingTable::translator_conn`], which then gets
    /// - an RFD agent's stateless `mcp/message` for a server that went up the whole chain
    ///   unserved (its provider, an S11 proxy say, speaks only connections): the translator
    ///   opens a connection through the bridges' connection and translates;
    /// - the agent's side's `_mcp/connect` for an RFD server (stateless only), and the
    ///   `_mcp/*` on the connection it opened: the translator calls the server statelessly.
    ///
    /// What it sends goes to the agent (as from the agent's neighbour), and a provider's
    /// `mcp/message` notifications to an agent that does not speak the RFD's form go to the
    /// bridges' connection. Without it, an RFD agent gets a binding error for such servers.
    pub fn translate(&mut self) {
        self.translating = true;
    }

    /// Notes the answer to an `_mcp/connect` that `origin` sent and `answerer` answered: the
    /// bridges' connections, and the translator's.
    pub(super) fn note_connect(&mut self, origin: Conn, answerer: Conn, result: &RawJson) {
        let Ok(connected) = result.parse::<mcp::ConnectResult>() else {
            return;
        };
        if answerer == self.translator_conn() {
            self.translated.insert(connected.connection_id.clone());
        }
        if origin == self.bridge_conn() {
            self.bridged.insert(connected.connection_id);
        }
    }

    /// Notes an `_mcp/disconnect` from `from`, going out on `target`.
    pub(super) fn note_disconnect(&mut self, from: Conn, target: Conn, params: Option<&RawJson>) {
        let Some(id) = mcp::connection_of(params) else {
            return;
        };
        if from == self.bridge_conn() {
            self.bridged.remove(&id);
        }
        if target == self.translator_conn() {
            self.translated.remove(&id);
        }
    }

    /// The connection a message goes out on instead of `conn`, its target's:
    /// - the bridges', for the owner's `_mcp/*` to a connection a bridge opened, and for an
    ///   RFD provider's `mcp/message` notifications to an agent that does not speak the RFD;
    /// - the translator's, for what [`RoutingTable::translate`] says.
    pub(super) fn divert(&self, conn: Conn, resolved: &super::Resolved, request: bool) -> Conn {
        let (method, params) = (resolved.method.as_str(), resolved.params.as_ref());
        if self.proxy_mode {
            return conn;
        }
        let n = self.n();
        if resolved.dir == Dir::Down && resolved.to == n {
            let bridged = (method == mcp::REQUEST || method == mcp::NOTIFICATION)
                && !self.bridged.is_empty()
                && mcp::connection_of(params).is_some_and(|id| self.bridged.contains(&id));
            let rfd_note = self.translating
                && !request
                && method == mcp::RFD_MESSAGE
                && self.agent_mcp.is_some_and(|a| !a.rfd);
            if bridged || rfd_note {
                return self.bridge_conn();
            }
        }
        if resolved.dir != Dir::Up || !self.translating {
            return conn;
        }
        // The agent's side's connections to RFD servers: at once, from the agent's position.
        let translated = resolved.from == n
            && match method {
                mcp::CONNECT => params
                    .and_then(|p| p.parse::<mcp::ConnectParams>().ok())
                    .is_some_and(|c| self.rfd_servers.contains_key(&c.acp_url)),
                mcp::REQUEST | mcp::NOTIFICATION | mcp::DISCONNECT => {
                    !self.translated.is_empty()
                        && mcp::connection_of(params)
                            .is_some_and(|id| self.translated.contains(&id))
                }
                _ => false,
            };
        // An RFD agent's call that no proxy served, for a server it was lent.
        let unserved = resolved.to == 0
            && request
            && method == mcp::RFD_MESSAGE
            && !self.lent_to_rfd_agent.is_empty()
            && params
                .and_then(|p| p.parse::<mcp::RfdMessage>().ok())
                .is_some_and(|m| self.lent_to_rfd_agent.contains(&m.server_id));
        if translated || unserved {
            return self.translator_conn();
        }
        conn
    }

    /// A request on its way to the translator: an `_mcp/connect` learns the RFD server id of
    /// its `acp:` URL (`server_id`, next to the URL).
    pub(super) fn for_translator(&self, resolved: &mut super::Resolved) {
        use serde_json::{Map, Value};
        if resolved.method != mcp::CONNECT {
            return;
        }
        let Some(mut params) = resolved
            .params
            .as_ref()
            .and_then(|p| p.parse::<Map<String, Value>>().ok())
        else {
            return;
        };
        let id = params
            .get("acp_url")
            .and_then(Value::as_str)
            .and_then(|url| self.rfd_servers.get(url));
        if let Some(id) = id {
            params.insert("server_id".to_owned(), Value::String(id.clone()));
            resolved.params = RawJson::to_raw(&params).ok().or(resolved.params.take());
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
