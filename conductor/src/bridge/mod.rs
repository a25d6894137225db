//! MCP bridges (spec §4): the proxies' MCP servers (`acp:` URLs) for an agent that knows
//! nothing of MCP over ACP.
//!
//! When the agent's `initialize` result lacks `_meta.mcp_acp_transport`, each `acp:` entry of
//! a `session/new`, `session/load` or `session/resume` on its way to the agent becomes
//! - with [`BridgeMode::Http`], or [`BridgeMode::Auto`] and an agent that declared
//!   `mcpCapabilities.http` (v2: `capabilities.session.mcp.http`): an `http` entry for the
//!   conductor's streamable-HTTP endpoint on 127.0.0.1 (`http.rs`), with a bearer secret in its
//!   headers;
//! - otherwise: a stdio entry that runs `conductor mcp PORT` (the absolute path) with a secret in
//!   its environment, PORT being a loopback listener of the entry's own (`stdio.rs`; the process
//!   is `pipe.rs`); for a v2 agent tagged `"type": "stdio"`, as v2 requires.
//!
//! Either way each MCP connection the agent's client opens becomes one MCP connection over
//! ACP, opened by the bridges as if they were the agent (`hub.rs`; the routing table sends the
//! owner's `_mcp/*` for it to them, as `diversion.rs` says). The request is never held
//! back: listeners serve from the moment the rewritten entry is forwarded, and connections
//! opened before the agent answered `session/new` go without a session id (the owner knows
//! the session by the URL anyway). An entry ends with its session (`session/close`,
//! `session/delete`, a failed `session/new`) and with the conductor; a bridge process ends
//! when its socket closes.
//!
//! The bridges' other half is the MCP translator (`translate.rs`, the largest file here): MCP
//! over ACP between a caller and a provider that speak different forms of it (the RFD's
//! `mcp/*` and ours `_mcp/*`), one more connection of the routing table that reaches providers
//! through the same hub.

pub(crate) mod diversion;
mod http;
mod hub;
pub(crate) mod pipe;
mod stdio;
mod translate;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use sacp::acp::{EnvVariable, HttpHeader, McpServer, McpServerHttp, McpServerStdio};
use sacp::jsonrpc::{Id, RawJson, Request, Response, ResponseBody, Transport};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

pub(crate) use self::hub::Hub;
use sacp::protocol::routing::AgentMcp;

/// The environment variable that carries a stdio bridge's secret.
pub(crate) const TOKEN_ENV: &str = "SACP_MCP_BRIDGE_TOKEN";

use crate::chain::BridgeMode;
use crate::lock::lock;

/// One bridged `acp:` entry of one session.
#[derive(Debug)]
pub(crate) struct Entry {
    /// Names it in the HTTP bridge's paths.
    id: String,
    /// The MCP server's name, as the entry gave it.
    name: String,
    acp_url: String,
    secret: String,
    session: Mutex<Option<String>>,
    /// Fired when its session (or the conductor) ends.
    ended: CancellationToken,
}

impl Entry {
    fn new(name: String, acp_url: String, session: Option<String>) -> Arc<Entry> {
        let random = || uuid::Uuid::new_v4().simple().to_string();
        Arc::new(Entry {
            id: random(),
            name,
            acp_url,
            secret: format!("{}{}", random(), random()),
            session: Mutex::new(session),
            ended: CancellationToken::new(),
        })
    }

    /// The ACP session, once known.
    fn session_id(&self) -> Option<String> {
        lock(&self.session).clone()
    }

    fn bind(&self, session: &str) {
        *lock(&self.session) = Some(session.to_owned());
    }

    /// Whether `presented` is the secret (in time that does not depend on where they differ).
    fn secret_is(&self, presented: &[u8]) -> bool {
        let secret = self.secret.as_bytes();
        presented.len() == secret.len()
            && presented
                .iter()
                .zip(secret)
                .fold(0u8, |differ, (a, b)| differ | (a ^ b))
                == 0
    }
}

/// The methods whose `mcpServers` are bridged.
pub(crate) const SESSION_SETUP: [&str; 3] = ["session/new", "session/load", "session/resume"];
/// The methods that end a session.
const SESSION_END: [&str; 2] = ["session/close", "session/delete"];

/// The conductor's MCP bridges.
#[derive(Debug)]
pub(crate) struct Bridges {
    mode: BridgeMode,
    /// What runs `conductor mcp PORT`.
    /// The `conductor` executable for stdio bridges, if there is one.
    program: Option<PathBuf>,
    hub: Hub,
    /// The MCP translator (kept running with the bridges).
    translator: translate::Translator,
    http: Option<http::Server>,
    /// Session setups sent to the agent and not answered yet, by their id on the agent's
    /// connection: their entries, and whether the answer names the session (`session/new`).
    setups: HashMap<Id, (Vec<Arc<Entry>>, bool)>,
    sessions: HashMap<String, Vec<Arc<Entry>>>,
    /// An RFD agent's session setups not answered yet: the server ids of their
    /// `{"type": "acp"}` entries, and the session when the setup names it.
    rfd_setups: HashMap<Id, (Vec<String>, Option<String>)>,
    /// An RFD agent's sessions' server ids: the translator's connections to their providers
    /// close with the session.
    rfd_sessions: HashMap<String, Vec<String>>,
}

