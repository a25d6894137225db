//! What both profiles and both roles share: the headers, which methods are session-scoped,
//! and reading the few fields of a message that routing needs.

use std::borrow::Cow;

use bytes::Bytes;

use crate::jsonrpc::message::{Parsed, parse_line};
use crate::jsonrpc::{Arena, Id, Message, RawJson, ResponseBody};

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

/// Where a writer encodes its messages one after another: each message's text is a slice of
/// one buffer of an [`Arena`] (used again once the texts written in it are gone, as a frame's
/// is once the WebSocket has it in its own buffer), so a message costs no allocation.
#[derive(Debug)]
pub(crate) struct Texts {
    /// The message being encoded (kept for its capacity).
    line: Vec<u8>,
    /// The texts given out, and room for the next.
    arena: Arena,
}

impl Default for Texts {
    fn default() -> Self {
        Texts {
            line: Vec::new(),
            arena: Arena::new(Self::BUFFER),
        }
    }
}

impl Texts {
    /// The message as JSON text (one line, no newline).
    pub(crate) fn encode(&mut self, message: &Message) -> Bytes {
        self.line.clear();
        message.encode_into(&mut self.line);
        self.line.pop();
        // A text much larger than usual gets bytes of its own: the writer keeps no room for
        // it.
        if self.line.len() > Self::KEPT {
            return Bytes::from(std::mem::take(&mut self.line));
        }
        let line = &self.line;
        self.arena
            .bytes(line.len(), |buffer| buffer.extend_from_slice(line))
    }

    /// The room a writer keeps for its next message, at most.
    const KEPT: usize = 64 * 1024;

    /// The size of the buffers texts are written into.
    const BUFFER: usize = 16 * 1024;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonrpc::Notification;

    fn update(text: &str) -> Message {
        Message::Notification(Notification {
            method: "session/update".to_owned(),
            params: Some(RawJson::from_string(format!(r#"{{"text":"{text}"}}"#)).unwrap()),
        })
    }

    #[test]
    fn texts_held_or_gone_are_each_the_message_encoded() {
        let mut texts = Texts::default();
        let first = texts.encode(&update("one"));
        assert_eq!(
            &first[..],
            br#"{"jsonrpc":"2.0","method":"session/update","params":{"text":"one"}}"#
        );
        // Held while the next ones are written: neither is overwritten.
        let held: Vec<Bytes> = (0..100)
            .map(|i| texts.encode(&update(&i.to_string())))
            .collect();
        for (i, text) in held.iter().enumerate() {
            assert_eq!(*text, encode(&update(&i.to_string())));
        }
        assert_eq!(first, encode(&update("one")));
        drop((first, held));
        // Gone: the buffer is written again, and the texts are still whole.
        for i in 0..1000 {
            let text = texts.encode(&update(&"y".repeat(i % 300)));
            assert_eq!(text, encode(&update(&"y".repeat(i % 300))));
        }
    }

    #[test]
    fn a_text_larger_than_the_room_kept_gets_bytes_of_its_own() {
        let mut texts = Texts::default();
        let large = update(&"x".repeat(Texts::KEPT + 1));
        let text = texts.encode(&large);
        assert_eq!(text, encode(&large));
        assert_eq!(texts.line.capacity(), 0);
    }
}
