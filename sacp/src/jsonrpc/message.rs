//! The wire message: a JSON-RPC 2.0 envelope whose payload stays raw.
//!
//! Parsing a line reads the envelope only (`jsonrpc`, `id`, `method`) and records where
//! `params`, `result` or `error` sit in the line; those payloads are slices of the line buffer,
//! never parsed or copied. Encoding writes the envelope around the same bytes.
//!
//! JSON-RPC 2.0 to the letter, at every edge (documented here because peers differ):
//! - `jsonrpc` must be the string `"2.0"`, however it is escaped (`"2.\u0030"` is `"2.0"`); a
//!   message without it, or with another value, is refused `-32600` (with the request's id when
//!   it has one);
//! - `params` must be an object or an array: a number, string or boolean is refused `-32600`
//!   (with the request's id); `null` is taken as absent, as some peers send it;
//! - ids are strings, numbers or `null`, echoed exactly as they came (a 2^70 or a fraction
//!   included: see [`Id`]);
//! - members the envelope does not define are ignored;
//! - batches (arrays) are not part of ACP and are refused with `-32600`.

use bytes::Bytes;
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

use super::id::write_json_string;
use super::{Error, Id, RawJson};

/// One JSON-RPC message.
#[derive(Clone, Debug, PartialEq)]
pub enum Message {
    /// A request: expects exactly one response with the same id.
    Request(Request),
    /// A notification: never answered.
    Notification(Notification),
    /// A response to a request.
    Response(Response),
}

/// A request as it travels.
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    /// The id the sender chose.
    pub id: Id,
    /// The method name.
    pub method: String,
    /// The params, raw; `None` when the member was absent.
    pub params: Option<RawJson>,
}

/// A notification as it travels.
#[derive(Clone, Debug, PartialEq)]
pub struct Notification {
    /// The method name.
    pub method: String,
    /// The params, raw; `None` when the member was absent.
    pub params: Option<RawJson>,
}

/// A response as it travels.
#[derive(Clone, Debug, PartialEq)]
pub struct Response {
    /// The id of the request it answers.
    pub id: Id,
    /// The `result` or the `error` object, raw.
    pub body: ResponseBody,
}

/// What a response carries, raw, so that forwarding it keeps every byte.
#[derive(Clone, Debug, PartialEq)]
pub enum ResponseBody {
    /// The `result` member.
    Result(RawJson),
    /// The `error` member (a JSON-RPC error object).
    Error(RawJson),
}

impl Response {
    /// A success response.
    pub fn ok(id: Id, result: RawJson) -> Response {
        Response {
            id,
            body: ResponseBody::Result(result),
        }
    }

    /// An error response.
    pub fn error(id: Id, error: &Error) -> Response {
        let raw = RawJson::to_raw(error).unwrap_or_else(|_| RawJson::null());
        Response {
            id,
            body: ResponseBody::Error(raw),
        }
    }

    /// The result, or the error object decoded. An error object that is not one (no integer
    /// `code`, say) becomes an internal error carrying the raw text as `data`.
    pub fn into_result(self) -> Result<RawJson, Error> {
        match self.body {
            ResponseBody::Result(raw) => Ok(raw),
            ResponseBody::Error(raw) => Err(decode_error_object(&raw)),
        }
    }
}

pub(crate) fn decode_error_object(raw: &RawJson) -> Error {
    raw.parse::<Error>().unwrap_or_else(|e| {
        Error::internal_error(format!("the peer sent a malformed error object: {e}"))
            .with_data(raw.as_str())
    })
}

impl Message {
    /// The method, for requests and notifications.
    pub fn method(&self) -> Option<&str> {
        match self {
            Message::Request(r) => Some(&r.method),
            Message::Notification(n) => Some(&n.method),
            Message::Response(_) => None,
        }
    }

    /// Reads one message from its JSON text (a line, an HTTP body): the message, or the error
    /// response to answer it with (with the request's id when it could be read).
    ///
    /// A line break in the text (an HTTP body or a WebSocket frame may have them, between
    /// tokens, the only place JSON allows them) becomes a space: the message then fits on one
    /// line wherever it goes next (a stdio hop's framing is by lines).
    pub fn parse(text: &[u8]) -> Result<Message, Response> {
        let mut text = Bytes::copy_from_slice(text);
        if memchr::memchr2(b'\n', b'\r', &text).is_some() {
            let flat: Vec<u8> = text
                .iter()
                .map(|&b| if b == b'\n' || b == b'\r' { b' ' } else { b })
                .collect();
            text = Bytes::from(flat);
        }
        match parse_line(&text) {
            Parsed::Message(message) => Ok(message),
            Parsed::Invalid { id, error } | Parsed::BadResponse { id, error } => {
                Err(Response::error(id, &error))
            }
        }
    }

