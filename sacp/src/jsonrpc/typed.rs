//! Typed requests and notifications.
//!
//! A message type names its method once, in its trait impl; the typed protocol layer implements
//! these traits for the generated schema types from the schema's method tables. How a message
//! is read and written has a default (serde); the ACP types override it to keep the JSON they
//! were read from (see [`lossless`](super::lossless)), and every typed path of a connection —
//! handlers' params, requests and notifications sent, responses read and answered — goes
//! through these methods.

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{Error, RawJson};

/// A request type: its method name and the type of its response.
///
/// ```
/// use serde::{Deserialize, Serialize};
/// use sacp::jsonrpc::JsonRpcRequest;
///
/// #[derive(Serialize, Deserialize)]
/// struct Add { a: i64, b: i64 }
///
/// impl JsonRpcRequest for Add {
///     const METHOD: &'static str = "math/add";
///     type Response = i64;
/// }
/// ```
pub trait JsonRpcRequest: Serialize + DeserializeOwned + Send + 'static {
    /// The JSON-RPC method name.
    const METHOD: &'static str;
    /// What a successful response's `result` holds.
    type Response: Serialize + DeserializeOwned + Send + 'static;

    /// Reads the request from its params (absent params as `null`, or failing that `{}`).
    fn read(params: Option<RawJson>) -> Result<Self, Error> {
        parse_params(params)
    }

    /// Writes the request's params.
    fn write(&self) -> Result<RawJson, Error> {
        RawJson::to_raw(self)
    }

    /// Reads a response's result.
    fn read_response(result: RawJson) -> Result<Self::Response, Error> {
        decode_typed(result)
    }

    /// Writes a response's result.
    fn write_response(response: &Self::Response) -> Result<RawJson, Error> {
        RawJson::to_raw(response)
    }
}

/// A notification type: its method name.
pub trait JsonRpcNotification: Serialize + DeserializeOwned + Send + 'static {
    /// The JSON-RPC method name.
    const METHOD: &'static str;

    /// Reads the notification from its params (absent params as `null`, or failing that
    /// `{}`).
    fn read(params: Option<RawJson>) -> Result<Self, Error> {
        parse_params(params)
    }

    /// Writes the notification's params.
    fn write(&self) -> Result<RawJson, Error> {
        RawJson::to_raw(self)
    }
}

/// Absent params are read as `null` (what `()` and `Option` expect) or, failing that, as `{}`
/// (what a struct of optional fields expects).
pub(crate) fn parse_params<T: DeserializeOwned>(params: Option<RawJson>) -> Result<T, Error> {
    match params {
        Some(raw) => raw.parse(),
        None => RawJson::null()
            .parse()
            .or_else(|e| RawJson::empty_object().parse().map_err(|_| e)),
    }
}

/// The decode step for a typed result: a result that does not fit is an internal error (the
/// peer answered something else than the method promises), not invalid params.
pub(crate) fn decode_typed<T: serde::de::DeserializeOwned>(raw: RawJson) -> Result<T, Error> {
    serde_json::from_slice(raw.as_bytes()).map_err(|e| {
        Error::internal_error(format!(
            "the peer's response does not match the expected type: {e}"
        ))
        .with_data(raw.as_str())
    })
}
