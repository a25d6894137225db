//! JSON-RPC request ids.
//!
//! A peer may number its ids however it likes (integers, strings, even `null`); the connection
//! never assumes its own scheme on the other side. Ids we assign are integers counted up from 1.

use std::fmt;
use std::io::Write as _;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// A JSON-RPC request id: a string, an integer, or `null`.
///
/// Ids are compared as JSON values: `1` and `"1"` are different ids.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Id {
    /// An integer id (the schema allows any `int64`).
    Number(i64),
    /// A string id.
    String(Arc<str>),
    /// The `null` id: used for errors about messages whose id could not be read.
    Null,
}

impl Id {
    /// Reads an id from its raw JSON text; `None` when the text is not a valid id
    /// (a fractional number, a number outside `i64`, an object, an array, a boolean).
    pub(crate) fn from_raw(text: &str) -> Option<Id> {
        match text.as_bytes().first()? {
            b'"' => serde_json::from_str::<String>(text)
                .ok()
                .map(|s| Id::String(s.into())),
            b'n' if text == "null" => Some(Id::Null),
            b'-' | b'0'..=b'9' => text.parse::<i64>().ok().map(Id::Number),
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
        }
    }
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Id::Number(n) => write!(f, "{n}"),
            Id::String(s) => write!(f, "{s:?}"),
            Id::Null => f.write_str("null"),
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
    fn rejects_what_the_schema_does_not_allow() {
        for bad in ["1.5", "18446744073709551615", "{}", "[]", "true", ""] {
            assert_eq!(Id::from_raw(bad), None, "{bad}");
        }
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
