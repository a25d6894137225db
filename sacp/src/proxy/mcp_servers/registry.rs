//! A proxy's MCP servers at run time: which `acp:` URL is whose, which connection is open, and
//! the handling of the `_mcp/*` messages addressed to them.
//!
//! Every server the proxy gives all sessions is declared, under a fresh URL, in each
//! `session/new`, `session/load` and `session/resume` that comes from the client; servers given
//! to one session are declared by its handler ([`McpServers::offer`]). An `_mcp/connect` for one
//! of these URLs opens a connection of that server; `_mcp/request` and `_mcp/notification` of
//! an open connection go to it; `_mcp/disconnect` — or the session ending (`session/close`,
//! `session/delete`) — closes it. `_mcp/*` messages for URLs and connections of others are none
//! of the registry's business: the runtime forwards them on.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value};

use super::server::{ClientLink, McpConnection, McpMessage, McpServer, SessionSlot};
use crate::acp::SessionId;
use crate::jsonrpc::{Error, RawJson};
use crate::lock::lock;
use crate::protocol::dialect::{ConductorDialect, Dialect};
use crate::protocol::mcp::{self, ConnectParams, ConnectResult, MessageParams, RfdMessage};
use crate::proxy::Cx;

/// The ACP methods whose `mcpServers` declare the proxy's servers.
const DECLARING: [&str; 3] = ["session/new", "session/load", "session/resume"];
/// The ACP methods that end a session.
const ENDING: [&str; 2] = ["session/close", "session/delete"];

struct Url {
    server: Arc<dyn McpServer>,
    session: SessionSlot,
}

struct Open {
    connection: Arc<dyn McpConnection>,
    url: String,
}

/// The servers and connections of one proxy.
#[derive(Default)]
pub(crate) struct Registry {
    global: Vec<Arc<dyn McpServer>>,
    urls: Mutex<HashMap<String, Url>>,
    open: Mutex<HashMap<String, Open>>,
    /// Under an RFD conductor: the one connection of each declared server, by server id (the
    /// RFD's MCP over ACP is stateless: no connect, no `initialize`).
    stateless: Mutex<HashMap<String, Arc<dyn McpConnection>>>,
    /// The conductor's dialect: how servers are declared.
    dialect: Arc<ConductorDialect>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("global", &self.global.len())
            .field("urls", &lock(&self.urls).len())
            .field("open", &lock(&self.open).len())
            .finish()
    }
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct SessionOf {
    session_id: Option<String>,
}

impl Registry {
    /// A registry for servers given to every session.
    pub(crate) fn new(global: Vec<Arc<dyn McpServer>>, dialect: Arc<ConductorDialect>) -> Registry {
        Registry {
            global,
            dialect,
            ..Registry::default()
        }
    }

    /// Declares a server under a fresh URL in `servers` (a `mcpServers` array); returns the URL.
    fn declare(
        &self,
        servers: &mut Vec<Value>,
        server: Arc<dyn McpServer>,
        session: SessionSlot,
    ) -> Result<String, Error> {
        // The URL doubles as the RFD's server id.
        let url = mcp::new_url();
        if self.dialect.get() == Dialect::Rfd {
            servers.push(mcp::rfd_entry(&server.name(), &url));
        } else {
            let entry = crate::acp::McpServer::Http(crate::acp::McpServerHttp::new(
                server.name(),
                url.clone(),
                Vec::new(),
            ));
            servers.push(serde_json::to_value(entry)?);
        }
        lock(&self.urls).insert(url.clone(), Url { server, session });
        Ok(url)
    }

    /// For a message from the client: declares the global servers in `session/new`, `load` and
    /// `resume` (returns the new params, and the URLs that wait for the session id), and closes
    /// what belonged to a session that ends.
    pub(crate) fn on_client_request(
        &self,
        method: &str,
        params: Option<&RawJson>,
    ) -> Result<Option<(RawJson, Vec<String>)>, Error> {
        if ENDING.contains(&method) {
            if let Some(Ok(SessionOf {
                session_id: Some(session),
            })) = params.map(RawJson::parse::<SessionOf>)
            {
                self.end_session(&session);
            }
            return Ok(None);
        }
        if self.global.is_empty() || !DECLARING.contains(&method) {
            return Ok(None);
        }
        let mut value: Map<String, Value> = match params {
            Some(p) => p.parse()?,
            None => Map::new(),
        };
        let known = value
            .get("sessionId")
            .and_then(Value::as_str)
            .map(|s| SessionId(s.to_owned()));
        let mut servers = match value.shift_remove("mcpServers") {
            Some(Value::Array(servers)) => servers,
            _ => Vec::new(),
        };
        let mut waiting = Vec::new();
        for server in &self.global {
            let slot = known.clone().map(SessionSlot::known).unwrap_or_default();
            let url = self.declare(&mut servers, server.clone(), slot)?;
            if known.is_none() {
                waiting.push(url);
            }
        }
        value.insert("mcpServers".into(), Value::Array(servers));
        Ok(Some((RawJson::to_raw(&value)?, waiting)))
    }

