//! What a chain's agent offers, and what the session layer offers its clients on top of it.
//!
//! Under `--listen` and `--share` the layer answers some session methods itself, whatever the
//! agent offers, and its clients' `initialize` answer says so ([`served`]); what the agent
//! offers that the layer does not serve itself passes through unchanged, and nothing is
//! claimed that would fail:
//!
//! | ACP v1 answer | why the layer can say it |
//! |---|---|
//! | `agentCapabilities.loadSession: true` | `session/load` of a session live here attaches to it and replays its record; of one the journal has, restores it |
//! | `agentCapabilities.sessionCapabilities.resume: {}` | `session/resume` likewise, without the replay |
//! | `agentCapabilities.sessionCapabilities.close: {}` | `session/close` of a session whose agent cannot close it ends it in the layer: its turn cancelled, its clients told, its journal closed |
//! | `agentCapabilities._meta.sacp.attach` | `session/attach` and `session/detach` (the multi-client attach proposal, which names no capability of its own): `{"roles": ["controller", "observer"], "historyPolicies": ["full", "pending_only", "none"]}` |
//!
//! An ACP v2 client's answer has `session/resume` and `session/close` in the baseline its
//! agent's `capabilities.session` offers already; it gets `capabilities._meta.sacp.attach`.

use sacp::jsonrpc::RawJson;
use serde_json::{Map, Value, json};

/// What a chain's agent offers to take a session back, or to end one.
#[derive(Debug, Default)]
pub(super) struct Offers {
    pub(super) resume: bool,
    pub(super) load: bool,
    pub(super) close: bool,
}

impl Offers {
    /// From the agent's answer to `initialize` (v1: `sessionCapabilities.resume`,
    /// `loadSession`, `sessionCapabilities.close`; v2: resume and close are baseline).
    pub(super) fn of(answer: Option<&RawJson>) -> Offers {
        let Some(answer) = answer.and_then(|a| a.parse::<Value>().ok()) else {
            return Offers::default();
        };
        let v1 = &answer["agentCapabilities"];
        let v2 = &answer["capabilities"]["session"];
        Offers {
            resume: v1["sessionCapabilities"]["resume"].is_object() || v2.is_object(),
            load: v1["loadSession"] == true,
            close: v1["sessionCapabilities"]["close"].is_object() || v2.is_object(),
        }
    }
}

/// The key under `_meta.sacp` of the attach capability.
const ATTACH: &str = "attach";

/// The agent's `initialize` `answer` as the layer's clients get it: what the layer serves
/// itself added (see the module docs). An answer that is not an object goes as it is.
pub(super) fn served(answer: RawJson) -> RawJson {
    let Ok(mut answer_map) = answer.parse::<Map<String, Value>>() else {
        return answer;
    };
    let v2 = answer_map
        .get("protocolVersion")
        .and_then(Value::as_u64)
        .is_some_and(|v| v >= 2);
    if v2 {
        offer_attach(object_at(&mut answer_map, "capabilities"));
    } else {
        let capabilities = object_at(&mut answer_map, "agentCapabilities");
        capabilities.insert("loadSession".into(), Value::Bool(true));
        let sessions = object_at(capabilities, "sessionCapabilities");
        for method in ["resume", "close"] {
            if !sessions.get(method).is_some_and(Value::is_object) {
                sessions.insert(method.into(), json!({}));
            }
        }
        offer_attach(capabilities);
    }
    RawJson::to_raw(&answer_map).unwrap_or(answer)
}

/// `capabilities._meta.sacp.attach`.
fn offer_attach(capabilities: &mut Map<String, Value>) {
    let sacp = object_at(object_at(capabilities, "_meta"), "sacp");
    sacp.insert(
        ATTACH.into(),
        json!({
            "roles": ["controller", "observer"],
            "historyPolicies": ["full", "pending_only", "none"],
        }),
    );
}

/// The object at `key` of `map`, made one if it is missing or not an object (`null`).
fn object_at<'a>(map: &'a mut Map<String, Value>, key: &str) -> &'a mut Map<String, Value> {
    let slot = map.entry(key).or_insert_with(|| Value::Object(Map::new()));
    if !slot.is_object() {
        *slot = Value::Object(Map::new());
    }
    slot.as_object_mut().expect("made an object just now")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(value: Value) -> RawJson {
        RawJson::to_raw(&value).unwrap()
    }

    #[test]
    fn a_v1_answer_gains_what_the_layer_serves_and_keeps_the_rest() {
        let agent = json!({
            "protocolVersion": 1,
            "agentCapabilities": {
                "loadSession": false,
                "promptCapabilities": {"image": true},
                "sessionCapabilities": {"list": {}, "resume": null},
                "_meta": {"sacp": {"history": true}, "vendor": 1},
            },
            "authMethods": [],
            "unknownField": "kept",
        });
        let served: Value = served(raw(agent)).parse().unwrap();
        assert_eq!(
            served,
            json!({
                "protocolVersion": 1,
                "agentCapabilities": {
                    "loadSession": true,
                    "promptCapabilities": {"image": true},
                    "sessionCapabilities": {"list": {}, "resume": {}, "close": {}},
                    "_meta": {"sacp": {"history": true, "attach": {
                        "roles": ["controller", "observer"],
                        "historyPolicies": ["full", "pending_only", "none"],
                    }}, "vendor": 1},
                },
                "authMethods": [],
                "unknownField": "kept",
            })
        );
        let offers = Offers::of(Some(&raw(served)));
        assert!(offers.load && offers.resume && offers.close);
    }

    #[test]
    fn a_v2_answer_gains_attach_and_an_answer_without_capabilities_gets_them() {
        let agent = json!({"protocolVersion": 2, "capabilities": {"session": {}}});
        let served: Value = served(raw(agent)).parse().unwrap();
        assert_eq!(served["capabilities"]["session"], json!({}));
        assert!(served["capabilities"]["_meta"]["sacp"]["attach"].is_object());
        assert!(served.get("agentCapabilities").is_none());
        let bare: Value = served_of(json!({"protocolVersion": 1}));
        assert_eq!(bare["agentCapabilities"]["loadSession"], true);
        assert_eq!(
            bare["agentCapabilities"]["sessionCapabilities"]["resume"],
            json!({})
        );
        assert_eq!(served_of(json!([1, 2])), json!([1, 2]));
    }

    fn served_of(value: Value) -> Value {
        served(raw(value)).parse().unwrap()
    }
}
