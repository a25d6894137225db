//! JSON-RPC request ids.
//!
//! A peer may number its ids however it likes (integers, strings, even `null`); the connection
//! never assumes its own scheme on the other side, and answers with the id exactly as it came —
//! a number beyond 64 bits or with a fraction included, in its own text. Ids we assign are
//! integers counted up from 1.

use std::fmt;
use std::io::Write as _;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;

/// A JSON-RPC request id: a string, a number, or `null`.
///
/// Ids are compared as JSON values, numbers by their text: `1` and `"1"` are different ids, and
/// so are `1` and `1.0`; `"\u00e9"` and `"é"` are the same.
#[derive(Clone, Debug)]
pub enum Id {
    /// An integer id that fits an `i64` (what the ACP schema allows), written as Rust writes
    /// it.
    Number(i64),
    /// A string id.
    String(Arc<str>),
    /// The `null` id: used for errors about messages whose id could not be read.
    Null,
    /// An id kept as its JSON text, so that it is echoed exactly: a number that is not an `i64`
    /// written as Rust writes it (`1180591620717411303424`, `1.5`, `-0`, `1e3`), or a string
    /// with escapes (`"\u00e9t\u00e9"`).
    Exact(Arc<str>),
}

/// What an id is compared by.
#[derive(PartialEq, Eq, Hash)]
enum Key<'a> {
    Number(i64),
    NumberText(&'a str),
    String(std::borrow::Cow<'a, str>),
    Null,
}

impl Id {
    fn key(&self) -> Key<'_> {
        match self {
            Id::Number(n) => Key::Number(*n),
            Id::String(s) => Key::String(s.as_ref().into()),
            Id::Null => Key::Null,
            Id::Exact(text) if text.starts_with('"') => Key::String(
                serde_json::from_str::<String>(text).map_or(text.as_ref().into(), Into::into),
            ),
            Id::Exact(text) => Key::NumberText(text),
        }
    }
}

impl PartialEq for Id {
    fn eq(&self, other: &Id) -> bool {
        self.key() == other.key()
    }
}

impl Eq for Id {}

impl std::hash::Hash for Id {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.key().hash(state)
    }
}

impl Id {
    /// Reads an id from its raw JSON text (one JSON value); `None` when the value cannot be an
    /// id (an object, an array, a boolean).
    pub(crate) fn from_raw(text: &str) -> Option<Id> {
        match text.as_bytes().first()? {
            b'"' => {
                let decoded = serde_json::from_str::<String>(text).ok()?;
                if text.len() == decoded.len() + 2 && !text.contains('\\') {
                    Some(Id::String(decoded.into()))
                } else {
                    Some(Id::Exact(text.into()))
                }
            }
            b'n' if text == "null" => Some(Id::Null),
            b'-' | b'0'..=b'9' => {
                // Validated as one JSON number, whatever its size.
                serde_json::from_str::<&RawValue>(text).ok()?;
                if text.bytes().any(|b| !b.is_ascii_digit() && b != b'-') {
                    return Some(Id::Exact(text.into()));
                }
                match text.parse::<i64>() {
                    Ok(n) if n.to_string() == text => Some(Id::Number(n)),
                    _ => Some(Id::Exact(text.into())),
                }
            }
            _ => None,
        }
    }

    /// Appends the id's JSON text to `out`.
    pub(crate) fn write_json(&self, out: &mut Vec<u8>) {
        match self {
            Id::Number(n) => {
                let _ = write!(out, "{n}");
            }
            Id::String(s) => write_json_string(s, out),
            Id::Null => out.extend_from_slice(b"null"),
            Id::Exact(text) => out.extend_from_slice(text.as_bytes()),
        }
    }
}

