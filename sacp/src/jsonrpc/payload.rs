//! Raw JSON payloads: `params`, `result` and `error` kept as text until someone asks for a type.

use std::borrow::Cow;
use std::fmt;
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::Error;

/// A JSON value kept as its text, exactly as it arrived (or as it was serialized).
///
/// A payload read from the wire is a slice of the line it came in (no copy); forwarding it
/// writes the same bytes out again. It is parsed only when [`RawJson::parse`] is called.
///
/// A successor envelope built by [`crate::protocol::envelope::wrap`] is kept in its parts (the
/// method and the inner params) until its text is asked for: between neighbours in one process
/// it is unwrapped again without ever being written out or scanned, and a writer writes its
/// parts without building the whole text first.
///
/// Invariant: the text is one valid JSON value with no line breaks, so it can be written into a
/// newline-delimited frame as is.
#[derive(Clone)]
pub struct RawJson(Repr);

#[derive(Clone)]
enum Repr {
    Text(Bytes),
    Envelope(Arc<Envelope>),
}

/// `{"method":<quoted>,"params":<params>}` (without `params` when there are none).
struct Envelope {
    method: String,
    /// The method as a JSON string literal, when that is more than the method in quotes (it
    /// has characters to escape).
    escaped: Option<Box<str>>,
    params: Option<RawJson>,
    /// The whole text, built the first time it is asked for.
    text: OnceLock<Bytes>,
}

const ENVELOPE_HEAD: &[u8] = br#"{"method":"#;
const ENVELOPE_PARAMS: &[u8] = br#","params":"#;

impl Envelope {
    /// Appends the text, part by part.
    fn write_into(&self, out: &mut Vec<u8>) {
        self.write_head(out);
        if let Some(params) = &self.params {
            params.write_into(out);
        }
        out.push(b'}');
    }

    /// Appends what comes before the params.
    fn write_head(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(ENVELOPE_HEAD);
        match &self.escaped {
            Some(escaped) => out.extend_from_slice(escaped.as_bytes()),
            None => {
                out.push(b'"');
                out.extend_from_slice(self.method.as_bytes());
                out.push(b'"');
            }
        }
        if self.params.is_some() {
            out.extend_from_slice(ENVELOPE_PARAMS);
        }
    }

    fn len(&self) -> usize {
        let params = self
            .params
            .as_ref()
            .map_or(0, |p| ENVELOPE_PARAMS.len() + p.len());
        let method = self
            .escaped
            .as_ref()
            .map_or(self.method.len() + 2, |e| e.len());
        ENVELOPE_HEAD.len() + method + params + 1
    }

    fn text(&self) -> &Bytes {
        self.text.get_or_init(|| {
            let mut out = Vec::with_capacity(self.len());
            self.write_into(&mut out);
            Bytes::from(out)
        })
    }
}

impl RawJson {
    /// The JSON `null`.
    pub fn null() -> RawJson {
        RawJson::from_trusted(Bytes::from_static(b"null"))
    }

    /// The empty JSON object `{}`.
    pub fn empty_object() -> RawJson {
        RawJson::from_trusted(Bytes::from_static(b"{}"))
    }

    /// Serializes `value` (compact, so it never contains a line break).
    pub fn to_raw<T: Serialize + ?Sized>(value: &T) -> Result<RawJson, Error> {
        serde_json::to_vec(value)
            .map(|v| RawJson::from_trusted(Bytes::from(v)))
            .map_err(|e| Error::internal_error(format!("failed to serialize a payload: {e}")))
    }

    /// Checks that `text` is one JSON value and keeps it. Line breaks between tokens (the only
    /// place JSON allows them) are turned into spaces so the value fits on one line.
    pub fn from_string(text: impl Into<String>) -> Result<RawJson, Error> {
        let mut text: String = text.into();
        serde_json::from_str::<serde::de::IgnoredAny>(&text)
            .map_err(|e| Error::invalid_params(format!("not a JSON value: {e}")))?;
        if text.contains(['\n', '\r']) {
            text = text.replace(['\n', '\r'], " ");
        }
        Ok(RawJson::from_trusted(Bytes::from(text.into_bytes())))
    }

    /// Wraps bytes already known to be one JSON value without line breaks (a slice of a parsed
    /// line, or serde_json output).
    pub(crate) fn from_trusted(bytes: Bytes) -> RawJson {
        debug_assert!(!bytes.contains(&b'\n'));
        RawJson(Repr::Text(bytes))
    }

