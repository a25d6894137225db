//! ACP protocol versions, and their negotiation at `initialize`.
//!
//! One connection speaks one version, chosen at `initialize`: the agent answers the highest
//! version it speaks at or below the one the client asked for, or fails with `-32022`
//! (`{"requested", "supported"}`) when it speaks none (ACP v2's rule; for a client that asks
//! for 1 or more it is v1's "answer the latest version you support" too). A proxy negotiates
//! like an agent and passes `initialize` on asking for the version it chose, so a proxy that
//! speaks only v1 brings the chain behind it to v1 instead of passing on what it cannot read.
//!
//! The SDK, not a handler, answers `protocolVersion`: the agent and proxy runtimes use this
//! module, and a handler sees `initialize` asking for the version chosen.

use crate::jsonrpc::{Error, RawJson};

/// `-32022`: no version the agent speaks is at or below the one the client asked for.
pub const UNSUPPORTED: i64 = -32022;

/// The versions the SDK's agents and proxies speak.
pub const SPOKEN: &[u16] = &[1];

/// The version to answer a client that asked for `requested`: the highest of `supported` at
/// or below it, else `-32022`.
pub fn negotiate(requested: u16, supported: &[u16]) -> Result<u16, Error> {
    supported
        .iter()
        .copied()
        .filter(|version| *version <= requested)
        .max()
        .ok_or_else(|| unsupported(requested, supported))
}

/// The `-32022` error, with its data as the schema has it.
pub fn unsupported(requested: u16, supported: &[u16]) -> Error {
    Error::new(UNSUPPORTED, "Unsupported protocol version").with_data(serde_json::json!({
        "requested": requested,
        "supported": supported,
    }))
}

/// Whether an error object (as it travels) is `-32022`.
pub fn is_unsupported(error: &RawJson) -> bool {
    error.parse::<Error>().is_ok_and(|e| e.code == UNSUPPORTED)
}

/// Negotiates an `initialize` request for one who speaks `spoken`: the version chosen, and
/// the params asking for it (see [`with_version`]).
pub fn accept(params: Option<RawJson>, spoken: &[u16]) -> Result<(u16, RawJson), Error> {
    let requested = of(params.as_ref())?;
    let chosen = negotiate(requested, spoken)?;
    let params = params.ok_or_else(|| Error::invalid_params("initialize without params"))?;
    Ok((chosen, with_version(params, chosen)?))
}

/// The version an `initialize` request asks for, or an answer names (`-32602` when there is
/// none, or it is not a version).
pub fn of(payload: Option<&RawJson>) -> Result<u16, Error> {
    #[derive(serde::Deserialize)]
    struct Versioned {
        #[serde(rename = "protocolVersion")]
        protocol_version: u16,
    }
    let payload = payload.ok_or_else(|| Error::invalid_params("initialize without params"))?;
    payload
        .parse::<Versioned>()
        .map(|v| v.protocol_version)
        .map_err(|e| Error::invalid_params(format!("protocolVersion: {}", e.message)))
}

/// `payload` (an `initialize` request's params or its result) naming `version`: when it names
/// another, that one field changes in place and everything else stays as it came.
pub fn with_version(payload: RawJson, version: u16) -> Result<RawJson, Error> {
    if of(Some(&payload)).ok() == Some(version) {
        return Ok(payload);
    }
    let mut value: serde_json::Value = payload.parse()?;
    let object = value
        .as_object_mut()
        .ok_or_else(|| Error::invalid_params("initialize: not an object"))?;
    object.insert("protocolVersion".to_owned(), version.into());
    RawJson::to_raw(&value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_highest_spoken_at_or_below_the_request_is_chosen() {
        assert_eq!(negotiate(1, &[1]).unwrap(), 1);
        assert_eq!(negotiate(2, &[1]).unwrap(), 1);
        assert_eq!(negotiate(3, &[1, 2]).unwrap(), 2);
        assert_eq!(negotiate(1, &[1, 2]).unwrap(), 1);
        let e = negotiate(0, &[1]).unwrap_err();
        assert_eq!(e.code, UNSUPPORTED);
        assert_eq!(
            e.data,
            Some(serde_json::json!({"requested": 0, "supported": [1]}))
        );
        let e = negotiate(1, &[2]).unwrap_err();
        assert_eq!(
            e.data,
            Some(serde_json::json!({"requested": 1, "supported": [2]}))
        );
    }

    #[test]
    fn the_version_changes_in_place_and_nothing_else_does() {
        let raw = RawJson::from_string(
            r#"{"z":null,"protocolVersion":2,"clientCapabilities":{"future":[1,{"a":null}]}}"#,
        )
        .unwrap();
        let changed = with_version(raw.clone(), 1).unwrap();
        assert_eq!(
            changed.as_str(),
            r#"{"z":null,"protocolVersion":1,"clientCapabilities":{"future":[1,{"a":null}]}}"#
        );
        // Already right: the very bytes.
        let same = RawJson::from_string(r#"{ "protocolVersion" : 1 }"#).unwrap();
        assert_eq!(
            with_version(same, 1).unwrap().as_str(),
            r#"{ "protocolVersion" : 1 }"#
        );
    }

    #[test]
    fn a_missing_or_foreign_version_is_invalid_params() {
        for text in [
            r#"{}"#,
            r#"{"protocolVersion":"1"}"#,
            r#"{"protocolVersion":70000}"#,
        ] {
            let raw = RawJson::from_string(text).unwrap();
            assert_eq!(of(Some(&raw)).unwrap_err().code, -32602, "{text}");
        }
        assert_eq!(of(None).unwrap_err().code, -32602);
    }
}