impl Serialize for Id {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Id::Number(n) => serializer.serialize_i64(*n),
            Id::String(s) => serializer.serialize_str(s),
            Id::Null => serializer.serialize_unit(),
            Id::Exact(text) => RawValue::from_string(text.to_string())
                .map_err(serde::ser::Error::custom)?
                .serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for Id {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Id, D::Error> {
        let raw = Box::<RawValue>::deserialize(deserializer)?;
        Id::from_raw(raw.get()).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "an id is a string, a number or null, not {}",
                raw.get()
            ))
        })
    }
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Id::Number(n) => write!(f, "{n}"),
            Id::String(s) => write!(f, "{s:?}"),
            Id::Null => f.write_str("null"),
            Id::Exact(text) => f.write_str(text),
        }
    }
}

impl From<i64> for Id {
    fn from(n: i64) -> Self {
        Id::Number(n)
    }
}

impl From<&str> for Id {
    fn from(s: &str) -> Self {
        Id::String(s.into())
    }
}

impl From<String> for Id {
    fn from(s: String) -> Self {
        Id::String(s.into())
    }
}

/// Appends `s` as a JSON string literal (quoted and escaped).
pub(crate) fn write_json_string(s: &str, out: &mut Vec<u8>) {
    // Serializing a `str` into a Vec cannot fail.
    serde_json::to_writer(&mut *out, s).expect("serializing a str into a Vec cannot fail");
}

/// [`write_json_string`] into any buffer of `bytes`.
pub(crate) fn write_json_string_into(s: &str, out: &mut impl bytes::BufMut) {
    // Serializing a `str` into memory cannot fail.
    serde_json::to_writer(bytes::BufMut::writer(&mut *out), s)
        .expect("serializing a str into memory cannot fail");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_every_valid_kind() {
        assert_eq!(Id::from_raw("7"), Some(Id::Number(7)));
        assert_eq!(Id::from_raw("-3"), Some(Id::Number(-3)));
        assert_eq!(Id::from_raw(r#""a\"b""#), Some(Id::String("a\"b".into())));
        assert_eq!(Id::from_raw("null"), Some(Id::Null));
    }

    #[test]
    fn keeps_other_numbers_as_their_text() {
        for text in [
            "1180591620717411303424",
            "1.5",
            "-0",
            "1e3",
            "18446744073709551615",
        ] {
            let id = Id::from_raw(text).unwrap();
            assert_eq!(id, Id::Exact(text.into()), "{text}");
            let mut out = Vec::new();
            id.write_json(&mut out);
            assert_eq!(out, text.as_bytes());
            assert_eq!(serde_json::to_string(&id).unwrap(), text);
            assert_eq!(serde_json::from_str::<Id>(text).unwrap(), id);
        }
        assert_eq!(
            Id::from_raw("-9223372036854775808"),
            Some(Id::Number(i64::MIN))
        );
        // A string with escapes is written back as it came, and is the same id as its value.
        let escaped = Id::from_raw(r#""\u00e9t\u00e9""#).unwrap();
        let mut out = Vec::new();
        escaped.write_json(&mut out);
        assert_eq!(out, br#""\u00e9t\u00e9""#);
        assert_eq!(escaped, Id::from("été"));
        let set: std::collections::HashSet<Id> = [escaped, Id::from("été")].into();
        assert_eq!(set.len(), 1);
        assert_ne!(Id::from_raw("1.0").unwrap(), Id::Number(1));
        assert_ne!(Id::from_raw("1").unwrap(), Id::from("1"));
    }

    #[test]
    fn rejects_what_cannot_be_an_id() {
        for bad in ["{}", "[]", "true", "", "1 2", "-"] {
            assert_eq!(Id::from_raw(bad), None, "{bad}");
        }
        assert!(serde_json::from_str::<Id>("[1]").is_err());
    }

    #[test]
    fn writes_json() {
        let mut out = Vec::new();
        Id::String("x\ny".into()).write_json(&mut out);
        out.push(b' ');
        Id::Number(-9).write_json(&mut out);
        assert_eq!(String::from_utf8(out).unwrap(), r#""x\ny" -9"#);
    }
}