impl Bridges {
    /// The bridges, talking to the routing table over `transport`, and the MCP translator over
    /// `translator` (see `translate.rs`).
    pub(crate) fn new(
        mode: BridgeMode,
        program: Option<PathBuf>,
        transport: impl Transport,
        translator: impl Transport,
    ) -> Bridges {
        let hub = Hub::start(transport);
        Bridges {
            mode,
            program,
            translator: translate::start(translator, hub.clone()),
            hub,
            http: None,
            setups: HashMap::new(),
            sessions: HashMap::new(),
            rfd_setups: HashMap::new(),
            rfd_sessions: HashMap::new(),
        }
    }

    /// Looks at a request on its way to an agent that said `agent` of MCP: bridges the
    /// `acp:` entries of a session setup, ends the entries of a session that ends.
    pub(crate) fn on_request_to_agent(&mut self, request: &mut Request, agent: AgentMcp) {
        let method = request.method.as_str();
        if SESSION_END.contains(&method) {
            if let Some(session) = session_of(request.params.as_ref()) {
                self.end(&session);
            }
            return;
        }
        if agent.rfd && !agent.native && SESSION_SETUP.contains(&method) {
            self.note_rfd_setup(request);
            return;
        }
        // An agent that calls them itself — ours, or the RFD's way (the routing table gave it RFD
        // entries, see `sacp::protocol::routing`) — needs no bridge.
        if agent.native || agent.rfd || !SESSION_SETUP.contains(&method) {
            return;
        }
        let Some(params) = &request.params else {
            return;
        };
        let Ok(mut value) = params.parse::<Map<String, Value>>() else {
            return;
        };
        let known = value
            .get("sessionId")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let Some(Value::Array(servers)) = value.get_mut("mcpServers") else {
            return;
        };
        let mut entries = Vec::new();
        for server in servers.iter_mut() {
            let acp = match serde_json::from_value::<McpServer>(server.clone()) {
                Ok(McpServer::Http(http)) if sacp::protocol::mcp::is_acp_url(&http.url) => http,
                _ => continue,
            };
            let entry = Entry::new(acp.name.clone(), acp.url, known.clone());
            match self.bridge(&entry, agent) {
                Ok(rewritten) => match entry_for(rewritten, agent) {
                    Ok(rewritten) => {
                        *server = rewritten;
                        entries.push(entry);
                    }
                    Err(e) => tracing::error!("cannot write a bridged MCP entry: {e}"),
                },
                Err(e) => tracing::error!(
                    server = %acp.name,
                    "cannot bridge the MCP server for the agent: {e}"
                ),
            }
        }
        if entries.is_empty() {
            return;
        }
        match RawJson::to_raw(&value) {
            Ok(rewritten) => {
                request.params = Some(rewritten);
                self.setups
                    .insert(request.id.clone(), (entries, known.is_none()));
            }
            Err(e) => {
                tracing::error!("cannot write the bridged {method}: {e}");
                for entry in entries {
                    entry.ended.cancel();
                }
            }
        }
    }

    /// Whether answers from the agent matter to the bridges.
    pub(crate) fn awaits_answers(&self) -> bool {
        !self.setups.is_empty() || !self.rfd_setups.is_empty()
    }

