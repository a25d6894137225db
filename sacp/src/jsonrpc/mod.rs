//! The JSON-RPC 2.0 core: wire messages, framing, transports and connections.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> sacp::jsonrpc::Result<()> {
//! use sacp::jsonrpc::{ByteStream, Connection, RawJson, Router};
//!
//! // Two ends of an in-memory byte stream, speaking newline-delimited JSON.
//! let (left, right) = tokio::io::duplex(64 * 1024);
//! let _server = Connection::builder().name("server").spawn(
//!     ByteStream::duplex(left),
//!     Router::new().on_raw_request("echo", |params, _cx| async move {
//!         Ok(params.unwrap_or_else(RawJson::null))
//!     }),
//! );
//! let client = Connection::builder().name("client").spawn(ByteStream::duplex(right), Router::new());
//! let answer = client.request_raw("echo", Some(RawJson::from_string(r#"{"hi":1}"#)?)).await?;
//! assert_eq!(answer.as_str(), r#"{"hi":1}"#);
//! # Ok(()) }
//! ```

mod budget;
mod connection;
mod error;
mod framing;
mod handler;
mod hold;
mod id;
mod lanes;
pub(crate) use lanes::BoxFuture;
mod message;
mod payload;
mod pending;
#[cfg(test)]
mod proptests;
mod reader;
mod responder;
mod transport;
mod typed;
mod writer;

pub(crate) use self::budget::Permit;
pub use self::connection::{Builder, Connection, Limits};
pub use self::error::{Error, Result, code};
pub use self::framing::DEFAULT_MAX_LINE_LENGTH;
pub(crate) use self::handler::parse_params;
pub use self::handler::{Dispatch, Handler, Router};
pub use self::id::Id;
pub use self::message::{Message, Notification, Request, Response, ResponseBody};
pub use self::payload::RawJson;
pub use self::pending::PendingResponse;
pub(crate) use self::pending::decode_typed;
pub use self::responder::{CANCEL_REQUEST_METHOD, Responder};
pub use self::transport::{
    ByteStream, Channel, Inbound, MessageReader, MessageWriter, Transport, channel,
};
pub use self::typed::{JsonRpcNotification, JsonRpcRequest};

/// Transport halves, for code that names them.
pub mod transports {
    pub use super::transport::{
        ChannelReader, ChannelWriter, LineMessageReader, LineMessageWriter, StdinReader,
        StdoutWriter,
    };
}