    /// The envelope `{"method": method, "params": params}`, kept in its parts.
    pub(crate) fn envelope(method: String, params: Option<RawJson>) -> RawJson {
        let plain = method.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\');
        let escaped = (!plain).then(|| {
            let mut quoted = Vec::with_capacity(method.len() + 8);
            super::id::write_json_string(&method, &mut quoted);
            // serde_json writes UTF-8.
            String::from_utf8(quoted)
                .unwrap_or_else(|_| "\"\"".to_owned())
                .into_boxed_str()
        });
        RawJson(Repr::Envelope(Arc::new(Envelope {
            method,
            escaped,
            params,
            text: OnceLock::new(),
        })))
    }

    /// The parts of a successor envelope built in this process (by the routing table or a proxy's
    /// runtime): the method and the params. `None` for any other payload (whatever its text).
    pub fn envelope_parts(&self) -> Option<(&str, Option<&RawJson>)> {
        match &self.0 {
            Repr::Envelope(e) => Some((&e.method, e.params.as_ref())),
            Repr::Text(_) => None,
        }
    }

    /// Appends the text to `out`; an envelope part by part.
    pub fn write_into(&self, out: &mut Vec<u8>) {
        match &self.0 {
            Repr::Text(bytes) => out.extend_from_slice(bytes),
            Repr::Envelope(e) => match e.text.get() {
                Some(text) => out.extend_from_slice(text),
                None => e.write_into(out),
            },
        }
    }

    /// Appends what an envelope has before its params (`None` for any other payload).
    pub(crate) fn write_envelope_head(&self, out: &mut Vec<u8>) -> Option<Option<&RawJson>> {
        match &self.0 {
            Repr::Envelope(e) => {
                e.write_head(out);
                Some(e.params.as_ref())
            }
            Repr::Text(_) => None,
        }
    }

    fn text(&self) -> &Bytes {
        match &self.0 {
            Repr::Text(bytes) => bytes,
            Repr::Envelope(e) => e.text(),
        }
    }

    /// A part of this payload (a whole JSON value inside it, the caller knows), sharing its
    /// buffer.
    pub(crate) fn slice(&self, range: std::ops::Range<usize>) -> RawJson {
        RawJson::from_trusted(self.text().slice(range))
    }

    /// The part of this payload that `part` (a value deserialized from [`RawJson::as_bytes`])
    /// spans, sharing this payload's buffer.
    pub(crate) fn slice_of(&self, part: &serde_json::value::RawValue) -> RawJson {
        let bytes = self.text();
        let text = part.get().as_bytes();
        let start = (text.as_ptr() as usize).wrapping_sub(bytes.as_ptr() as usize);
        match start.checked_add(text.len()) {
            Some(end) if end <= bytes.len() => RawJson::from_trusted(bytes.slice(start..end)),
            // Not borrowed from this payload after all: copy it.
            _ => RawJson::from_trusted(Bytes::copy_from_slice(text)),
        }
    }

    /// Deserializes the payload. A failure is reported as `-32602 Invalid params`, which is
    /// what a handler wants to answer when its params do not fit; a response decoder maps it
    /// to its own error.
    pub fn parse<T: DeserializeOwned>(&self) -> Result<T, Error> {
        serde_json::from_slice(self.as_bytes()).map_err(|e| Error::invalid_params(e.to_string()))
    }

    /// The JSON text.
    pub fn as_str(&self) -> &str {
        // Every constructor stores UTF-8: serde_json output, checked strings, or slices of a
        // line that serde_json validated as UTF-8 while parsing it.
        std::str::from_utf8(self.as_bytes()).unwrap_or("null")
    }

    /// This payload in bytes of its own. A payload read from the wire is a slice of the
    /// buffer it was read into, and keeps that whole buffer alive; one kept long (a history,
    /// a cache) should keep only its own bytes. Text is copied; an envelope, whose params may
    /// be such a slice, is given as its whole text (built once, its own).
    #[must_use]
    pub fn unshared(&self) -> RawJson {
        match &self.0 {
            Repr::Text(bytes) => RawJson::from_trusted(Bytes::copy_from_slice(bytes)),
            Repr::Envelope(e) => RawJson::from_trusted(e.text().clone()),
        }
    }

    /// The JSON text, as shared bytes (a reference count, not a copy).
    pub(crate) fn bytes(&self) -> Bytes {
        match &self.0 {
            Repr::Text(bytes) => bytes.clone(),
            Repr::Envelope(e) => e.text().clone(),
        }
    }