    /// Notes the server ids of an RFD agent's session setup: the connections the translator
    /// opens to their providers (for the agent's stateless calls) end with the session.
    fn note_rfd_setup(&mut self, request: &Request) {
        let Some(Ok(value)) = request
            .params
            .as_ref()
            .map(|p| p.parse::<Map<String, Value>>())
        else {
            return;
        };
        let servers: Vec<String> = value
            .get("mcpServers")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|s| s.get("type").and_then(Value::as_str) == Some("acp"))
            .filter_map(|s| s.get("serverId").and_then(Value::as_str).map(str::to_owned))
            .collect();
        if servers.is_empty() {
            return;
        }
        let known = value
            .get("sessionId")
            .and_then(Value::as_str)
            .map(str::to_owned);
        self.rfd_setups.insert(request.id.clone(), (servers, known));
    }

    /// Looks at an answer from the agent: a session setup's entries learn their session, or
    /// end with a failed setup.
    pub(crate) fn on_answer_from_agent(&mut self, response: &Response) {
        if let Some((servers, known)) = self.rfd_setups.remove(&response.id) {
            let session = match &response.body {
                ResponseBody::Result(result) => session_of(Some(result)).or(known),
                ResponseBody::Error(_) => None,
            };
            match session {
                Some(session) => self
                    .rfd_sessions
                    .entry(session)
                    .or_default()
                    .extend(servers),
                // A failed setup: nothing of it stays open.
                None => self.translator.close_servers(&servers),
            }
        }
        let Some((entries, named)) = self.setups.remove(&response.id) else {
            return;
        };
        let session = match &response.body {
            ResponseBody::Result(result) if named => session_of(Some(result)),
            ResponseBody::Result(_) => entries.first().and_then(|e| e.session_id()),
            ResponseBody::Error(_) => None,
        };
        let Some(session) = session else {
            for entry in entries {
                entry.ended.cancel();
            }
            return;
        };
        for entry in &entries {
            entry.bind(&session);
        }
        self.sessions.entry(session).or_default().extend(entries);
    }

    /// Ends the entries of `session`.
    fn end(&mut self, session: &str) {
        for entry in self.sessions.remove(session).into_iter().flatten() {
            entry.ended.cancel();
        }
        if let Some(servers) = self.rfd_sessions.remove(session) {
            self.translator.close_servers(&servers);
        }
    }

    /// Ends every entry.
    pub(crate) fn end_all(&mut self) {
        let sessions: Vec<String> = self
            .sessions
            .keys()
            .chain(self.rfd_sessions.keys())
            .cloned()
            .collect();
        for session in sessions {
            self.end(&session);
        }
        for (_, (entries, _)) in self.setups.drain() {
            for entry in entries {
                entry.ended.cancel();
            }
        }
    }

    /// Starts serving `entry` the way the mode and the agent say; the entry that replaces it.
    fn bridge(&mut self, entry: &Arc<Entry>, agent: AgentMcp) -> std::io::Result<McpServer> {
        let http = match self.mode {
            BridgeMode::Auto => agent.http,
            BridgeMode::Stdio => false,
            BridgeMode::Http => true,
        };
        if agent.v2 && !agent.stdio && !agent.http {
            tracing::warn!(
                server = %entry.name,
                "the ACP v2 agent declared no MCP transport (`capabilities.session.mcp`); \
                 bridging over stdio anyway"
            );
        }
        if http {
            let server = match &mut self.http {
                Some(server) => server,
                None => self.http.insert(http::Server::start(self.hub.clone())?),
            };
            let url = server.serve(entry.clone());
            tracing::debug!(server = %entry.name, %url, "bridging over HTTP");
            return Ok(McpServer::Http(McpServerHttp {
                headers: vec![HttpHeader {
                    meta: None,
                    name: "Authorization".to_owned(),
                    value: format!("Bearer {}", entry.secret),
                }],
                meta: None,
                name: entry.name.clone(),
                url,
            }));
        }
        let Some(program) = &self.program else {
            return Err(std::io::Error::other(
                "the agent needs a stdio bridge, and there is no `conductor` executable to run \
                 as one: set `Options::bridge_program` (or `Options::launcher`), or give the \
                 agent MCP over HTTP (`BridgeMode::Http`, for an agent that declares \
                 `mcpCapabilities.http`)",
            ));
        };
        let listener = std::net::TcpListener::bind(("127.0.0.1", 0))?;
        listener.set_nonblocking(true)?;
        let port = listener.local_addr()?.port();
        let listener = tokio::net::TcpListener::from_std(listener)?;
        tokio::spawn(stdio::serve(listener, entry.clone(), self.hub.clone()));
        tracing::debug!(server = %entry.name, port, "bridging over stdio");
        // v2 requires an absolute command; v1 agents run it as it is given.
        let program = std::path::absolute(program)?;
        Ok(McpServer::Stdio(McpServerStdio {
            args: vec![pipe::SUBCOMMAND.to_owned(), port.to_string()],
            command: program.to_string_lossy().into_owned(),
            env: vec![EnvVariable {
                meta: None,
                name: TOKEN_ENV.to_owned(),
                value: entry.secret.clone(),
            }],
            meta: None,
            name: entry.name.clone(),
        }))
    }
}

/// A bridged entry as the agent's ACP version writes it: v2 tags a stdio entry
/// `"type": "stdio"` (v1's has no `type`).
fn entry_for(server: McpServer, agent: AgentMcp) -> serde_json::Result<Value> {
    let stdio = matches!(server, McpServer::Stdio(_));
    let mut value = serde_json::to_value(server)?;
    if agent.v2
        && stdio
        && let Value::Object(entry) = &mut value
    {
        entry.insert("type".to_owned(), Value::from("stdio"));
    }
    Ok(value)
}

/// The `sessionId` of params or a result.
fn session_of(raw: Option<&RawJson>) -> Option<String> {
    raw?.str_member("sessionId")
        .map(std::borrow::Cow::into_owned)
}
