//! Typed requests and notifications.
//!
//! A message type names its method once, in its trait impl; the typed protocol layer implements
//! these traits for the generated schema types from the schema's method tables.

use serde::Serialize;
use serde::de::DeserializeOwned;

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
}

/// A notification type: its method name.
pub trait JsonRpcNotification: Serialize + DeserializeOwned + Send + 'static {
    /// The JSON-RPC method name.
    const METHOD: &'static str;
}
