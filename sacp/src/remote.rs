//! ACP over the network (feature `remote`): the remote transport of ACP's RFD "Streamable HTTP
//! & WebSocket Transport", as the official TypeScript SDK 2.4 implements it (the repository's
//! `REMOTE.md` is the wire reference), client and server, both profiles, behind the same
//! [`Transport`](crate::jsonrpc::Transport) seam as stdio — no handler, proxy or agent changes to go
//! remote.
//!
//! - **Reaching a server**: [`Remote`] makes a transport from a URL — `ws://`/`wss://` for the
//!   WebSocket profile, `http://`/`https://` for Streamable HTTP — with extra headers, extra
//!   CA files, and a [`CookieJar`] for load balancers' affinity.
//! - **Serving**: [`Server`] listens on one endpoint (`/acp`) for both profiles and hands each
//!   ACP connection, as an [`Accepted`] transport, to a function of yours — make an agent
//!   there, or anything else that takes a transport.
//!
//! Where the RFD and the TypeScript SDK differ, the SDK wins (interop): the connection id only
//! in the `Acp-Connection-Id` header, never in `initialize`'s result; an `initialize` the agent
//! answers with an error is still `200` with the header; a batch is `400` with `-32600`; a
//! session stream is made on demand (never `404`); `session/load` is answered on the
//! connection's stream; an SSE keep-alive comment every 15 s.
//!
//! A server always requires a bearer token, checks `Host` (on loopback) and `Origin`, bounds
//! bodies, messages, connections and what each connection queues for a slow client; see
//! [`ServerBuilder`].

mod client;
mod cookies;
mod http_client;
mod http_server;
mod rejoin;
mod server;
pub(crate) mod sse;
mod tls;
mod wire;
mod ws;

use std::time::Duration;

pub use self::client::{Remote, RemoteReader, RemoteTransport, RemoteWriter};
pub use self::cookies::CookieJar;
pub use self::http_client::{HttpClient, HttpReader, HttpWriter};
pub use self::rejoin::{REJOIN_TRIES, Rejoining, RejoiningReader, RejoiningWriter};
pub use self::server::{
    Accepted, AcceptedReader, AcceptedWriter, Profile, Server, ServerBuilder, Shutdown,
};
pub use self::ws::{WebSocket, WsReader, WsWriter};

/// The largest message a client takes by default (the TypeScript SDK's `maxMessageBytes`).
const DEFAULT_MAX_MESSAGE: usize = 32 * 1024 * 1024;

/// How long a peer may take nothing of what waits for it before its connection is closed.
const DEFAULT_STALL: Duration = Duration::from_secs(60);

/// The WebSocket read buffer's size (see where it is used).
const WS_READ_BUFFER: usize = 16 * 1024;
