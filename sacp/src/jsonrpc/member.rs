//! A member of a JSON object's top level, found by a scan of its text instead of a parse: what
//! code on the hot path needs when it reads or replaces one short field of a payload it
//! otherwise passes on as it came (a routing key, say). No allocation; one pass over the text
//! up to the member, skipping the values before it without building them.
//!
//! The scan trusts the text to be valid JSON (a [`RawJson`](super::RawJson) always is) and
//! gives up — `None` — on anything it does not expect, so a caller can fall back to a parse.

use std::ops::Range;

/// The byte range of the value of `key` in the top-level object `text`, if `text` is an object
/// that has the member (the first one, if it has it twice; its key written without escapes).
pub(crate) fn value_span(text: &[u8], key: &str) -> Option<Range<usize>> {
    match slot(text, key)? {
        Slot::Value(span) => Some(span),
        Slot::Absent { .. } => None,
    }
}

/// Where the member `key` of the top-level object `text` is, or where one would go.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Slot {
    /// Its value's byte range (the first one, if it is there twice).
    Value(Range<usize>),
    /// It is not there: the offset of the object's closing brace, and whether the object has
    /// no member at all.
    Absent { close: usize, empty: bool },
}

/// Where the member `key` of the top-level object `text` is (see [`Slot`]), if `text` is an
/// object.
pub(crate) fn slot(text: &[u8], key: &str) -> Option<Slot> {
    let mut at = skip_space(text, 0);
    if text.get(at) != Some(&b'{') {
        return None;
    }
    at += 1;
    let mut empty = true;
    loop {
        at = skip_space(text, at);
        match text.get(at)? {
            b'}' => return Some(Slot::Absent { close: at, empty }),
            b'"' => {}
            _ => return None,
        }
        empty = false;
        let name = string_end(text, at)?;
        let named = &text[at + 1..name - 1] == key.as_bytes();
        at = skip_space(text, name);
        if text.get(at) != Some(&b':') {
            return None;
        }
        at = skip_space(text, at + 1);
        let end = value_end(text, at)?;
        if named {
            return Some(Slot::Value(at..end));
        }
        at = skip_space(text, end);
        match text.get(at)? {
            b',' => at += 1,
            b'}' => return Some(Slot::Absent { close: at, empty }),
            _ => return None,
        }
    }
}

/// The content (between the quotes) of the string value of `key`, when it is a string with no
/// escape in it.
pub(crate) fn plain_string(text: &[u8], key: &str) -> Option<Range<usize>> {
    let span = value_span(text, key)?;
    let value = &text[span.clone()];
    let plain = value.len() >= 2 && value[0] == b'"' && !value[1..value.len() - 1].contains(&b'\\');
    plain.then(|| span.start + 1..span.end - 1)
}

fn skip_space(text: &[u8], mut at: usize) -> usize {
    while matches!(text.get(at), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        at += 1;
    }
    at
}

/// Where the string that starts (with its quote) at `at` ends: just past its closing quote.
fn string_end(text: &[u8], at: usize) -> Option<usize> {
    let mut i = at + 1;
    loop {
        let next = memchr::memchr2(b'"', b'\\', text.get(i..)?)?;
        i += next;
        if text[i] == b'\\' {
            i += 2;
        } else {
            return Some(i + 1);
        }
    }
}

/// Where the value that starts at `at` ends.
fn value_end(text: &[u8], at: usize) -> Option<usize> {
    match text.get(at)? {
        b'"' => string_end(text, at),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = at;
            loop {
                let next = memchr::memchr3(b'"', b'{', b'[', text.get(i..)?);
                let close = memchr::memchr2(b'}', b']', text.get(i..)?);
                match (next, close) {
                    (Some(n), Some(c)) if n < c => {
                        i += n;
                        if text[i] == b'"' {
                            i = string_end(text, i)?;
                        } else {
                            depth += 1;
                            i += 1;
                        }
                    }
                    (_, Some(c)) => {
                        i += c + 1;
                        depth = depth.checked_sub(1)?;
                        if depth == 0 {
                            return Some(i);
                        }
                    }
                    (_, None) => return None,
                }
            }
        }
        _ => {
            // A number, `true`, `false` or `null`: up to the next delimiter.
            let rest = &text[at..];
            let len = rest
                .iter()
                .position(|b| matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r'))
                .unwrap_or(rest.len());
            (len > 0).then_some(at + len)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value<'a>(text: &'a str, key: &str) -> Option<&'a str> {
        value_span(text.as_bytes(), key).map(|span| &text[span])
    }

    #[test]
    fn a_slot_is_a_members_value_or_where_a_new_one_goes() {
        let text = br#" { "a" : [1,{"}":2}] , "b":"x" } "#;
        assert_eq!(slot(text, "b"), Some(Slot::Value(27..30)));
        assert_eq!(
            slot(text, "c"),
            Some(Slot::Absent {
                close: 31,
                empty: false
            })
        );
        assert_eq!(
            slot(b"{ }", "c"),
            Some(Slot::Absent {
                close: 2,
                empty: true
            })
        );
        assert_eq!(slot(b"[1]", "c"), None);
        assert_eq!(slot(b"{\"a\":1 2}", "c"), None);
    }

    #[test]
    fn finds_a_member_after_values_of_every_kind() {
        let text = r#" { "a" : {"x":[1,{"}":"]"}],"y":"\"{"}, "b":[[],{}], "c":-1.5e3,"d":true,"e":null , "sessionId" : "s-1" ,"z":{}}"#;
        assert_eq!(value(text, "sessionId"), Some(r#""s-1""#));
        assert_eq!(value(text, "a"), Some(r#"{"x":[1,{"}":"]"}],"y":"\"{"}"#));
        assert_eq!(value(text, "b"), Some("[[],{}]"));
        assert_eq!(value(text, "c"), Some("-1.5e3"));
        assert_eq!(value(text, "e"), Some("null"));
        assert_eq!(value(text, "z"), Some("{}"));
        assert_eq!(value(text, "missing"), None);
        // Only the top level counts.
        assert_eq!(value(r#"{"update":{"sessionId":"c1"}}"#, "sessionId"), None);
        assert_eq!(value("[1]", "a"), None);
        assert_eq!(value("{}", "a"), None);
    }

    #[test]
    fn a_plain_string_has_no_escapes() {
        let text = r#"{"a":"x\"y","b":"xy","c":7}"#;
        assert_eq!(plain_string(text.as_bytes(), "a"), None);
        assert_eq!(
            plain_string(text.as_bytes(), "b").map(|r| &text[r]),
            Some("xy")
        );
        assert_eq!(plain_string(text.as_bytes(), "c"), None);
    }

    proptest::proptest! {
        /// Whatever the object, the scan finds what a parse finds.
        #[test]
        fn the_scan_agrees_with_a_parse(
            members in proptest::collection::vec(
                ("[a-zA-Z\"\\\\{}]{0,4}", super::super::proptests::json()), 0..6),
            key in "[a-zA-Z]{0,2}",
        ) {
            let object: serde_json::Map<String, serde_json::Value> = members.into_iter().collect();
            let text = serde_json::to_string_pretty(&object).unwrap();
            let found = value_span(text.as_bytes(), &key)
                .map(|span| serde_json::from_str::<serde_json::Value>(&text[span]).unwrap());
            proptest::prop_assert_eq!(found.as_ref(), object.get(&key));
        }
    }
}