    /// The JSON text as bytes.
    pub fn as_bytes(&self) -> &[u8] {
        self.text()
    }

    /// Length of the JSON text in bytes.
    pub fn len(&self) -> usize {
        match &self.0 {
            Repr::Text(bytes) => bytes.len(),
            Repr::Envelope(e) => e.len(),
        }
    }

    /// Whether the text is empty (never true for a valid payload).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The value of the top-level member `key`, when this is an object that has it as a
    /// string with no escape in it: read from the text without parsing it (a scan up to the
    /// member). `None` otherwise, where a caller that must know parses instead.
    pub fn plain_str(&self, key: &str) -> Option<&str> {
        let text = self.as_bytes();
        let span = super::member::plain_string(text, key)?;
        std::str::from_utf8(&text[span]).ok()
    }

    /// The value of the top-level member `key`, when this is an object that has it as a
    /// string: read off the text when it is plain ([`RawJson::plain_str`]), and when the text
    /// cannot hold the member (neither `key` nor an escape in it); parsed otherwise.
    pub fn str_member(&self, key: &str) -> Option<Cow<'_, str>> {
        if let Some(plain) = self.plain_str(key) {
            return Some(Cow::Borrowed(plain));
        }
        let text = self.as_bytes();
        if memchr::memchr(b'\\', text).is_none()
            && memchr::memmem::find(text, key.as_bytes()).is_none()
        {
            return None;
        }
        let mut members: serde_json::Map<String, serde_json::Value> = self.parse().ok()?;
        match members.remove(key)? {
            serde_json::Value::String(value) => Some(Cow::Owned(value)),
            _ => None,
        }
    }

    /// This object with the value of its top-level member `key` — a string with no escape in
    /// it ([`RawJson::plain_str`]) — replaced by the string `value`: every other byte as it was,
    /// nothing parsed. `None` where `key` is not such a member.
    pub fn with_plain_str(&self, key: &str, value: &str) -> Option<RawJson> {
        let text = self.as_bytes();
        let span = super::member::plain_string(text, key)?;
        // One allocation: room for the value quoted, unless it has much to escape.
        let mut out = Vec::with_capacity(text.len() - span.len() + value.len());
        write_with_str(text, span, value, &mut out);
        Some(RawJson::from_trusted(Bytes::from(out)))
    }

    /// [`RawJson::with_plain_str`], written into `arena`: no allocation of its own, and a
    /// clone shares the arena's buffer (see [`Arena`](super::Arena)).
    pub fn with_plain_str_in(
        &self,
        key: &str,
        value: &str,
        arena: &mut super::Arena,
    ) -> Option<RawJson> {
        let text = self.as_bytes();
        let span = super::member::plain_string(text, key)?;
        let hint = text.len() - span.len() + value.len();
        let renamed = arena.bytes(hint, |out| write_with_str(text, span, value, out));
        Some(RawJson::from_trusted(renamed))
    }

    /// The value of the top-level member `key`, when this is an object that has it: found by
    /// a scan of the text, shared with this payload (no copy).
    pub fn member(&self, key: &str) -> Option<RawJson> {
        match super::member::slot(self.as_bytes(), key)? {
            super::member::Slot::Value(span) => Some(self.slice(span)),
            super::member::Slot::Absent { .. } => None,
        }
    }

    /// This object with its top-level member `key` set to `value`: its value replaced where
    /// it has the member, the member added at its end where it has not — every other byte as
    /// it was, nothing parsed. `None` where this is not an object.
    pub fn with_member(&self, key: &str, value: &RawJson) -> Option<RawJson> {
        let text = self.as_bytes();
        let slot = super::member::slot(text, key)?;
        let mut out = Vec::with_capacity(text.len() + key.len() + value.len() + 4);
        match slot {
            super::member::Slot::Value(span) => {
                out.extend_from_slice(&text[..span.start]);
                value.write_into(&mut out);
                out.extend_from_slice(&text[span.end..]);
            }
            super::member::Slot::Absent { close, empty } => {
                out.extend_from_slice(&text[..close]);
                if !empty {
                    out.push(b',');
                }
                super::id::write_json_string(key, &mut out);
                out.push(b':');
                value.write_into(&mut out);
                out.extend_from_slice(&text[close..]);
            }
        }
        Some(RawJson::from_trusted(Bytes::from(out)))
    }

    /// The value at `path` (a member of a member of …), when every object on the way has it.
    pub fn member_at(&self, path: &[&str]) -> Option<RawJson> {
        let (first, rest) = path.split_first()?;
        let value = self.member(first)?;
        if rest.is_empty() {
            Some(value)
        } else {
            value.member_at(rest)
        }
    }

    /// This object with the value at `path` set to `value`: each object on the way kept as it
    /// was but for the one member, made (`{}`) where it is missing or is not an object.
    /// `None` where this is not an object, or `path` is empty.
    pub fn with_member_at(&self, path: &[&str], value: &RawJson) -> Option<RawJson> {
        let (first, rest) = path.split_first()?;
        if rest.is_empty() {
            return self.with_member(first, value);
        }
        let inner = self
            .member(first)
            .filter(|m| m.as_bytes().first() == Some(&b'{'))
            .unwrap_or_else(RawJson::empty_object);
        self.with_member(first, &inner.with_member_at(rest, value)?)
    }

    /// Whether this is the JSON `null`.
    pub fn is_null(&self) -> bool {
        match &self.0 {
            Repr::Text(bytes) => &bytes[..] == b"null",
            Repr::Envelope(_) => false,
        }
    }
}

