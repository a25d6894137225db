//! What both profiles and both roles share: the headers, which methods are session-scoped,
//! and reading the few fields of a message that routing needs.

use std::borrow::Cow;

use bytes::Bytes;

use crate::jsonrpc::message::{Parsed, parse_line};
use crate::jsonrpc::{Id, Message, RawJson, ResponseBody};

/// The header naming an ACP connection (set by the server on the `initialize` answer and the
/// WebSocket upgrade; sent by the client on everything after).
pub(crate) const CONNECTION_ID: &str = "acp-connection-id";
/// The header naming the session a request, a response or an SSE stream belongs to.
pub(crate) const SESSION_ID: &str = "acp-session-id";
/// The header with which an SSE receiver resumes a stream after the last event it got.
pub(crate) const LAST_EVENT_ID: &str = "last-event-id";
/// SSE's media type.
pub(crate) const EVENT_STREAM: &str = "text/event-stream";

/// The methods whose POST must name their session (`Acp-Session-Id`), as the TypeScript SDK
/// lists them.
const SESSION_SCOPED: [&str; 10] = [
    "session/cancel",
    "session/close",
    "session/delete",
    "session/fork",
    "session/load",
    "session/prompt",
    "session/resume",
    "session/set_config_option",
    "session/set_mode",
    "session/set_model",
];

/// The longest session id or string request id either side accepts (UTF-16 units, as the
/// TypeScript SDK counts them).
pub(crate) const MAX_ID_LENGTH: usize = 1024;

/// Whether a POST of `method` must carry `Acp-Session-Id`.
pub(crate) fn session_scoped(method: &str) -> bool {
    SESSION_SCOPED.contains(&method)
}

/// The message as JSON text (one line, no newline).
pub(crate) fn encode(message: &Message) -> Bytes {
    let mut out = Vec::with_capacity(128 + payload_len(message));
    message.encode_into(&mut out);
    out.pop();
    Bytes::from(out)
}

fn payload_len(message: &Message) -> usize {
    match message {
        Message::Request(r) => r.params.as_ref().map_or(0, RawJson::len),
        Message::Notification(n) => n.params.as_ref().map_or(0, RawJson::len),
        Message::Response(r) => match &r.body {
            ResponseBody::Result(raw) | ResponseBody::Error(raw) => raw.len(),
        },
    }
}

/// One message read from JSON text: the message, or what to answer instead.
pub(crate) fn decode(text: Bytes) -> Parsed {
    parse_line(&text)
}

/// The string `sessionId` of a request's or notification's params.
pub(crate) fn session_of_params(message: &Message) -> Option<Cow<'_, str>> {
    let params = match message {
        Message::Request(r) => r.params.as_ref(),
        Message::Notification(n) => n.params.as_ref(),
        Message::Response(_) => None,
    };
    params?.str_member("sessionId")
}

/// The string `sessionId` of a response's result.
pub(crate) fn session_of_result(message: &Message) -> Option<Cow<'_, str>> {
    match message {
        Message::Response(r) => match &r.body {
            ResponseBody::Result(raw) => raw.str_member("sessionId"),
            ResponseBody::Error(_) => None,
        },
        _ => None,
    }
}

/// Whether `id` is longer than [`MAX_ID_LENGTH`] UTF-16 units.
pub(crate) fn too_long(id: &str) -> bool {
    id.len() > MAX_ID_LENGTH && id.encode_utf16().count() > MAX_ID_LENGTH
}

/// Whether a request id is a string longer than [`MAX_ID_LENGTH`].
pub(crate) fn id_too_long(id: &Id) -> bool {
    match id {
        Id::String(text) => too_long(text),
        Id::Exact(text) if text.starts_with('"') => {
            serde_json::from_str::<String>(text).is_ok_and(|t| too_long(&t))
        }
        _ => false,
    }
}
