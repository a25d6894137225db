//! The JSON-RPC 2.0 core: wire messages, framing, transports and connections.
//!
//! Built in layers, each using only the ones before it:
//! - **data**: [`Error`], [`Id`], [`RawJson`] payloads, [`Message`]s, the typed-message traits
//!   ([`JsonRpcRequest`], [`JsonRpcNotification`]);
//! - **framing** (newline-delimited JSON with a bounded line length) and **transports**
//!   ([`ByteStream`], in-process [`Channel`]s);
//! - **tables**: the outgoing and per-lane byte budgets, the requests awaiting a response and
//!   the slot where each meets its awaiter, the peer's requests in flight, the [`Lane`]s and
//!   the holds that keep a response in its place;
//! - the **connection handle** ([`Connection`], with its own handles [`Responder`] and
//!   [`PendingResponse`]): one send primitive, the tables behind methods;
//! - the **handler** ([`Handler`], the [`Work`] it makes of a message, [`Methods`]) and
//!   relaying ([`PendingResponse::relay_to`]);
//! - the **driver**: [`Builder`] starts the reader and writer tasks.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> sacp::jsonrpc::Result<()> {
//! use sacp::jsonrpc::{ByteStream, Connection, Methods, RawJson};
//!
//! // Two ends of an in-memory byte stream, speaking newline-delimited JSON.
//! let (left, right) = tokio::io::duplex(64 * 1024);
//! let _server = Connection::builder().name("server").spawn(
//!     ByteStream::duplex(left),
//!     Methods::new().on_raw_request("echo", |params, _cx| async move {
//!         Ok(params.unwrap_or_else(RawJson::null))
//!     }),
//! );
//! let client = Connection::builder().name("client").spawn(ByteStream::duplex(right), Methods::new());
//! let answer = client.request_raw("echo", Some(RawJson::from_string(r#"{"hi":1}"#)?)).await?;
//! assert_eq!(answer.as_str(), r#"{"hi":1}"#);
//! # Ok(()) }
//! ```
//!
#![doc = include_str!("../../docs/jsonrpc.md")]

mod arena;
mod budget;
mod builder;
mod connection;
mod error;
pub(crate) mod framing;
mod handler;
mod hold;
mod id;
mod in_flight;
mod lanes;
pub mod lossless;
mod member;
pub(crate) mod message;
mod payload;
mod pending;
#[cfg(test)]
mod proptests;
mod reader;
mod relay;
mod responder;
mod response;
pub(crate) mod transport;
mod typed;
mod writer;

use std::future::Future;
use std::pin::Pin;

pub use self::arena::Arena;
pub use self::builder::Builder;
pub(crate) use self::connection::{Admission, Outbound, Unsent};
pub use self::connection::{Connection, Limits};
pub use self::error::{Error, Result, code};
pub use self::framing::DEFAULT_MAX_LINE_LENGTH;
pub use self::handler::{Handler, Methods, Work};
pub use self::id::Id;
pub use self::in_flight::CANCEL_REQUEST_METHOD;
pub use self::lanes::Lane;
pub use self::lossless::{HasOrigin, Origin};
pub(crate) use self::message::structured as structured_params;
pub use self::message::{Message, Notification, Request, Response, ResponseBody};
pub use self::payload::RawJson;
pub use self::relay::Answer;
pub use self::responder::Responder;
pub use self::response::PendingResponse;
pub use self::transport::{
    ByteStream, Channel, Either, Inbound, MessageReader, MessageWriter, Transport, channel,
};
pub(crate) use self::typed::decode_typed;
pub(crate) use self::typed::parse_params;
pub use self::typed::{JsonRpcNotification, JsonRpcRequest};

/// A boxed, sendable future: what handlers, lanes and MCP connections pass around.
pub type BoxFuture<T = ()> = Pin<Box<dyn Future<Output = T> + Send>>;

/// Transport halves, for code that names them.
pub mod transports {
    pub use super::transport::{
        ChannelReader, ChannelWriter, LineMessageReader, LineMessageWriter,
    };
    #[cfg(any(feature = "stdio", all(target_os = "wasi", target_env = "p2")))]
    pub use super::transport::{StdinReader, StdoutWriter};
}
