//! MCP over ACP (spec §4): the `_mcp/*` messages, `acp:` URLs and the agent capability.
//!
//! A component that provides an MCP server declares it in `session/new` (`load`, `resume`) as an
//! `http` entry whose URL is `acp:<uuid>`. The MCP client side (the agent, or the conductor's
//! bridge on its behalf) opens a connection with `_mcp/connect` and then carries each MCP
//! message in `_mcp/request` / `_mcp/notification`, both ways, until `_mcp/disconnect`. These
//! are SACP's own extension messages (not part of the ACP schema), so their types live here.
//!
//! Field names are `snake_case` on the wire, as the spec writes them.

use serde::{Deserialize, Serialize};

use crate::jsonrpc::{Error, RawJson};

/// Opens an MCP connection to the server of an `acp:` URL (a request, agent side → owner).
pub const CONNECT: &str = "_mcp/connect";
/// Closes an MCP connection (a notification, agent side → owner).
pub const DISCONNECT: &str = "_mcp/disconnect";
/// Carries an MCP request, either way.
pub const REQUEST: &str = "_mcp/request";
/// Carries an MCP notification, either way.
pub const NOTIFICATION: &str = "_mcp/notification";
/// symposium's `sacp` 11 carries both MCP requests and notifications in one method, its
/// params naming the connection `connectionId` (see [`super::dialect`]).
pub const S11_MESSAGE: &str = "_mcp/message";

/// ACP's RFD carries MCP over ACP in one stateless method (see [`RfdMessage`]).
pub const RFD_MESSAGE: &str = "mcp/message";
/// The MCP revision the RFD's `mcp/message` carries (no `initialize`: each request names it
/// in its `_meta`).
pub const RFD_REVISION: &str = "2026-07-28";
/// The RFD's binding error for a server that cannot be reached (an outer JSON-RPC error).
pub const RFD_SERVER_UNAVAILABLE: i64 = -33001;
/// The `_meta` key of an RFD request's MCP revision.
pub const RFD_VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
/// The `_meta` key of an RFD request's client capabilities (what MCP `initialize` carries in
/// connection-oriented MCP).
pub const RFD_CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";
/// The `_meta` key of an RFD request's client info.
pub const RFD_CLIENT_INFO_KEY: &str = "io.modelcontextprotocol/clientInfo";
/// The `_meta` key of a `server/discover` result's server info.
pub const RFD_SERVER_INFO_KEY: &str = "io.modelcontextprotocol/serverInfo";
/// The inner MCP error for a request of a revision the server does not speak.
pub const UNSUPPORTED_REVISION: i64 = -32022;
/// The RFD's binding error for a provider that failed while serving a request.
pub const RFD_BACKEND_FAILED: i64 = -33002;

/// The result of an RFD `mcp/message` request: the MCP answer, exactly one of the two.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RfdAnswer {
    /// The MCP result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<RawJson>,
    /// The MCP error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Error>,
}

impl RfdAnswer {
    /// The answer for an MCP outcome.
    pub fn of(outcome: Result<RawJson, Error>) -> RfdAnswer {
        match outcome {
            Ok(result) => RfdAnswer {
                result: Some(result),
                error: None,
            },
            Err(error) => RfdAnswer {
                result: None,
                error: Some(error),
            },
        }
    }

    /// The MCP outcome it carries.
    pub fn into_outcome(self) -> Result<RawJson, Error> {
        match self {
            RfdAnswer {
                error: Some(error), ..
            } => Err(error),
            RfdAnswer {
                result: Some(result),
                ..
            } => Ok(result),
            _ => Err(Error::internal_error(
                "an mcp/message answer without `result` or `error`",
            )),
        }
    }
}

/// `mcp/message` params (ACP's RFD): an MCP request to the server `server_id`, under the
/// caller's `request_id` (a provider's notifications about that request carry it back).
/// The result is `{"result": …}` or `{"error": …}`, the MCP answer; a JSON-RPC error means the
/// message could not be delivered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RfdMessage {
    /// The server, as its `{"type": "acp", "serverId"}` entry names it.
    pub server_id: String,
    /// The caller's id of the MCP request.
    pub request_id: serde_json::Value,
    /// The MCP method.
    pub method: String,
    /// The MCP params, as they are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<RawJson>,
}

/// S11's `_mcp/message` params (symposium's `sacp` 11): an MCP message on a connection, the
/// connection named `connectionId`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct S11Message {
    /// The connection.
    pub connection_id: String,
    /// The MCP method.
    pub method: String,
    /// The MCP params. Always present: an S11 peer cannot parse a message without them (it
    /// exits), so absent MCP params are sent as `{}`, as MCP allows.
    pub params: RawJson,
}