    /// Appends the message as one line (with its trailing `\n`) to `out`.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        if let Some(payload) = self.encode_head(out) {
            payload.write_into(out);
        }
        out.extend_from_slice(Self::TAIL);
    }

    /// What ends every encoded message, after its payload.
    pub(crate) const TAIL: &'static [u8] = b"}\n";

    /// Appends the message up to its payload (`params`, `result` or `error`), which it returns
    /// to be written after it, followed by [`Message::TAIL`]: so that a large payload can be
    /// written from where it is, without a copy.
    pub(crate) fn encode_head(&self, out: &mut Vec<u8>) -> Option<&RawJson> {
        out.extend_from_slice(br#"{"jsonrpc":"2.0""#);
        match self {
            Message::Request(r) => {
                out.extend_from_slice(br#","id":"#);
                r.id.write_json(out);
                write_method(&r.method, r.params.as_ref(), out)
            }
            Message::Notification(n) => write_method(&n.method, n.params.as_ref(), out),
            Message::Response(r) => {
                out.extend_from_slice(br#","id":"#);
                r.id.write_json(out);
                let (key, raw) = match &r.body {
                    ResponseBody::Result(raw) => (&br#","result":"#[..], raw),
                    ResponseBody::Error(raw) => (&br#","error":"#[..], raw),
                };
                out.extend_from_slice(key);
                Some(raw)
            }
        }
    }

    /// The message as one line of text, without the trailing newline.
    pub fn to_line(&self) -> String {
        let mut out = Vec::new();
        self.encode_into(&mut out);
        out.pop();
        String::from_utf8(out).unwrap_or_default()
    }
}

/// Writes the method, and the `params` key when there are params (returned).
fn write_method<'a>(
    method: &str,
    params: Option<&'a RawJson>,
    out: &mut Vec<u8>,
) -> Option<&'a RawJson> {
    out.extend_from_slice(br#","method":"#);
    write_json_string(method, out);
    if params.is_some() {
        out.extend_from_slice(br#","params":"#);
    }
    params
}

/// Whether `params` (its text) are there and structured: `Ok(true)` for an object or an array,
/// `Ok(false)` for none or `null` (taken as absent), an invalid-request error for anything else.
pub(crate) fn structured(params: Option<&str>) -> Result<bool, Error> {
    let Some(text) = params else {
        return Ok(false);
    };
    match text.trim_start().as_bytes().first() {
        Some(b'{' | b'[') => Ok(true),
        Some(b'n') => Ok(false),
        _ => Err(Error::invalid_request(format!(
            "params must be an object or an array, not {text}"
        ))),
    }
}

/// What reading one line produced.
#[derive(Debug)]
pub(crate) enum Parsed {
    /// A well-formed message.
    Message(Message),
    /// Something that must be answered with an error response (`id` is `Null` when it could not
    /// be recovered): not JSON, not an object, not a valid request.
    Invalid { id: Id, error: Error },
    /// A response that is not well formed: nothing is answered, but a request waiting on `id`
    /// learns about it.
    BadResponse { id: Id, error: Error },
}

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow, default, deserialize_with = "present")]
    jsonrpc: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    method: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    params: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    result: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    error: Option<&'a RawValue>,
}

/// `Some` for a member that is present, even when its value is `null`.
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&'de RawValue>::deserialize(d).map(Some)
}

/// A message's id, which must be a string, an integer or `null`.
#[inline]
fn id_of(raw: &RawValue) -> Result<Id, Error> {
    Id::from_raw(raw.get()).ok_or_else(|| {
        Error::invalid_request(format!(
            "id must be a string, an integer or null, not {}",
            raw.get()
        ))
    })
}

/// Whether a message's `jsonrpc` member is `"2.0"`, as it must be.
#[inline]
fn version_of(jsonrpc: Option<&RawValue>) -> Result<(), Error> {
    match jsonrpc {
        // The fast path: the text of every message written as peers write it.
        Some(v) if v.get() == r#""2.0""# => Ok(()),
        Some(v) => match serde_json::from_str::<String>(v.get()) {
            Ok(text) if text == "2.0" => Ok(()),
            _ => Err(Error::invalid_request(format!(
                r#"jsonrpc must be "2.0", not {}"#,
                v.get()
            ))),
        },
        None => Err(Error::invalid_request(
            r#"a JSON-RPC 2.0 message needs "jsonrpc": "2.0""#,
        )),
    }
}