    /// Records the session of `urls` from a `session/new` result.
    pub(crate) fn bind_from_result(&self, urls: &[String], result: &RawJson) {
        if let Ok(SessionOf {
            session_id: Some(session),
        }) = result.parse::<SessionOf>()
        {
            self.bind(urls, &SessionId(session));
        }
    }

    fn bind(&self, urls: &[String], session: &SessionId) {
        let table = lock(&self.urls);
        for url in urls {
            if let Some(entry) = table.get(url) {
                entry.session.set(session.clone());
            }
        }
    }

    fn withdraw(&self, url: &str) {
        lock(&self.urls).remove(url);
        if let Some(connection) = lock(&self.stateless).remove(url) {
            connection.close();
        }
        let closing: Vec<_> = {
            let mut open = lock(&self.open);
            let ids: Vec<String> = open
                .iter()
                .filter(|(_, o)| o.url == url)
                .map(|(id, _)| id.clone())
                .collect();
            ids.iter().filter_map(|id| open.remove(id)).collect()
        };
        for open in closing {
            open.connection.close();
        }
    }

    fn end_session(&self, session: &str) {
        let urls: Vec<String> = lock(&self.urls)
            .iter()
            .filter(|(_, u)| u.session.get().is_some_and(|s| s.0 == session))
            .map(|(url, _)| url.clone())
            .collect();
        for url in urls {
            self.withdraw(&url);
        }
    }

    /// Whether an `_mcp/*` message from the successor is addressed to this proxy's servers.
    pub(crate) fn owns(&self, method: &str, params: Option<&RawJson>) -> bool {
        match method {
            mcp::CONNECT => params
                .and_then(|p| p.parse::<ConnectParams>().ok())
                .is_some_and(|c| lock(&self.urls).contains_key(&c.acp_url)),
            mcp::REQUEST | mcp::NOTIFICATION | mcp::DISCONNECT | mcp::S11_MESSAGE => {
                mcp::connection_of(params).is_some_and(|id| lock(&self.open).contains_key(&id))
            }
            mcp::RFD_MESSAGE => params
                .and_then(|p| p.parse::<RfdMessage>().ok())
                .is_some_and(|m| lock(&self.urls).contains_key(&m.server_id)),
            _ => false,
        }
    }

    /// `_mcp/connect`: opens a connection of the URL's server.
    pub(crate) fn connect(&self, cx: &Cx, params: Option<&RawJson>) -> Result<RawJson, Error> {
        let params: ConnectParams = params
            .ok_or_else(|| Error::invalid_params("_mcp/connect needs params"))?
            .parse()?;
        let (server, session) = {
            let urls = lock(&self.urls);
            let url = urls.get(&params.acp_url).ok_or_else(|| {
                Error::invalid_params(format!("no MCP server at {}", params.acp_url))
            })?;
            (url.server.clone(), url.session.clone())
        };
        if let Some(id) = params.session_id {
            session.set(SessionId(id));
        }
        let connection_id = format!("sacp-mcp-{}", uuid::Uuid::new_v4());
        let link = ClientLink::new(cx.clone(), connection_id.clone(), session);
        let connection: Arc<dyn McpConnection> = Arc::from(server.connect(link));
        lock(&self.open).insert(
            connection_id.clone(),
            Open {
                connection,
                url: params.acp_url,
            },
        );
        RawJson::to_raw(&ConnectResult { connection_id })
    }

    /// `mcp/message` (the RFD's): the MCP request, answered by the server's one stateless
    /// connection, as `{"result": …}` or `{"error": …}`.
    pub(crate) async fn stateless_request(
        &self,
        cx: &Cx,
        params: Option<&RawJson>,
    ) -> Result<RawJson, Error> {
        let message: RfdMessage = params
            .ok_or_else(|| Error::invalid_params("mcp/message needs params"))?
            .parse()?;
        let connection = {
            let mut stateless = lock(&self.stateless);
            match stateless.get(&message.server_id) {
                Some(connection) => connection.clone(),
                None => {
                    let urls = lock(&self.urls);
                    let url = urls.get(&message.server_id).ok_or_else(|| {
                        Error::new(
                            mcp::RFD_SERVER_UNAVAILABLE,
                            format!("no MCP server {}", message.server_id),
                        )
                    })?;
                    let link = ClientLink::stateless(
                        cx.clone(),
                        message.server_id.clone(),
                        url.session.clone(),
                    );
                    let connection: Arc<dyn McpConnection> = Arc::from(url.server.connect(link));
                    stateless.insert(message.server_id.clone(), connection.clone());
                    connection
                }
            }
        };
        let answer = connection
            .request(McpMessage {
                method: message.method,
                params: message.params,
                id: Some(message.request_id),
            })
            .await;
        RawJson::to_raw(&mcp::RfdAnswer::of(answer))
    }

