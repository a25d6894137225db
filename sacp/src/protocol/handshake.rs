//! The proxy capability handshake: `_meta.proxy` in `initialize`.
//!
//! The conductor offers the capability in the params' top-level `_meta`
//! (`{"_meta":{"proxy":true}}`); a proxy accepts it by answering with `_meta.proxy: true` in its
//! result. These functions are the whole rule, for both ends: the proxy runtime uses
//! [`accept_offer`] and [`mark_accepted`], a conductor [`offer`], [`accepted`] and [`withdraw`].
//!
//! Only `initialize` is rewritten this way, so parsing it into a [`serde_json::Value`] is fine;
//! every other key, `_meta` entry and unknown field passes through, in its place (the
//! workspace builds `serde_json` with `preserve_order`).

use serde_json::{Map, Value};

use crate::jsonrpc::{Error, RawJson};

/// The `_meta` key of the proxy capability.
pub const PROXY_KEY: &str = "proxy";

/// The error a proxy answers when `initialize` did not offer it the proxy capability.
pub fn not_offered() -> Error {
    Error::invalid_params(
        "this component is an SACP proxy, but `initialize` did not offer it the proxy \
         capability (`\"_meta\": {\"proxy\": true}`); run it through a conductor, e.g. \
         `conductor agent <this-proxy> <agent>`",
    )
}

/// For a proxy receiving `initialize`: checks that the capability was offered and removes the
/// offer (it is hop-local), so the params can go on to the successor. Fails with
/// [`not_offered`] otherwise.
pub fn accept_offer(params: Option<&RawJson>) -> Result<RawJson, Error> {
    let mut value = parse_object(params, "initialize params")?;
    if !withdraw_from(&mut value) {
        return Err(not_offered());
    }
    RawJson::to_raw(&value)
}

/// For a proxy answering `initialize`: sets `_meta.proxy: true` in the result.
pub fn mark_accepted(result: RawJson) -> Result<RawJson, Error> {
    let mut value = parse_object(Some(&result), "the initialize result")?;
    set_proxy(&mut value);
    RawJson::to_raw(&value)
}

/// For a conductor: makes `params` offer the capability (or not), replacing whatever `proxy`
/// key an earlier hop left in `_meta`.
pub fn offer(params: Option<&RawJson>, offered: bool) -> Result<RawJson, Error> {
    let mut value = parse_object(params, "initialize params")?;
    withdraw_from(&mut value);
    if offered {
        set_proxy(&mut value);
    }
    RawJson::to_raw(&value)
}

/// For a conductor: whether `initialize` params offer the capability (a conductor that is
/// offered it runs as a proxy itself).
pub fn offered(params: Option<&RawJson>) -> bool {
    params.is_some_and(has_proxy_true)
}

/// For a conductor: whether an `initialize` result accepted the capability.
pub fn accepted(result: &RawJson) -> bool {
    has_proxy_true(result)
}

/// Whether the payload is an object whose `_meta.proxy` is `true`.
fn has_proxy_true(payload: &RawJson) -> bool {
    #[derive(serde::Deserialize)]
    struct Payload {
        #[serde(rename = "_meta")]
        meta: Option<Map<String, Value>>,
    }
    payload
        .parse::<Payload>()
        .ok()
        .and_then(|r| r.meta)
        .is_some_and(|meta| meta.get(PROXY_KEY) == Some(&Value::Bool(true)))
}

/// For a conductor: removes `_meta.proxy` from a result (or params).
pub fn withdraw(payload: &RawJson) -> Result<RawJson, Error> {
    let mut value = parse_object(Some(payload), "an initialize payload")?;
    withdraw_from(&mut value);
    RawJson::to_raw(&value)
}

fn parse_object(raw: Option<&RawJson>, what: &str) -> Result<Map<String, Value>, Error> {
    match raw {
        None => Ok(Map::new()),
        Some(raw) => raw
            .parse::<Map<String, Value>>()
            .map_err(|e| Error::invalid_params(format!("{what} must be an object: {}", e.message))),
    }
}