/// Parses one line (without its newline). The payloads of the result share `line`'s buffer.
pub(crate) fn parse_line(line: &Bytes) -> Parsed {
    let invalid = |id: Id, error: Error| Parsed::Invalid { id, error };
    // UTF-8 is checked once for the whole line (a vectorized pass); parsing from a `str` then
    // skips the per-string and per-payload checks a parse from bytes makes.
    let text = match std::str::from_utf8(line) {
        Ok(text) => text,
        Err(e) => return invalid(Id::Null, Error::parse_error(format!("not UTF-8: {e}"))),
    };
    let first = line.iter().find(|b| !b.is_ascii_whitespace()).copied();
    if first != Some(b'{') {
        return match serde_json::from_str::<serde::de::IgnoredAny>(text) {
            Ok(_) => invalid(
                Id::Null,
                Error::invalid_request("a message must be a JSON object"),
            ),
            Err(e) => invalid(Id::Null, Error::parse_error(e)),
        };
    }
    let env: Envelope<'_> = match serde_json::from_str(text) {
        Ok(env) => env,
        Err(e) if e.is_data() => return invalid(Id::Null, Error::invalid_request(e)),
        Err(e) => return invalid(Id::Null, Error::parse_error(e)),
    };
    let slice = |raw: &RawValue| -> RawJson {
        let text = raw.get();
        let start = text.as_ptr() as usize - line.as_ptr() as usize;
        RawJson::from_trusted(line.slice(start..start + text.len()))
    };

    // The id, if any, is read first so that every later error can name it.
    let id = match env.id.map(id_of).transpose() {
        Ok(id) => id,
        Err(error) => return invalid(Id::Null, error),
    };
    if let Err(error) = version_of(env.jsonrpc) {
        return match (env.method, id) {
            (None, Some(id)) => Parsed::BadResponse { id, error },
            (_, id) => invalid(id.unwrap_or(Id::Null), error),
        };
    }

    if let Some(method) = env.method {
        let Ok(method) = serde_json::from_str::<String>(method.get()) else {
            return invalid(
                id.unwrap_or(Id::Null),
                Error::invalid_request(format!("method must be a string, not {}", method.get())),
            );
        };
        let params = match structured(env.params.map(|raw| raw.get())) {
            Ok(true) => env.params.map(slice),
            Ok(false) => None,
            Err(error) => return invalid(id.unwrap_or(Id::Null), error),
        };
        return Parsed::Message(match id {
            Some(id) => Message::Request(Request { id, method, params }),
            None => Message::Notification(Notification { method, params }),
        });
    }

    let Some(id) = id else {
        return invalid(
            Id::Null,
            Error::invalid_request(
                "a message needs a method (request, notification) or an id (response)",
            ),
        );
    };
    match (env.result, env.error) {
        (Some(result), None) => Parsed::Message(Message::Response(Response::ok(id, slice(result)))),
        (None, Some(error)) => Parsed::Message(Message::Response(Response {
            id,
            body: ResponseBody::Error(slice(error)),
        })),
        (Some(_), Some(_)) => Parsed::BadResponse {
            id,
            error: Error::internal_error("the peer's response has both result and error"),
        },
        (None, None) => Parsed::BadResponse {
            id,
            error: Error::internal_error("the peer's response has neither result nor error"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Parsed {
        parse_line(&Bytes::copy_from_slice(text.as_bytes()))
    }

    fn message(text: &str) -> Message {
        match parse(text) {
            Parsed::Message(m) => m,
            other => panic!("{text}: {other:?}"),
        }
    }

    fn invalid_code(text: &str) -> (Id, i64) {
        match parse(text) {
            Parsed::Invalid { id, error } => (id, error.code),
            other => panic!("{text}: {other:?}"),
        }
    }

    /// Found by the `message` fuzz target: a body with line breaks between its tokens (an
    /// HTTP body, a WebSocket frame) was written on as several lines, breaking a stdio hop's
    /// framing.
    #[test]
    fn a_body_with_line_breaks_is_written_as_one_line() {
        let body =
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":{\"a\":\r\n\n[1,\n2]}}\n";
        let m = Message::parse(body).expect("a message");
        let line = m.to_line();
        assert!(!line.contains(['\n', '\r']), "{line:?}");
        let Message::Request(r) = &m else { panic!() };
        let params: serde_json::Value = r.params.as_ref().unwrap().parse().unwrap();
        assert_eq!(params, serde_json::json!({"a": [1, 2]}));
    }

    #[test]
    fn request_round_trips_byte_for_byte() {
        let text = r#"{"jsonrpc":"2.0","id":"a-1","method":"session/prompt","params":{"x": [1, 2.50, "\u00e9"]}}"#;
        let m = message(text);
        let Message::Request(r) = &m else { panic!() };
        assert_eq!(r.id, Id::from("a-1"));
        assert_eq!(
            r.params.as_ref().unwrap().as_str(),
            r#"{"x": [1, 2.50, "\u00e9"]}"#
        );
        assert_eq!(m.to_line(), text);
    }

    #[test]
    fn notification_response_and_error() {
        assert!(
            matches!(message(r#"{"jsonrpc":"2.0","method":"n"}"#), Message::Notification(n) if n.params.is_none())
        );
        let Message::Response(r) = message(r#"{"jsonrpc":"2.0","id":3,"result":null}"#) else {
            panic!()
        };
        assert_eq!(r.id, Id::Number(3));
        assert!(r.clone().into_result().unwrap().is_null());
        let Message::Response(r) =
            message(r#"{"jsonrpc":"2.0","id":4,"error":{"code":-32000,"message":"m","data":[1]}}"#)
        else {
            panic!()
        };
        let e = r.into_result().unwrap_err();
        assert_eq!((e.code, e.data), (-32000, Some(serde_json::json!([1]))));
    }

    #[test]
    fn null_id_is_a_request_id_not_a_notification() {
        assert!(
            matches!(message(r#"{"jsonrpc":"2.0","id":null,"method":"m"}"#), Message::Request(r) if r.id == Id::Null)
        );
    }

    #[test]
    fn method_with_escapes() {
        let m = message(r#"{"jsonrpc":"2.0","method":"a\/b"}"#);
        assert_eq!(m.method(), Some("a/b"));
    }

    #[test]
    fn bad_input_gets_the_specified_code() {
        assert_eq!(invalid_code("{not json"), (Id::Null, -32700));
        assert_eq!(invalid_code("nope"), (Id::Null, -32700));
        assert_eq!(invalid_code("[1,2]"), (Id::Null, -32600));
        assert_eq!(invalid_code("42"), (Id::Null, -32600));
        assert_eq!(invalid_code(r#"{"jsonrpc":"2.0"}"#), (Id::Null, -32600));
        assert_eq!(
            invalid_code(r#"{"jsonrpc":"2.0","id":{},"method":"m"}"#),
            (Id::Null, -32600)
        );
        assert_eq!(
            invalid_code(r#"{"jsonrpc":"2.0","id":5,"method":7}"#),
            (Id::Number(5), -32600)
        );
        assert_eq!(
            invalid_code(r#"{"jsonrpc":"1.0","id":5,"method":"m"}"#),
            (Id::Number(5), -32600)
        );
        assert_eq!(
            invalid_code(r#"{"id":1,"id":2,"method":"m"}"#),
            (Id::Null, -32600)
        );
    }

    #[test]
    fn malformed_responses_are_reported_not_answered() {
        assert!(matches!(
            parse(r#"{"jsonrpc":"2.0","id":1}"#),
            Parsed::BadResponse {
                id: Id::Number(1),
                ..
            }
        ));
        assert!(matches!(
            parse(r#"{"jsonrpc":"2.0","id":1,"result":1,"error":{}}"#),
            Parsed::BadResponse { .. }
        ));
    }

    #[test]
    fn jsonrpc_must_be_the_string_2_0_however_escaped() {
        assert!(matches!(
            message(r#"{"jsonrpc":"2.\u0030","id":1,"method":"m"}"#),
            Message::Request(_)
        ));
        assert_eq!(
            invalid_code(r#"{"id":1,"method":"initialize","params":{}}"#),
            (Id::Number(1), -32600),
            "a message without jsonrpc is refused"
        );
        assert_eq!(
            invalid_code(r#"{"jsonrpc":2.0,"method":"n"}"#),
            (Id::Null, -32600)
        );
        assert!(matches!(
            parse(r#"{"id":1,"result":{}}"#),
            Parsed::BadResponse {
                id: Id::Number(1),
                ..
            }
        ));
    }

    #[test]
    fn params_must_be_structured_and_null_is_absent() {
        for params in ["-1", r#""text""#, "true", "false", "3.5"] {
            let request = format!(r#"{{"jsonrpc":"2.0","id":"r","method":"m","params":{params}}}"#);
            assert_eq!(invalid_code(&request), (Id::from("r"), -32600), "{params}");
            let notification = format!(r#"{{"jsonrpc":"2.0","method":"m","params":{params}}}"#);
            assert_eq!(invalid_code(&notification), (Id::Null, -32600), "{params}");
        }
        let m = message(r#"{"jsonrpc":"2.0","id":1,"method":"m","params":null}"#);
        assert!(matches!(&m, Message::Request(r) if r.params.is_none()));
        assert_eq!(m.to_line(), r#"{"jsonrpc":"2.0","id":1,"method":"m"}"#);
        let m = message(r#"{"jsonrpc":"2.0","method":"m","params": [1]}"#);
        assert!(
            matches!(&m, Message::Notification(n) if n.params.as_ref().unwrap().as_str() == "[1]")
        );
    }

    #[test]
    fn encoding_escapes_method_and_keeps_absent_params_absent() {
        let m = Message::Notification(Notification {
            method: "a\"b".into(),
            params: None,
        });
        assert_eq!(m.to_line(), r#"{"jsonrpc":"2.0","method":"a\"b"}"#);
    }
}
