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

use std::sync::atomic::{AtomicU16, Ordering};

use crate::jsonrpc::{Error, Id, RawJson};

/// `-32022`: no version the agent speaks is at or below the one the client asked for.
pub const UNSUPPORTED: i64 = -32022;

/// The versions an agent or proxy speaks unless it declares others (`#[sacp::agent(protocol =
/// 2)]`): ACP v1.
pub const SPOKEN: &[u16] = &[1];

/// The ACP versions this SDK knows the methods of (v2 is a draft, behind the
/// `unstable_protocol_v2` feature).
pub const KNOWN: &[u16] = &[1, 2];

/// Whether `method` is one that ACP `version` lacks while another version has it —
/// `session/load` or `fs/read_text_file` on a v2 connection, `auth/login` on a v1 one: a
/// connection at `version` answers such a request `-32601`. Methods no version names
/// (extensions, `_`-prefixed, or newer than this schema) are never lacked: they are handled
/// or passed on as they are.
pub fn lacks(version: u16, method: &str) -> bool {
    /// For each known version, the methods another version has and it lacks: a handful,
    /// found once, so that the check on every request is a few string comparisons.
    static LACKED: std::sync::LazyLock<Vec<(u16, Vec<&'static str>)>> =
        std::sync::LazyLock::new(|| {
            let names = |v: u16| {
                let (requests, notifications) = tables(v);
                let requests = requests.iter().map(|e| e.method);
                requests
                    .chain(notifications.iter().map(|e| e.method))
                    .collect::<Vec<_>>()
            };
            KNOWN
                .iter()
                .map(|&v| {
                    let own = names(v);
                    let mut lacked: Vec<&'static str> = KNOWN
                        .iter()
                        .flat_map(|&other| names(other))
                        .filter(|m| !own.contains(m))
                        .collect();
                    lacked.sort_unstable();
                    lacked.dedup();
                    (v, lacked)
                })
                .collect()
        });
    LACKED
        .iter()
        .find(|(v, _)| *v == version)
        .is_some_and(|(_, lacked)| lacked.contains(&method))
}

/// The method tables of a known version.
fn tables(
    version: u16,
) -> (
    &'static [sacp_schema::table::RequestEntry<sacp_schema::table::AcpSide>],
    &'static [sacp_schema::table::NotificationEntry<sacp_schema::table::AcpSide>],
) {
    use sacp_schema::acp::{v1, v2};
    match version {
        2 => (v2::methods::REQUESTS, v2::methods::NOTIFICATIONS),
        _ => (v1::methods::REQUESTS, v1::methods::NOTIFICATIONS),
    }
}

/// What a connection at `version` says of a request before any handler sees it: `-32601`
/// for a method the version lacks ([`lacks`]), `-32600` for `id: null`, which v2 forbids.
pub fn refusal(version: u16, id: &Id, method: &str) -> Option<Error> {
    if version >= 2 && *id == Id::Null {
        return Some(Error::invalid_request("ACP v2 forbids `id: null`"));
    }
    lacks(version, method).then(|| {
        let mut e = Error::method_not_found(method);
        e.message = format!("Method not found: {method} is not a method of ACP v{version}");
        e
    })
}

/// The version one connection negotiated: none until its `initialize` is.
#[derive(Debug, Default)]
pub struct Chosen(AtomicU16);

impl Chosen {
    /// The version, once negotiated.
    pub fn get(&self) -> Option<u16> {
        match self.0.load(Ordering::Acquire) {
            0 => None,
            v => Some(v),
        }
    }

    pub(crate) fn set(&self, version: u16) {
        self.0.store(version, Ordering::Release);
    }
}

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
/// the params asking for it (see [`with_version`]), written as that version writes them: a v2
/// request answered at v1 becomes a v1 request (see [`request_as_v1`]), so that a v1 handler,
/// and the successor of a v1 proxy, get the `initialize` they can read.
pub fn accept(params: Option<RawJson>, spoken: &[u16]) -> Result<(u16, RawJson), Error> {
    let requested = of(params.as_ref())?;
    let chosen = negotiate(requested, spoken)?;
    let params = params.ok_or_else(|| Error::invalid_params("initialize without params"))?;
    let params = if requested >= 2 && chosen == 1 {
        request_as_v1(params)?
    } else {
        with_version(params, chosen)?
    };
    Ok((chosen, params))
}

/// An `initialize` request's params as ACP v1 writes them, from a newer version's: v2's `info`
/// is v1's `clientInfo`, and of v2's `capabilities` the ones v1 defines alike (`auth`,
/// `elicitation`, `_meta`) are v1's `clientCapabilities` — not more: a v1 agent reads a missing
/// `fs` or `terminal` as "not offered", which is true of a client that asked in v2 terms. Every
/// other field (`_meta`, extensions) stays as it came; a field the request already has in v1
/// terms is kept over the converted one.
pub fn request_as_v1(params: RawJson) -> Result<RawJson, Error> {
    /// The client capabilities v1 and v2 define alike.
    const SHARED: &[&str] = &["auth", "elicitation", "_meta"];
    let mut value: serde_json::Value = params.parse()?;
    let object = value
        .as_object_mut()
        .ok_or_else(|| Error::invalid_params("initialize: not an object"))?;
    object.insert("protocolVersion".to_owned(), 1.into());
    if let Some(info) = object.remove("info") {
        object.entry("clientInfo").or_insert(info);
    }
    if let Some(capabilities) = object.remove("capabilities") {
        let shared: serde_json::Map<String, serde_json::Value> = match capabilities {
            serde_json::Value::Object(all) => all
                .into_iter()
                .filter(|(key, _)| SHARED.contains(&key.as_str()))
                .collect(),
            _ => serde_json::Map::new(),
        };
        object
            .entry("clientCapabilities")
            .or_insert(serde_json::Value::Object(shared));
    }
    RawJson::to_raw(&value)
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
    fn a_v2_request_answered_at_v1_is_written_as_v1_writes_it() {
        let v2 = RawJson::from_string(
            r#"{"protocolVersion":2,"info":{"name":"zed","version":"1"},"capabilities":{"auth":{"terminal":true},"future":{}},"_meta":{"k":1},"x":[1]}"#
                .to_owned(),
        )
        .unwrap();
        let (chosen, params) = accept(Some(v2), &[1]).unwrap();
        assert_eq!(chosen, 1);
        assert_eq!(
            params.parse::<serde_json::Value>().unwrap(),
            serde_json::json!({
                "protocolVersion": 1,
                "clientInfo": {"name": "zed", "version": "1"},
                "clientCapabilities": {"auth": {"terminal": true}},
                "_meta": {"k": 1},
                "x": [1],
            })
        );
        // A v2 request answered at v2, and a v1 one at v1: as they came.
        let text = r#"{"protocolVersion":2,"info":{"name":"zed","version":"1"},"capabilities":{}}"#;
        let raw = RawJson::from_string(text.to_owned()).unwrap();
        assert_eq!(accept(Some(raw), &[1, 2]).unwrap().1.as_str(), text);
        let text = r#"{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true}}}"#;
        let raw = RawJson::from_string(text.to_owned()).unwrap();
        assert_eq!(accept(Some(raw), &[1]).unwrap().1.as_str(), text);
    }

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
    fn a_version_lacks_only_the_methods_another_version_has() {
        assert!(lacks(2, "session/load"));
        assert!(lacks(2, "fs/read_text_file"));
        assert!(lacks(1, "auth/login"));
        assert!(!lacks(2, "session/prompt"));
        assert!(!lacks(1, "session/load"));
        // Extensions and methods no version names are never lacked.
        assert!(!lacks(2, "_zed/anything"));
        assert!(!lacks(2, "session/from_the_future"));
        assert!(!lacks(1, "_proxy/successor/request"));
        // An unknown version lacks nothing: it is not spoken here.
        assert!(!lacks(9, "session/load"));
    }

    #[test]
    fn v2_refuses_a_null_id_and_v1_does_not() {
        let e = refusal(2, &Id::Null, "session/prompt").unwrap();
        assert_eq!(e.code, -32600);
        assert!(refusal(1, &Id::Null, "session/prompt").is_none());
        assert!(refusal(2, &Id::Number(1), "session/prompt").is_none());
        assert_eq!(
            refusal(2, &Id::Number(1), "session/load").unwrap().code,
            -32601
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