/// Removes `_meta.proxy` (and a `_meta` left empty by that); says whether it offered the
/// capability.
fn withdraw_from(value: &mut Map<String, Value>) -> bool {
    let Some(Value::Object(meta)) = value.get_mut("_meta") else {
        return false;
    };
    let offered = meta.shift_remove(PROXY_KEY) == Some(Value::Bool(true));
    if meta.is_empty() {
        value.shift_remove("_meta");
    }
    offered
}

/// Sets `_meta.proxy: true`, keeping every other key where it was.
fn set_proxy(value: &mut Map<String, Value>) {
    match value.get_mut("_meta") {
        Some(Value::Object(meta)) => {
            meta.insert(PROXY_KEY.into(), Value::Bool(true));
        }
        _ => {
            let mut meta = Map::new();
            meta.insert(PROXY_KEY.into(), Value::Bool(true));
            value.insert("_meta".into(), Value::Object(meta));
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
    fn a_proxy_accepts_an_offer_and_passes_the_rest_on() {
        let params = raw(
            r#"{"protocolVersion":1,"clientCapabilities":{"fs":{}},"_meta":{"proxy":true,"trace":"t1"},"x":[1]}"#,
        );
        let inner: Value = accept_offer(Some(&params)).unwrap().parse().unwrap();
        assert_eq!(
            inner,
            serde_json::json!({"protocolVersion":1,"clientCapabilities":{"fs":{}},"_meta":{"trace":"t1"},"x":[1]})
        );
        let only_offer = raw(r#"{"protocolVersion":1,"_meta":{"proxy":true}}"#);
        assert_eq!(
            accept_offer(Some(&only_offer)).unwrap().as_str(),
            r#"{"protocolVersion":1}"#
        );
    }

    #[test]
    fn a_proxy_refuses_to_run_without_the_offer() {
        for params in [
            r#"{"protocolVersion":1}"#,
            r#"{"protocolVersion":1,"_meta":{"proxy":false}}"#,
            r#"{"protocolVersion":1,"_meta":{"proxy":"yes"}}"#,
            r#"{"protocolVersion":1,"_meta":null}"#,
        ] {
            let err = accept_offer(Some(&raw(params))).unwrap_err();
            assert!(err.message.contains("proxy capability"), "{params}: {err}");
        }
        assert!(accept_offer(None).is_err());
        assert!(accept_offer(Some(&raw("[1]"))).is_err());
    }

    #[test]
    fn acceptance_is_marked_and_recognised() {
        let result = raw(r#"{"protocolVersion":1,"agentCapabilities":{},"_meta":{"other":1}}"#);
        let marked = mark_accepted(result.clone()).unwrap();
        assert!(accepted(&marked));
        assert!(!accepted(&result));
        assert!(!accepted(&raw(r#"{"_meta":{"proxy":1}}"#)));
        assert!(offered(Some(&raw(
            r#"{"protocolVersion":1,"_meta":{"proxy":true}}"#
        ))));
        assert!(!offered(Some(&raw(r#"{"protocolVersion":1}"#))));
        assert!(!offered(None));
        let back: Value = withdraw(&marked).unwrap().parse().unwrap();
        assert_eq!(back, result.parse::<Value>().unwrap());
        assert!(accepted(
            &mark_accepted(raw(r#"{"_meta":"not an object"}"#)).unwrap()
        ));
    }

    #[test]
    fn a_conductor_replaces_earlier_offers() {
        let params = raw(r#"{"protocolVersion":1,"_meta":{"proxy":true,"k":2}}"#);
        let to_agent: Value = offer(Some(&params), false).unwrap().parse().unwrap();
        assert_eq!(
            to_agent,
            serde_json::json!({"protocolVersion":1,"_meta":{"k":2}})
        );
        let to_proxy: Value = offer(Some(&raw(r#"{"protocolVersion":1}"#)), true)
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(
            to_proxy,
            serde_json::json!({"protocolVersion":1,"_meta":{"proxy":true}})
        );
    }
}
