//! The successor envelope: `_proxy/successor/request` and `_proxy/successor/notification`.
//!
//! Params are the inner message flattened — `{"method": …, "params": …}` — plus an optional,
//! hop-local `_meta` that is never copied into the unwrapped message. Wrapping and unwrapping
//! move the inner params as bytes: they are neither parsed nor re-serialized.

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::jsonrpc::{Error, RawJson};

/// Carries a request to (from a proxy) or from (from the conductor) the successor.
pub const SUCCESSOR_REQUEST: &str = "_proxy/successor/request";
/// Carries a notification to (from a proxy) or from (from the conductor) the successor.
pub const SUCCESSOR_NOTIFICATION: &str = "_proxy/successor/notification";

/// Whether `method` is a successor envelope, in any dialect (see [`super::dialect`]): the
/// params of all of them unwrap the same way.
pub fn is_envelope(method: &str) -> bool {
    super::dialect::Dialect::of_envelope(method).is_some()
}

/// Wraps raw params: the result is `{"method":…,"params":…}` with `params` as they are (and
/// left out when absent). It is kept in its parts: a neighbour in the same process unwraps it
/// without a scan, a writer writes the parts without building the whole text first.
pub fn wrap(method: &str, params: Option<&RawJson>) -> RawJson {
    RawJson::envelope(method.to_owned(), params.cloned())
}

/// [`wrap`], taking the method and params it wraps.
pub fn wrap_owned(method: String, params: Option<RawJson>) -> RawJson {
    RawJson::envelope(method, params)
}

/// Unwraps envelope params into the inner method and params (a slice of the same buffer).
///
/// A wrapper without a string `method` is `-32602 Invalid params`.
pub fn unwrap(params: Option<&RawJson>) -> Result<(String, Option<RawJson>), Error> {
    #[derive(Deserialize)]
    struct Wrapped<'a> {
        method: Option<String>,
        #[serde(borrow, default, deserialize_with = "present")]
        params: Option<&'a RawValue>,
    }
    fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
        <&'de RawValue>::deserialize(d).map(Some)
    }
    let invalid = |why: &str| {
        Error::invalid_params(format!(
            "a successor envelope needs {{\"method\": string, \"params\"?: …}}: {why}"
        ))
    };
    let params = params.ok_or_else(|| invalid("it has no params"))?;
    let (method, inner) = if let Some((method, inner)) = params.envelope_parts() {
        // Wrapped in this process: the parts are at hand.
        (method.to_owned(), inner.cloned())
    } else if let Some((method, inner)) = fast::members(params.as_bytes()) {
        (
            method.to_owned(),
            inner.map(|(start, end)| params.slice(start..end)),
        )
    } else {
        let wrapped: Wrapped<'_> =
            serde_json::from_slice(params.as_bytes()).map_err(|e| invalid(&e.to_string()))?;
        let method = wrapped
            .method
            .ok_or_else(|| invalid("`method` is missing or null"))?;
        (method, wrapped.params.map(|raw| params.slice_of(raw)))
    };
    // The inner message goes on as a JSON-RPC message of its own: its params are an object or
    // an array, or absent (`null` is taken as absent), never anything else.
    match crate::jsonrpc::structured_params(inner.as_ref().map(RawJson::as_str)) {
        Ok(true) => Ok((method, inner)),
        Ok(false) => Ok((method, None)),
        Err(e) => Err(invalid(&format!("the wrapped message's {}", e.message))),
    }
}