/// `text` (an object) with the string at `span` (its content, between the quotes) replaced by
/// `value`, written to `out`: what [`RawJson::with_plain_str`] and
/// [`RawJson::with_plain_str_in`] make, each into its own buffer.
fn write_with_str(
    text: &[u8],
    span: std::ops::Range<usize>,
    value: &str,
    out: &mut impl bytes::BufMut,
) {
    out.put_slice(&text[..span.start - 1]);
    super::id::write_json_string_into(value, out);
    out.put_slice(&text[span.end + 1..]);
}

/// Equal texts are equal payloads, however they are kept.
impl PartialEq for RawJson {
    fn eq(&self, other: &RawJson) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for RawJson {}

impl fmt::Debug for RawJson {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const SHOWN: usize = 200;
        let text = self.as_str();
        if text.len() <= SHOWN {
            write!(f, "RawJson({text})")
        } else {
            let cut = (0..=SHOWN)
                .rev()
                .find(|i| text.is_char_boundary(*i))
                .unwrap_or(0);
            write!(f, "RawJson({}… {} bytes)", &text[..cut], text.len())
        }
    }
}

/// As a member of a serialized value: the same text, in place.
impl Serialize for RawJson {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let raw: &serde_json::value::RawValue =
            serde_json::from_str(self.as_str()).map_err(serde::ser::Error::custom)?;
        raw.serialize(serializer)
    }
}

/// As a member of a deserialized value: the member's text, as it was.
impl<'de> serde::Deserialize<'de> for RawJson {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = Box::<serde_json::value::RawValue>::deserialize(deserializer)?;
        let mut text = String::from(raw.get());
        if text.contains(['\n', '\r']) {
            // Only between tokens, in valid JSON: spaces do as well, and keep it one line.
            text = text.replace(['\n', '\r'], " ");
        }
        Ok(RawJson::from_trusted(Bytes::from(text.into_bytes())))
    }
}

