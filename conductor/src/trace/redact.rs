//! Secrets never reach the trace: the bearer tokens of the conductor's HTTP MCP bridge
//! (`Authorization` headers of `mcpServers` entries), the stdio bridge's
//! `SACP_MCP_BRIDGE_TOKEN`, and any other `Authorization` header or variable of that name.

use serde_json::Value;

use crate::bridge::TOKEN_ENV;

/// What stands in for a secret.
pub(crate) const REDACTED: &str = "[redacted]";

/// Whether `payload` may hold a secret (a fast check before [`redact`]).
pub(super) fn needed(payload: &[u8]) -> bool {
    let has = |needle: &[u8]| {
        payload
            .windows(needle.len())
            .any(|w| w.eq_ignore_ascii_case(needle))
    };
    has(b"authorization") || has(TOKEN_ENV.as_bytes())
}

/// `payload` with every secret replaced by [`REDACTED`].
pub(super) fn redact(payload: &[u8]) -> Vec<u8> {
    let Ok(mut value) = serde_json::from_slice::<Value>(payload) else {
        return serde_json::to_vec(REDACTED).unwrap_or_default();
    };
    walk(&mut value);
    serde_json::to_vec(&value).unwrap_or_default()
}

fn secret_name(name: &str) -> bool {
    name.eq_ignore_ascii_case("authorization") || name == TOKEN_ENV
}

fn walk(value: &mut Value) {
    match value {
        Value::Object(map) => {
            // `{"name": "Authorization", "value": "Bearer …"}` (headers, env variables).
            let named = map
                .get("name")
                .and_then(Value::as_str)
                .is_some_and(secret_name);
            if named && let Some(secret) = map.get_mut("value") {
                *secret = Value::from(REDACTED);
            }
            for (key, item) in map.iter_mut() {
                if secret_name(key) && item.is_string() {
                    *item = Value::from(REDACTED);
                } else {
                    walk(item);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(walk),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bridge_secrets_are_redacted_and_nothing_else() {
        let entry = br#"{"mcpServers":[{"type":"http","name":"s","url":"http://127.0.0.1:1/x","headers":[{"name":"Authorization","value":"Bearer abc123"}]},{"name":"t","command":"/c","args":["mcp","1"],"env":[{"name":"SACP_MCP_BRIDGE_TOKEN","value":"abc123"}]}],"other":{"authorization":"Basic x"},"text":"hello"}"#;
        assert!(needed(entry));
        let out = String::from_utf8(redact(entry)).unwrap();
        assert!(!out.contains("abc123") && !out.contains("Basic x"), "{out}");
        assert_eq!(out.matches(REDACTED).count(), 3, "{out}");
        assert!(out.contains(r#""text":"hello""#));
        assert!(!needed(br#"{"text":"hello"}"#));
    }
}