/// Finding the two members without parsing the inner params again.
///
/// A [`RawJson`] is valid JSON (every constructor checks or produces it), so finding where the
/// members of the envelope object start and end needs no validation, only a scan of its
/// structure: strings are skipped with `memchr`, nesting is counted. That is several times
/// cheaper than a serde pass, which validates UTF-8 and every token again; it matters because
/// a proxy unwraps every update the agent streams.
mod fast {
    /// The `method` (a string without escapes) and the span of `params` (when present), or
    /// `None` for anything unusual (an escaped key or method, a duplicate member, no method),
    /// which the serde path then handles, with its error messages.
    pub(super) fn members(json: &[u8]) -> Option<(&str, Option<(usize, usize)>)> {
        let mut i = skip_ws(json, 0);
        if json.get(i) != Some(&b'{') {
            return None;
        }
        i = skip_ws(json, i + 1);
        let (mut method, mut params) = (None, None);
        if json.get(i) == Some(&b'}') {
            return None;
        }
        loop {
            if json.get(i) != Some(&b'"') {
                return None;
            }
            let key_end = plain_string_end(json, i)?;
            let key = &json[i + 1..key_end - 1];
            i = skip_ws(json, key_end);
            if json.get(i) != Some(&b':') {
                return None;
            }
            let start = skip_ws(json, i + 1);
            let end = value_end(json, start)?;
            match key {
                b"method" if method.is_none() => {
                    let end = plain_string_end(json, start).filter(|&e| e == end)?;
                    method = Some(std::str::from_utf8(&json[start + 1..end - 1]).ok()?);
                }
                b"params" if params.is_none() => params = Some((start, end)),
                b"method" | b"params" => return None,
                _ => {}
            }
            i = skip_ws(json, end);
            match json.get(i) {
                Some(b',') => i = skip_ws(json, i + 1),
                Some(b'}') => break,
                _ => return None,
            }
        }
        Some((method?, params))
    }