impl fmt::Display for RawJson {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unshared_payload_keeps_nothing_of_the_buffer_it_was_read_from() {
        let line =
            Bytes::from(br#"{"result":{"stopReason":"end_turn"},"pad":"xxxxxxxx"}"#.to_vec());
        let answer = RawJson::from_trusted(line.clone())
            .member("result")
            .expect("a member");
        assert!(!line.is_unique(), "a member is a slice of the line");
        let kept = answer.unshared();
        drop(answer);
        assert_eq!(kept.as_str(), r#"{"stopReason":"end_turn"}"#);
        assert!(line.is_unique(), "the copy holds none of the line");

        // An envelope around such a slice: the same.
        let inner = RawJson::from_trusted(line.clone())
            .member("result")
            .expect("a member");
        let wrapped = RawJson::envelope("_x/y".to_owned(), Some(inner));
        assert!(!line.is_unique(), "the envelope holds a slice of the line");
        let kept = wrapped.unshared();
        drop(wrapped);
        assert_eq!(
            kept.as_str(),
            r#"{"method":"_x/y","params":{"stopReason":"end_turn"}}"#
        );
        assert!(
            line.is_unique(),
            "the envelope's text holds none of the line"
        );
    }

    #[test]
    fn a_member_is_read_and_set_in_place() {
        let raw = RawJson::from_string(r#"{"b": {"x":[1,"}"]}, "a":2.50}"#).unwrap();
        assert_eq!(raw.member("b").unwrap().as_str(), r#"{"x":[1,"}"]}"#);
        assert!(raw.member("c").is_none());
        let one = RawJson::from_string("1").unwrap();
        let set = raw.with_member("a", &one).unwrap();
        assert_eq!(set.as_str(), r#"{"b": {"x":[1,"}"]}, "a":1}"#);
        let added = raw.with_member("c\"", &one).unwrap();
        assert_eq!(added.as_str(), r#"{"b": {"x":[1,"}"]}, "a":2.50,"c\"":1}"#);
        let empty = RawJson::empty_object().with_member("c", &one).unwrap();
        assert_eq!(empty.as_str(), r#"{"c":1}"#);
        assert!(one.with_member("c", &one).is_none());
        let deep = raw.with_member_at(&["b", "y", "z"], &one).unwrap();
        assert_eq!(
            deep.as_str(),
            r#"{"b": {"x":[1,"}"],"y":{"z":1}}, "a":2.50}"#
        );
        assert_eq!(deep.member_at(&["b", "y", "z"]).unwrap().as_str(), "1");
        let over = raw.with_member_at(&["a", "n"], &one).unwrap();
        assert_eq!(over.as_str(), r#"{"b": {"x":[1,"}"]}, "a":{"n":1}}"#);
        assert!(raw.member_at(&["b", "x", "y"]).is_none());
    }

    #[test]
    fn from_string_validates_and_flattens_line_breaks() {
        let raw = RawJson::from_string("{\n  \"a\": \"x\\ny\"\r\n}").unwrap();
        assert_eq!(raw.as_str(), "{   \"a\": \"x\\ny\"  }");
        assert_eq!(raw.parse::<serde_json::Value>().unwrap()["a"], "x\ny");
        assert_eq!(RawJson::from_string("{").unwrap_err().code, -32602);
    }

    #[test]
    fn a_string_member_read_off_the_text_is_the_one_a_parse_finds() {
        let parsed = |raw: &RawJson| -> Option<String> {
            let value: serde_json::Value = raw.parse().ok()?;
            value.get("sessionId")?.as_str().map(str::to_owned)
        };
        let cases = [
            r#"{"sessionId":"s-1","prompt":[{"type":"text","text":"hi"}]}"#,
            r#"{"prompt":[{"sessionId":"inner"}],"sessionId":"s-2"}"#,
            r#"{"prompt":[{"sessionId":"inner"}]}"#,
            r#"{"sessionId":"s\"3"}"#,
            r#"{"session\u0049d":"s-4"}"#,
            r#"{"sessionId":7}"#,
            r#"{"sessionId":null,"x":"a\nb"}"#,
            r#"{"protocolVersion":1}"#,
            r#"[1,2]"#,
            r#""sessionId""#,
        ];
        for case in cases {
            let raw = RawJson::from_string(case).unwrap();
            let read = raw.str_member("sessionId").map(Cow::into_owned);
            assert_eq!(read, parsed(&raw), "{case}");
        }
        let raw = RawJson::from_string(r#"{"session\u0049d":"s-4"}"#).unwrap();
        assert_eq!(raw.str_member("sessionId").as_deref(), Some("s-4"));
        let plain = RawJson::from_string(r#"{"sessionId":"s-5"}"#).unwrap();
        assert!(matches!(
            plain.str_member("sessionId"),
            Some(Cow::Borrowed("s-5"))
        ));
    }

    #[test]
    fn a_plain_member_is_read_and_replaced_without_touching_the_rest() {
        let raw = RawJson::from_string(r#"{ "a": [1, {"b":"c"}],  "id" :"s1","z":null}"#).unwrap();
        assert_eq!(raw.plain_str("id"), Some("s1"));
        let renamed = raw.with_plain_str("id", "s1@t\"x").unwrap();
        assert_eq!(
            renamed.as_str(),
            r#"{ "a": [1, {"b":"c"}],  "id" :"s1@t\"x","z":null}"#
        );
        assert_eq!(
            renamed.parse::<serde_json::Value>().unwrap()["id"],
            "s1@t\"x"
        );
        assert_eq!(raw.plain_str("a"), None);
        assert_eq!(raw.with_plain_str("missing", "x"), None);
    }

    #[test]
    fn serializes_compactly() {
        let raw = RawJson::to_raw(&serde_json::json!({"k": [1, 2]})).unwrap();
        assert_eq!(raw.as_str(), r#"{"k":[1,2]}"#);
    }
}