    fn connection(&self, params: &MessageParams) -> Result<Arc<dyn McpConnection>, Error> {
        lock(&self.open)
            .get(&params.connection_id)
            .map(|o| o.connection.clone())
            .ok_or_else(|| {
                Error::invalid_params(format!(
                    "no MCP connection {} (it was closed)",
                    params.connection_id
                ))
            })
    }

    /// `_mcp/request`: the MCP request, answered by its connection.
    pub(crate) async fn request(&self, params: Option<&RawJson>) -> Result<RawJson, Error> {
        let params = MessageParams::parse(params)?;
        let connection = self.connection(&params)?;
        connection
            .request(McpMessage {
                method: params.method,
                params: params.params,
                id: params.mcp_request_id,
            })
            .await
    }

    /// `_mcp/notification` and `_mcp/disconnect`.
    pub(crate) fn notify(&self, method: &str, params: Option<&RawJson>) {
        if method == mcp::DISCONNECT {
            let Some(id) = mcp::connection_of(params) else {
                return;
            };
            if let Some(open) = lock(&self.open).remove(&id) {
                open.connection.close();
            }
            return;
        }
        match MessageParams::parse(params).and_then(|p| Ok((self.connection(&p)?, p))) {
            Ok((connection, p)) => connection.notify(McpMessage {
                method: p.method,
                params: p.params,
                id: p.mcp_request_id,
            }),
            Err(e) => tracing::debug!(error = %e, "dropped an MCP notification"),
        }
    }
}

/// A proxy's MCP servers, from a handler: give a server to one session ([`Cx::mcp_servers`]).
///
/// Servers that every session gets (the proxy's `#[tool]` methods, its `#[mcp_server]`s) need
/// none of this: the runtime declares them in every `session/new`, `load` and `resume`.
///
/// ```no_run
/// use std::sync::Arc;
///
/// use sacp::acp::{NewSessionRequest, NewSessionResponse};
/// use sacp::mcp::{ToolCx, ToolServer};
/// use sacp::proxy::Cx;
///
/// /// Tools that only make sense in a Rust project.
/// struct RustTools;
///
/// #[sacp::proxy(mcp_name = "rust-tools")]
/// impl RustTools {
///     /// Says which toolchain the project uses.
///     #[tool]
///     async fn toolchain(&self, _cx: &ToolCx) -> sacp::Result<String> {
///         Ok("stable".to_owned())
///     }
/// }
///
/// /// Gives `rust-tools` to the sessions opened in a Rust project, and to no other.
/// struct ForRustProjects;
///
/// #[sacp::proxy]
/// impl ForRustProjects {
///     #[on_request]
///     async fn new_session(&self, mut req: NewSessionRequest, cx: &Cx) -> sacp::Result<NewSessionResponse> {
///         let rust = std::path::Path::new(&req.cwd).join("Cargo.toml").exists();
///         let url = match rust {
///             true => Some(cx.mcp_servers().offer(&mut req.mcp_servers, ToolServer::new(Arc::new(RustTools)))?),
///             false => None,
///         };
///         let answer = cx.successor().request(req).await;
///         if let Some(url) = &url {
///             match &answer {
///                 Ok(session) => cx.mcp_servers().bind(url, &session.session_id),
///                 Err(_) => cx.mcp_servers().withdraw(url),
///             }
///         }
///         answer
///     }
/// }
/// ```
#[derive(Debug, Clone)]
pub struct McpServers {
    registry: Arc<Registry>,
}

impl McpServers {
    pub(crate) fn new(registry: Arc<Registry>) -> McpServers {
        McpServers { registry }
    }

    /// Declares `server` in `servers` (the `mcpServers` of a `session/new`, `load` or
    /// `resume` on its way to the successor) under a fresh `acp:` URL, which it returns.
    pub fn offer(
        &self,
        servers: &mut Vec<crate::acp::McpServer>,
        server: impl McpServer,
    ) -> Result<String, Error> {
        let mut entries = Vec::new();
        let url = self
            .registry
            .declare(&mut entries, Arc::new(server), SessionSlot::default())?;
        for entry in entries {
            servers.push(serde_json::from_value(entry)?);
        }
        Ok(url)
    }

    /// Tells the tools of the server at `url` which session they serve (once the successor
    /// answered `session/new`).
    pub fn bind(&self, url: &str, session: &SessionId) {
        self.registry.bind(&[url.to_owned()], session);
    }

    /// Takes the server at `url` back (the session was not created after all), closing its
    /// connections.
    pub fn withdraw(&self, url: &str) {
        self.registry.withdraw(url);
    }
}