    fn skip_ws(json: &[u8], mut i: usize) -> usize {
        while json
            .get(i)
            .is_some_and(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
        {
            i += 1;
        }
        i
    }

    /// The end (past the closing quote) of the string at `start`, if it has no escapes.
    fn plain_string_end(json: &[u8], start: usize) -> Option<usize> {
        let rest = json.get(start + 1..)?;
        let at = memchr::memchr2(b'"', b'\\', rest)?;
        (rest[at] == b'"').then_some(start + 1 + at + 1)
    }

    /// The end of any string at `start` (past its closing quote).
    fn string_end(json: &[u8], start: usize) -> Option<usize> {
        let mut i = start + 1;
        loop {
            let at = memchr::memchr2(b'"', b'\\', json.get(i..)?)?;
            if json[i + at] == b'"' {
                return Some(i + at + 1);
            }
            i += at + 2;
        }
    }

    /// The end of the value at `start`.
    fn value_end(json: &[u8], start: usize) -> Option<usize> {
        match json.get(start)? {
            b'"' => string_end(json, start),
            b'{' | b'[' => {
                let mut depth = 0usize;
                let mut i = start;
                loop {
                    match json.get(i)? {
                        b'"' => {
                            i = string_end(json, i)?;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                return Some(i + 1);
                            }
                        }
                        _ => {}
                    }
                    i += 1;
                }
            }
            _ => {
                let mut i = start;
                while json.get(i).is_some_and(|b| {
                    !matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
                }) {
                    i += 1;
                }
                Some(i)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> RawJson {
        RawJson::from_string(text).unwrap()
    }

    #[test]
    fn wraps_bytes_as_they_are() {
        let params = raw(r#"{"sessionId":"s1",  "prompt":[], "x":1.50}"#);
        let wrapped = wrap("session/prompt", Some(&params));
        assert_eq!(
            wrapped.as_str(),
            r#"{"method":"session/prompt","params":{"sessionId":"s1",  "prompt":[], "x":1.50}}"#
        );
        assert_eq!(wrap("a\"b", None).as_str(), r#"{"method":"a\"b"}"#);
    }

    #[test]
    fn unwraps_to_the_same_bytes() {
        let wrapped =
            raw(r#"{"_meta":{"hop":1},"method":"session/update","params":{"b": 2, "a":1.0e0}}"#);
        let (method, params) = unwrap(Some(&wrapped)).unwrap();
        assert_eq!(method, "session/update");
        assert_eq!(params.unwrap().as_str(), r#"{"b": 2, "a":1.0e0}"#);

        let (method, params) = unwrap(Some(&raw(r#"{"method":"x/y"}"#))).unwrap();
        assert_eq!((method.as_str(), params), ("x/y", None));
        // `null` inner params are taken as absent; scalars are refused, never passed on.
        let (_, params) = unwrap(Some(&raw(r#"{"method":"x","params":null}"#))).unwrap();
        assert!(params.is_none());
        for scalar in ["-1", r#""s""#, "true"] {
            let text = format!(r#"{{"method":"x","params":{scalar}}}"#);
            let err = unwrap(Some(&raw(&text))).unwrap_err();
            assert_eq!(err.code, crate::jsonrpc::code::INVALID_PARAMS, "{scalar}");
            assert!(
                err.message.contains("params must be an object or an array"),
                "{err}"
            );
        }
        let (method, _) = unwrap(Some(&raw(r#"{"method":"a\/b\u0021"}"#))).unwrap();
        assert_eq!(method, "a/b!");
    }

    #[test]
    fn the_fast_path_agrees_with_serde() {
        let cases = [
            r#"{"method":"session/update","params":{"a":"}\"]","b":[{"c":[]}]}}"#,
            r#" { "params" : [1, "x\\"] , "_meta" : {"k":"\u0041"}, "method" : "m" } "#,
            r#"{"method":"m","params":[-1.5e3]}"#,
            r#"{"method":"m","params":{},"x":true}"#,
            r#"{"method":"m"}"#,
            r#"{"_meta":{"method":"inner"},"method":"outer","params":["s"]}"#,
        ];
        for case in cases {
            let fast = fast::members(case.as_bytes()).unwrap_or_else(|| panic!("{case}"));
            let (method, params) = unwrap(Some(&raw(case))).unwrap();
            assert_eq!(fast.0, method, "{case}");
            assert_eq!(
                fast.1.map(|(s, e)| &case[s..e]),
                params.as_ref().map(RawJson::as_str),
                "{case}"
            );
        }
        // Left to serde: escapes in the method or a key, duplicates, no method.
        for case in [
            r#"{"method":"a\/b","params":1}"#,
            r#"{"me\u0074hod":"m"}"#,
            r#"{"method":"m","method":"n"}"#,
            r#"{"params":1}"#,
            r#"{"method":null}"#,
            r#"{}"#,
            r#"[]"#,
        ] {
            assert!(fast::members(case.as_bytes()).is_none(), "{case}");
        }
    }

    #[test]
    fn an_envelope_kept_in_parts_is_its_text_in_every_way() {
        let inner = raw(r#"{"x":"\u00e9","y":[1,2]}"#);
        let nested = wrap("session/update", Some(&inner));
        for (method, params) in [
            ("session/update", Some(&inner)),
            ("we\"ird\\name\u{1}", Some(&inner)),
            ("no/params", None),
            ("_proxy/successor/notification", Some(&nested)),
        ] {
            let wrapped = wrap(method, params);
            let mut text = Vec::new();
            wrapped.write_into(&mut text);
            let parsed: serde_json::Value = serde_json::from_slice(&text).unwrap();
            assert_eq!(parsed["method"], method);
            assert_eq!(wrapped.len(), text.len(), "{method}");
            assert_eq!(wrapped.as_bytes(), &text[..], "{method}");
            // Equal to the same text read from the wire, and unwrapped the same way.
            let read = RawJson::from_string(String::from_utf8(text).unwrap()).unwrap();
            assert_eq!(wrapped, read);
            let (m, p) = unwrap(Some(&wrapped)).unwrap();
            assert_eq!((m.as_str(), p.as_ref()), (method, params), "{method}");
            assert_eq!(unwrap(Some(&read)).unwrap(), (m, p), "{method}");
        }
    }

    #[test]
    fn round_trips() {
        let params = raw(r#"[1,{"k":"v"}]"#);
        let (method, inner) = unwrap(Some(&wrap("_ext/thing", Some(&params)))).unwrap();
        assert_eq!(method, "_ext/thing");
        assert_eq!(inner.unwrap(), params);
    }

    #[test]
    fn rejects_envelopes_without_a_method() {
        for bad in [
            r#"{}"#,
            r#"{"method":1}"#,
            r#"{"method":null}"#,
            r#"[]"#,
            r#""x""#,
        ] {
            let err = unwrap(Some(&raw(bad))).unwrap_err();
            assert_eq!(err.code, crate::jsonrpc::code::INVALID_PARAMS, "{bad}");
        }
        assert_eq!(
            unwrap(None).unwrap_err().code,
            crate::jsonrpc::code::INVALID_PARAMS
        );
    }
}
