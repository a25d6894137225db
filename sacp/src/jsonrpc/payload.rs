//! Raw JSON payloads: `params`, `result` and `error` kept as text until someone asks for a type.

use std::fmt;

use bytes::Bytes;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::Error;

/// A JSON value kept as its text, exactly as it arrived (or as it was serialized).
///
/// A payload read from the wire is a slice of the line it came in (no copy); forwarding it
/// writes the same bytes out again. It is parsed only when [`RawJson::parse`] is called.
///
/// Invariant: the text is one valid JSON value with no line breaks, so it can be written into a
/// newline-delimited frame as is.
#[derive(Clone, PartialEq, Eq)]
pub struct RawJson(Bytes);

impl RawJson {
    /// The JSON `null`.
    pub fn null() -> RawJson {
        RawJson(Bytes::from_static(b"null"))
    }

    /// The empty JSON object `{}`.
    pub fn empty_object() -> RawJson {
        RawJson(Bytes::from_static(b"{}"))
    }

    /// Serializes `value` (compact, so it never contains a line break).
    pub fn to_raw<T: Serialize + ?Sized>(value: &T) -> Result<RawJson, Error> {
        serde_json::to_vec(value)
            .map(|v| RawJson(Bytes::from(v)))
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
        Ok(RawJson(Bytes::from(text.into_bytes())))
    }

    /// Wraps bytes already known to be one JSON value without line breaks (a slice of a parsed
    /// line, or serde_json output).
    pub(crate) fn from_trusted(bytes: Bytes) -> RawJson {
        debug_assert!(!bytes.contains(&b'\n'));
        RawJson(bytes)
    }

    /// A part of this payload (a whole JSON value inside it, the caller knows), sharing its
    /// buffer.
    pub(crate) fn slice(&self, range: std::ops::Range<usize>) -> RawJson {
        RawJson(self.0.slice(range))
    }

    /// The part of this payload that `part` (a value deserialized from [`RawJson::as_bytes`])
    /// spans, sharing this payload's buffer.
    pub(crate) fn slice_of(&self, part: &serde_json::value::RawValue) -> RawJson {
        let text = part.get().as_bytes();
        let start = (text.as_ptr() as usize).wrapping_sub(self.0.as_ptr() as usize);
        match start.checked_add(text.len()) {
            Some(end) if end <= self.0.len() => RawJson(self.0.slice(start..end)),
            // Not borrowed from this payload after all: copy it.
            _ => RawJson(Bytes::copy_from_slice(text)),
        }
    }

    /// Deserializes the payload. A failure is reported as `-32602 Invalid params`, which is
    /// what a handler wants to answer when its params do not fit; a response decoder maps it
    /// to its own error.
    pub fn parse<T: DeserializeOwned>(&self) -> Result<T, Error> {
        serde_json::from_slice(&self.0).map_err(|e| Error::invalid_params(e.to_string()))
    }

    /// The JSON text.
    pub fn as_str(&self) -> &str {
        // Every constructor stores UTF-8: serde_json output, checked strings, or slices of a
        // line that serde_json validated as UTF-8 while parsing it.
        std::str::from_utf8(&self.0).unwrap_or("null")
    }

    /// The JSON text as bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// Length of the JSON text in bytes.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the text is empty (never true for a valid payload).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether this is the JSON `null`.
    pub fn is_null(&self) -> bool {
        &self.0[..] == b"null"
    }
}

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
        Ok(RawJson(Bytes::from(text.into_bytes())))
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
    fn from_string_validates_and_flattens_line_breaks() {
        let raw = RawJson::from_string("{\n  \"a\": \"x\\ny\"\r\n}").unwrap();
        assert_eq!(raw.as_str(), "{   \"a\": \"x\\ny\"  }");
        assert_eq!(raw.parse::<serde_json::Value>().unwrap()["a"], "x\ny");
        assert_eq!(RawJson::from_string("{").unwrap_err().code, -32602);
    }

    #[test]
    fn serializes_compactly() {
        let raw = RawJson::to_raw(&serde_json::json!({"k": [1, 2]})).unwrap();
        assert_eq!(raw.as_str(), r#"{"k":[1,2]}"#);
    }
}