impl S11Message {
    /// An MCP message on `connection_id`, in S11's form.
    pub fn new(connection_id: String, method: String, params: Option<RawJson>) -> S11Message {
        S11Message {
            connection_id,
            method,
            params: params.unwrap_or_else(RawJson::empty_object),
        }
    }
}

/// The `mcpServers` entry of an MCP server over ACP in the RFD's form.
pub fn rfd_entry(name: &str, server_id: &str) -> serde_json::Value {
    serde_json::json!({"type": "acp", "name": name, "serverId": server_id})
}

/// The `_meta` key with which an agent says it speaks MCP over ACP itself.
pub const TRANSPORT_CAPABILITY: &str = "mcp_acp_transport";

/// The `_meta` of an `initialize` result that says the agent speaks MCP over ACP itself.
pub fn capability_meta() -> serde_json::Map<String, serde_json::Value> {
    let mut meta = serde_json::Map::new();
    meta.insert(
        TRANSPORT_CAPABILITY.to_owned(),
        serde_json::Value::Bool(true),
    );
    meta
}

/// The MCP versions the SDK's MCP servers and client speak, newest first.
pub const PROTOCOL_VERSIONS: [&str; 2] = ["2025-11-25", "2025-06-18"];

/// The URL scheme of MCP servers reached over ACP.
pub const SCHEME: &str = "acp:";

/// Whether `method` is one of the `_mcp/*` messages (ours, or S11's `_mcp/message`).
pub fn is_mcp_message(method: &str) -> bool {
    matches!(
        method,
        CONNECT | DISCONNECT | REQUEST | NOTIFICATION | S11_MESSAGE
    )
}

/// A fresh `acp:` URL: `acp:` and a random UUID.
pub fn new_url() -> String {
    format!("{SCHEME}{}", uuid::Uuid::new_v4())
}

/// Whether `url` is an `acp:` URL.
pub fn is_acp_url(url: &str) -> bool {
    url.starts_with(SCHEME)
}

/// `_mcp/connect` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnectParams {
    /// The server's `acp:` URL.
    pub acp_url: String,
    /// The ACP session the connection belongs to, when the client knows it already.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
}

/// `_mcp/connect` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnectResult {
    /// Names the connection in the messages that follow.
    pub connection_id: String,
}

/// `_mcp/disconnect` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DisconnectParams {
    /// The connection to close.
    pub connection_id: String,
}

/// `_mcp/request` and `_mcp/notification` params: the MCP message, flattened, with the
/// connection it belongs to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessageParams {
    /// The connection (`connectionId` in S11's `_mcp/message`).
    #[serde(alias = "connectionId")]
    pub connection_id: String,
    /// The MCP method.
    pub method: String,
    /// The MCP params, as they are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<RawJson>,
    /// For a request from the MCP client: the id the client gave it (a bridge passes it on, so
    /// that `notifications/cancelled` and related messages can name it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp_request_id: Option<serde_json::Value>,
    /// For a message the server sends while it handles a request: that request's
    /// `mcp_request_id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub related_mcp_request_id: Option<serde_json::Value>,
}

impl MessageParams {
    /// Reads `_mcp/request` or `_mcp/notification` params.
    pub fn parse(params: Option<&RawJson>) -> Result<MessageParams, Error> {
        params
            .ok_or_else(|| Error::invalid_params("an _mcp message needs params"))?
            .parse()
    }
}

/// The connection an `_mcp/*` message names, read without parsing the rest: `None` when it
/// names none.
pub fn connection_of(params: Option<&RawJson>) -> Option<String> {
    #[derive(Deserialize)]
    struct Named {
        #[serde(alias = "connectionId")]
        connection_id: Option<String>,
    }
    params?.parse::<Named>().ok()?.connection_id
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_read_and_write_as_the_spec_shows() {
        let text = r#"{"connection_id":"c1","method":"tools/call","params":{"name":"x","arguments":{}},"mcp_request_id":7}"#;
        let p = MessageParams::parse(Some(&RawJson::from_string(text).unwrap())).unwrap();
        assert_eq!(p.method, "tools/call");
        assert_eq!(p.mcp_request_id, Some(serde_json::json!(7)));
        assert_eq!(serde_json::to_string(&p).unwrap(), text);
        let connect: ConnectParams =
            serde_json::from_str(r#"{"acp_url":"acp:u1","session_id":"s1"}"#).unwrap();
        assert_eq!(connect.session_id.as_deref(), Some("s1"));
        assert_eq!(
            connection_of(Some(
                &RawJson::from_string(r#"{"connection_id":"c9","x":1}"#).unwrap()
            )),
            Some("c9".to_owned())
        );
        assert!(is_acp_url(&new_url()));
        assert_ne!(new_url(), new_url());
    }
}
