//! ACP over the network (feature `remote`): the remote transport of ACP's RFD "Streamable HTTP
//! & WebSocket Transport", as the official TypeScript SDK 2.4 implements it, client and
//! server, both profiles, behind the same [`Transport`](crate::jsonrpc::Transport) seam as
//! stdio — no handler, proxy or agent changes to go remote. The sections below are the wire
//! as this module speaks it; the code's comments refer to them by name.
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
//!
//! # The endpoint
//!
//! One URL (conventionally `/acp`) takes `POST` (a message from the client), `GET` without an
//! upgrade (a stream of server-sent events), `GET` with `Upgrade: websocket`, and `DELETE` (the
//! connection's end). A client uses the URL it was given as it is, path and all. Both profiles
//! carry ACP's JSON-RPC messages unchanged, one at a time (no batches), with the same life as
//! on stdio: `initialize` first.
//!
//! # Streamable HTTP
//!
//! - **`initialize`** is a `POST` without `Acp-Connection-Id`; its answer is the `200` body
//!   (plain JSON, never a stream), and the header `Acp-Connection-Id` names the new
//!   connection. Every later request carries that header.
//! - **The connection stream**: a `GET` with `Accept: text/event-stream` and the connection's
//!   id. What is for no session goes there. One reader at a time (a second gets `409`); what
//!   waits for a reader is kept. Its end is the connection's end.
//! - **Every other message** is a `POST` answered `202` with no body; the answer to a request
//!   comes on a stream. A `POST` of a session-scoped method (`session/prompt`, `session/cancel`,
//!   `session/load`, `session/resume`, `session/close`, `session/fork`, `session/set_mode`, …)
//!   or one whose params name a session also carries `Acp-Session-Id`.
//! - **Session streams**: a `GET` with both ids; made on demand (an unknown session gets an
//!   empty stream, not `404`). Requests and notifications whose params name a session, and the
//!   answers to requests posted for one, go on that session's stream; everything else, and the
//!   answer to `session/load`, on the connection stream. Order holds within a stream only: a
//!   client matches answers to requests by id, whatever stream they came on.
//! - **The server's requests** (permission, `fs/*`, `terminal/*`) come on the stream of their
//!   session; the client answers with a `POST` carrying that session's id. A server here also
//!   takes an answer without it (it routes answers by their id), which some clients need.
//! - **`DELETE`** with the connection's id ends it: the agent's input closes, every stream ends.
//!
//! ## Server-sent events
//!
//! One event a message: `data: ` and the message as one line of JSON, then a blank line. A
//! comment line (`:`) every 15 s keeps an idle stream alive. Events carry an `id:` here, and a
//! stream keeps its recent events (bounded), so a `GET` with `Last-Event-ID` takes a broken
//! stream up where it broke, nothing sent twice and nothing lost; [`Remote`]'s client does so
//! by itself, a bounded number of times with backoff. A reader takes only `data:` lines
//! (several joined with a newline), skips events that are not a JSON object, and ignores
//! `event:`, `retry:` and comments.
//!
//! # WebSocket
//!
//! The upgrade is answered `101` with `Acp-Connection-Id`; then one JSON-RPC message per text
//! frame each way (binary frames are ignored), every session on the one socket, in the order
//! sent. The server acts first on an `initialize` request with an id: before it, another
//! request or notification closes the socket (`1002`), an answer is dropped; a second
//! `initialize` is refused (`-32600`) and the socket stays. A frame that is not JSON gets
//! `-32700`, an array or a primitive `-32600`, all with `id: null`. Over-long ids (over 1024
//! UTF-16 units) close the socket with `1008`; so does a client that takes nothing for the
//! stall time while the server's budget for it is full. WebSocket has no resumption: a client
//! that lost its socket connects again, sends `initialize`, and takes its sessions back with
//! `session/load` ([`Remote::rejoin`] does that for the caller).
//!
//! # Status codes
//!
//! `404` means the connection is gone (an unknown or ended `Acp-Connection-Id`) and a client
//! drops everything of it; `409` is a conflict over a session stream's reader; a bad single
//! request gets `400`, `413` (a body over the limit) or `415` (not `application/json`), which
//! fails that request only; a missing or wrong bearer token `401`; a `Host` or `Origin` not
//! allowed `403`.
//!
//! # Cookies and affinity
//!
//! A client keeps the cookies a server sets (on `initialize`'s answer, on the `101`, on any
//! answer) and sends them on every later request of the connection, and on the connection
//! that takes its sessions back after a drop: a load balancer's affinity cookie brings it to
//! the process that holds them. Share one [`CookieJar`] for that.
//!
//! # Limits
//!
//! What a connection queues for a client that does not read is bounded (the stall time and
//! the bytes are [`ServerBuilder`]'s); a request body is at most 16 MiB by default; a message a
//! client takes at most 32 MiB by default ([`Remote::max_message`]); an error body it keeps, 8 KiB.

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
