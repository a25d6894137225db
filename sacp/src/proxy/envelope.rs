//! The successor envelope: `_proxy/successor/request` and `_proxy/successor/notification`.
//!
//! Params are the inner message flattened — `{"method": …, "params": …}` — plus an optional,
//! hop-local `_meta` that is never copied into the unwrapped message. Wrapping and unwrapping
//! move the inner params as bytes: they are neither parsed nor re-serialized.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::jsonrpc::{Error, RawJson};

/// Carries a request to (from a proxy) or from (from the conductor) the successor.
pub const SUCCESSOR_REQUEST: &str = "_proxy/successor/request";
/// Carries a notification to (from a proxy) or from (from the conductor) the successor.
pub const SUCCESSOR_NOTIFICATION: &str = "_proxy/successor/notification";

/// Whether `method` is one of the two envelope methods.
pub fn is_envelope(method: &str) -> bool {
    method == SUCCESSOR_REQUEST || method == SUCCESSOR_NOTIFICATION
}

/// Wraps raw params: the result is `{"method":…,"params":…}` with `params` copied as bytes
/// (and left out when absent).
pub fn wrap(method: &str, params: Option<&RawJson>) -> RawJson {
    let mut out = Vec::with_capacity(method.len() + params.map_or(0, RawJson::len) + 24);
    out.extend_from_slice(br#"{"method":"#);
    // Writing a string into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut out, method);
    if let Some(params) = params {
        out.extend_from_slice(br#","params":"#);
        out.extend_from_slice(params.as_bytes());
    }
    out.push(b'}');
    RawJson::from_trusted(out.into())
}

/// Wraps a typed message in one serialization.
pub(crate) fn wrap_typed<T: Serialize>(method: &str, params: &T) -> Result<RawJson, Error> {
    #[derive(Serialize)]
    struct Wrapped<'a, T> {
        method: &'a str,
        params: &'a T,
    }
    RawJson::to_raw(&Wrapped { method, params })
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
    let wrapped: Wrapped<'_> =
        serde_json::from_slice(params.as_bytes()).map_err(|e| invalid(&e.to_string()))?;
    let method = wrapped
        .method
        .ok_or_else(|| invalid("`method` is missing or null"))?;
    // `"params": null` is a present null, which is what the inner message had.
    let inner = wrapped.params.map(|raw| params.slice_of(raw));
    Ok((method, inner))
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
        let (_, params) = unwrap(Some(&raw(r#"{"method":"x","params":null}"#))).unwrap();
        assert!(params.unwrap().is_null());
        let (method, _) = unwrap(Some(&raw(r#"{"method":"a\/b\u0021"}"#))).unwrap();
        assert_eq!(method, "a/b!");
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
