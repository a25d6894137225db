//! The JSON-RPC error object, and the errors this crate reports locally.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The standard JSON-RPC 2.0 error codes, plus `-32800` (request cancelled) from the range LSP
/// and ACP reserve. Protocol-specific codes (ACP's `-32000` "authentication required", ...)
/// come with the typed protocol layer.
pub mod code {
    /// Invalid JSON was received.
    pub const PARSE_ERROR: i64 = -32700;
    /// The JSON sent is not a valid request object.
    pub const INVALID_REQUEST: i64 = -32600;
    /// The method does not exist or is not available.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// Invalid method parameters.
    pub const INVALID_PARAMS: i64 = -32602;
    /// Internal JSON-RPC error.
    pub const INTERNAL_ERROR: i64 = -32603;
    /// The request was cancelled (by `$/cancel_request`, a timeout or a shutdown).
    pub const REQUEST_CANCELLED: i64 = -32800;
    /// The request was refused because the peer already has as many requests in flight as this
    /// side handles at once (an implementation-defined server error of JSON-RPC's reserved
    /// range, clear of the codes ACP and MCP define).
    pub const SERVER_BUSY: i64 = -32010;
}

/// A JSON-RPC error: what a peer answered, or what went wrong on this side.
///
/// `data` is kept as the peer sent it. Errors that arise locally (the peer closed, a request
/// timed out) carry a code like any other error, so they can be forwarded as responses, and can
/// also be recognised with [`Error::is_peer_closed`] and [`Error::is_timeout`].
#[derive(Clone, PartialEq, Serialize, Deserialize)]
pub struct Error {
    /// The JSON-RPC error code.
    pub code: i64,
    /// A short description.
    pub message: String,
    /// Additional information, exactly as the peer sent it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<serde_json::Value>,
    #[serde(skip)]
    local: Option<Local>,
}

/// Why an error was produced on this side rather than received.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Local {
    PeerClosed,
    Timeout,
}

/// Crate-wide result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An error with any code.
    pub fn new(code: i64, message: impl Into<String>) -> Error {
        Error {
            code,
            message: message.into(),
            data: None,
            local: None,
        }
    }

    /// Attaches `data`.
    pub fn with_data(mut self, data: impl Into<serde_json::Value>) -> Error {
        self.data = Some(data.into());
        self
    }

    /// `-32700`: the text received was not JSON.
    pub fn parse_error(detail: impl fmt::Display) -> Error {
        Error::new(code::PARSE_ERROR, format!("Parse error: {detail}"))
    }

    /// `-32600`: the JSON received was not a valid JSON-RPC message.
    pub fn invalid_request(detail: impl fmt::Display) -> Error {
        Error::new(code::INVALID_REQUEST, format!("Invalid request: {detail}"))
    }

    /// `-32601`: nobody handles `method`.
    pub fn method_not_found(method: &str) -> Error {
        Error::new(
            code::METHOD_NOT_FOUND,
            format!("Method not found: {method}"),
        )
        .with_data(serde_json::json!({ "method": method }))
    }

    /// `-32602`: the params did not fit the method.
    pub fn invalid_params(detail: impl fmt::Display) -> Error {
        Error::new(code::INVALID_PARAMS, format!("Invalid params: {detail}"))
    }

    /// `-32603`: something went wrong inside.
    pub fn internal_error(detail: impl fmt::Display) -> Error {
        Error::new(code::INTERNAL_ERROR, format!("Internal error: {detail}"))
    }

    /// `-32800`: the request was cancelled.
    pub fn request_cancelled() -> Error {
        Error::new(code::REQUEST_CANCELLED, "Request cancelled")
    }

    /// The connection ended before a response arrived. `who` names the peer (for example
    /// `component 2 ("my-agent")`), `why` says how it ended.
    pub fn peer_closed(who: &str, why: &str) -> Error {
        let mut e = Error::new(
            code::INTERNAL_ERROR,
            format!("peer closed: {who} ended the connection ({why}) before answering"),
        );
        e.local = Some(Local::PeerClosed);
        e
    }

    /// The connection to `who` failed (reading or writing broke, or the peer broke a limit);
    /// `why` says how.
    pub fn connection_failed(who: &str, why: &str) -> Error {
        let mut e = Error::new(
            code::INTERNAL_ERROR,
            format!("the connection to {who} failed: {why}"),
        );
        e.local = Some(Local::PeerClosed);
        e
    }

    /// A request got no response within its timeout.
    pub fn timeout(method: &str, after: std::time::Duration) -> Error {
        let mut e = Error::new(
            code::REQUEST_CANCELLED,
            format!("request {method} timed out after {after:?} and was cancelled"),
        );
        e.local = Some(Local::Timeout);
        e
    }

    /// Whether this error says the peer went away before answering.
    pub fn is_peer_closed(&self) -> bool {
        self.local == Some(Local::PeerClosed)
    }

    /// Whether this error says a request timed out.
    pub fn is_timeout(&self) -> bool {
        self.local == Some(Local::Timeout)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (code {})", self.message, self.code)?;
        if let Some(data) = &self.data {
            write!(f, ": {data}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for Error {}

impl From<serde_json::Error> for Error {
    fn from(e: serde_json::Error) -> Self {
        Error::invalid_params(e)
    }
}

/// An I/O failure in a handler (a file it reads, a process it starts) answers its request as an
/// internal error that says what failed.
impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::internal_error(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_data_through_json() {
        let text = r#"{"code":-32000,"message":"auth","data":{"why":[1,2]}}"#;
        let e: Error = serde_json::from_str(text).unwrap();
        assert_eq!(e.code, -32000);
        assert_eq!(e.data.as_ref().unwrap()["why"][1], 2);
        assert_eq!(serde_json::to_string(&e).unwrap(), text);
    }

    #[test]
    fn local_errors_are_recognisable() {
        assert!(Error::peer_closed("agent", "EOF").is_peer_closed());
        assert!(!Error::internal_error("x").is_peer_closed());
        let t = Error::timeout("x", std::time::Duration::from_millis(5));
        assert!(t.is_timeout());
        assert_eq!(t.code, code::REQUEST_CANCELLED);
    }
}
