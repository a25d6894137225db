//! Typed values that keep what their type does not show.
//!
//! A typed handler reads a message into a Rust type and may send it on, changed or not. The
//! type shows only what the schema knew when it was generated: a field added by a newer peer,
//! an explicit `null` (which the type reads as absent — in ACP v2 a patch's "clear this"), the
//! peer's key order, all would be lost by serializing the value again. So a message type that
//! keeps its [`Origin`] (every ACP request, response and notification does) is written
//! against the JSON it was read from:
//!
//! - **unchanged** — its serialization equals that of the value read from its origin — it goes
//!   out as the origin's bytes, exactly;
//! - **changed** — the change (what the type shows of the value now against what it showed of
//!   the origin) is applied to the origin's JSON: changed and added fields take the new value
//!   in place, removed ones go, and everything the type did not show stays as it came, at
//!   every depth. Arrays are aligned element by element (a longest common subsequence), so an
//!   inserted or removed element keeps the others' unknown fields.
//!
//! A value made by a handler has no origin and is serialized as it is. The untyped paths
//! (forwarding, relaying) never parse at all, so none of this costs them anything.

use bytes::Bytes;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::{Error, RawJson};
pub use sacp_schema::{HasOrigin, Origin};

/// Arrays longer than this are aligned by position instead of by a common subsequence (the
/// table it needs grows with the square of the length).
const ALIGN_AT_MOST: usize = 512;

/// Reads a `T` from `raw`, keeping `raw` as its origin (a failure is `-32602`).
pub fn read<T: Serialize + DeserializeOwned + HasOrigin>(raw: &RawJson) -> Result<T, Error> {
    let value: T = raw.parse()?;
    Ok(keeping(value, raw))
}

/// Reads a message's params as [`read`] does; absent params as `null`, or failing that `{}`
/// (with no origin: there was nothing to keep).
pub fn read_params<T: Serialize + DeserializeOwned + HasOrigin>(
    params: Option<RawJson>,
) -> Result<T, Error> {
    match params {
        Some(raw) => read(&raw),
        None => super::parse_params(None),
    }
}

/// Reads a response's result as [`read`] does (a failure says the peer's response does not
/// match).
pub fn read_result<T: Serialize + DeserializeOwned + HasOrigin>(
    result: RawJson,
) -> Result<T, Error> {
    let value: T = super::decode_typed(result.clone())?;
    Ok(keeping(value, &result))
}

/// `value`, read from `raw`, with its origin: `raw`, and what the type shows of it.
fn keeping<T: Serialize + HasOrigin>(mut value: T, raw: &RawJson) -> T {
    let json = raw.bytes();
    let seen = serde_json::to_vec(&value)
        .map(Bytes::from)
        .unwrap_or_default();
    *value.origin_mut() = Origin::read(json, seen);
    value
}

/// Writes `value`: its origin where it is unchanged, the origin with the change applied where
/// it changed, and its own serialization when it has no origin or its type showed all of it
/// (see the module docs).
pub fn write<T: Serialize + HasOrigin>(value: &T) -> Result<RawJson, Error> {
    let origin = value.origin();
    let Some(json) = origin.json() else {
        return RawJson::to_raw(value);
    };
    let now = serialize(value)?;
    let seen: &[u8] = origin.seen().map_or(json, |seen| seen);
    let single_line = !json.contains(&b'\n') && !json.contains(&b'\r');
    if now == seen && single_line {
        // Unchanged: as it came.
        return Ok(RawJson::from_trusted(json.clone()));
    }
    if origin.seen().is_none() {
        // The type showed all of it: what it shows now is all there is.
        return Ok(RawJson::from_trusted(Bytes::from(now)));
    }
    let (Ok(mut merged), Ok(seen), Ok(now_value)) = (
        serde_json::from_slice::<Value>(json),
        serde_json::from_slice::<Value>(seen),
        serde_json::from_slice::<Value>(&now),
    ) else {
        return Ok(RawJson::from_trusted(Bytes::from(now)));
    };
    apply(&mut merged, &seen, now_value);
    RawJson::to_raw(&merged)
}

fn serialize<T: Serialize>(value: &T) -> Result<Vec<u8>, Error> {
    serde_json::to_vec(value)
        .map_err(|e| Error::internal_error(format!("failed to serialize a payload: {e}")))
}

/// Applies the change from `seen` to `now` to `original`, which `seen` is the typed view of.
fn apply(original: &mut Value, seen: &Value, now: Value) {
    if *seen == now {
        return;
    }
    match (original, seen, now) {
        (Value::Object(original), Value::Object(seen), Value::Object(now)) => {
            apply_object(original, seen, now)
        }
        (Value::Array(original), Value::Array(seen), Value::Array(now))
            if original.len() == seen.len() =>
        {
            apply_array(original, seen, now)
        }
        (original, _, now) => *original = now,
    }
}

fn apply_object(
    original: &mut Map<String, Value>,
    seen: &Map<String, Value>,
    now: Map<String, Value>,
) {
    // What the handler removed.
    for key in seen.keys() {
        if !now.contains_key(key) {
            original.shift_remove(key);
        }
    }
    for (key, value) in now {
        match (original.get_mut(&key), seen.get(&key)) {
            (Some(was), Some(seen)) => apply(was, seen, value),
            // The type showed a default the origin did not have: only a change counts.
            (None, Some(seen)) => {
                if *seen != value {
                    original.insert(key, value);
                }
            }
            // Set where the origin had what the type did not show (a `null`, say): in place.
            (Some(was), None) => *was = value,
            (None, None) => {
                original.insert(key, value);
            }
        }
    }
}

/// `original[i]` is what `seen[i]` was read from. The elements of `now` that are elements of
/// `seen` (a longest common subsequence) take their original; in each run between them, the
/// new elements are applied to the removed ones pairwise (an element changed in place keeps its
/// unknown fields), and the rest are added or dropped.
fn apply_array(original: &mut Vec<Value>, seen: &[Value], now: Vec<Value>) {
    let pairs = if seen.len() <= ALIGN_AT_MOST && now.len() <= ALIGN_AT_MOST {
        common_subsequence(seen, &now)
    } else {
        Vec::new()
    };
    let mut was: Vec<Option<Value>> = std::mem::take(original).into_iter().map(Some).collect();
    let mut result = Vec::with_capacity(now.len());
    let (mut i, mut j) = (0, 0);
    let mut now = now.into_iter().map(Some).collect::<Vec<_>>();
    for (si, nj) in pairs.into_iter().chain([(seen.len(), now.len())]) {
        // The run before this pair: seen[i..si] removed or changed, now[j..nj] added or changed.
        let mut k = i;
        while j < nj {
            let value = now[j].take().unwrap_or(Value::Null);
            if k < si {
                let mut element = was[k].take().unwrap_or(Value::Null);
                apply(&mut element, &seen[k], value);
                result.push(element);
                k += 1;
            } else {
                result.push(value);
            }
            j += 1;
        }
        if si < seen.len() {
            result.push(was[si].take().unwrap_or(Value::Null));
            now[nj].take();
        }
        i = si + 1;
        j = nj + 1;
    }
    *original = result;
}

/// The pairs `(i, j)` of a longest common subsequence of `a` and `b`, in order.
fn common_subsequence(a: &[Value], b: &[Value]) -> Vec<(usize, usize)> {
    let (n, m) = (a.len(), b.len());
    let mut table = vec![0u32; (n + 1) * (m + 1)];
    let at = |i: usize, j: usize| i * (m + 1) + j;
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            table[at(i, j)] = if a[i] == b[j] {
                table[at(i + 1, j + 1)] + 1
            } else {
                table[at(i + 1, j)].max(table[at(i, j + 1)])
            };
        }
    }
    let (mut i, mut j, mut pairs) = (0, 0, Vec::new());
    while i < n && j < m {
        if a[i] == b[j] {
            pairs.push((i, j));
            i += 1;
            j += 1;
        } else if table[at(i + 1, j)] >= table[at(i, j + 1)] {
            i += 1;
        } else {
            j += 1;
        }
    }
    pairs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acp::{
        ContentBlock, PromptRequest, PromptResponse, SessionNotification, SessionUpdate,
        StopReason, TextContent,
    };
    use serde_json::json;

    fn raw(value: Value) -> RawJson {
        RawJson::from_string(value.to_string()).unwrap()
    }

    fn text(raw: &RawJson) -> String {
        raw.as_str().to_owned()
    }

    #[test]
    fn an_unchanged_message_goes_out_byte_for_byte() {
        // Unknown fields, an explicit null, and an order of keys the type would not write.
        let came = r#"{"stopReason":"end_turn","futureRes":3,"_meta":null}"#;
        let response: PromptResponse = read(&RawJson::from_string(came).unwrap()).unwrap();
        assert_eq!(response.stop_reason, StopReason::EndTurn);
        assert_eq!(text(&write(&response).unwrap()), came);
    }

    #[test]
    fn a_change_is_made_in_place_and_keeps_the_rest() {
        let came = json!({
            "sessionId": "s1",
            "update": {
                "sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": "hi", "futureAnno": {"x": 1}},
                "futureUpd": true
            },
            "futureParam": [1, 2]
        });
        let mut n: SessionNotification = read(&raw(came)).unwrap();
        if let SessionUpdate::AgentMessageChunk(chunk) = &mut n.update
            && let ContentBlock::Text(t) = &mut chunk.content
        {
            t.text = "» hi".to_owned();
        }
        let out: Value = serde_json::from_str(write(&n).unwrap().as_str()).unwrap();
        assert_eq!(
            out,
            json!({
                "sessionId": "s1",
                "update": {
                    "sessionUpdate": "agent_message_chunk",
                    "content": {"type": "text", "text": "» hi", "futureAnno": {"x": 1}},
                    "futureUpd": true
                },
                "futureParam": [1, 2]
            })
        );
    }

    #[test]
    fn nulls_the_handler_did_not_touch_stay_nulls() {
        let came = json!({
            "sessionId": "s1",
            "update": {
                "sessionUpdate": "tool_call_update",
                "toolCallId": "t1",
                "title": null,
                "locations": null,
                "status": "in_progress"
            }
        });
        let mut n: SessionNotification = read(&raw(came)).unwrap();
        if let SessionUpdate::ToolCallUpdate(update) = &mut n.update {
            update.status = Some(crate::acp::ToolCallStatus::Completed);
        }
        let out = text(&write(&n).unwrap());
        assert_eq!(
            out,
            r#"{"sessionId":"s1","update":{"sessionUpdate":"tool_call_update","toolCallId":"t1","title":null,"locations":null,"status":"completed"}}"#
        );
    }

    #[test]
    fn an_inserted_block_keeps_the_others_unknown_fields() {
        let came = json!({
            "sessionId": "s1",
            "prompt": [
                {"type": "text", "text": "one", "futureAnno": 1},
                {"type": "text", "text": "two", "futureAnno": 2}
            ]
        });
        let mut req: PromptRequest = read(&raw(came)).unwrap();
        req.prompt
            .insert(0, ContentBlock::Text(TextContent::new("context")));
        if let ContentBlock::Text(t) = &mut req.prompt[2] {
            t.text = "TWO".to_owned();
        }
        let out: Value = serde_json::from_str(write(&req).unwrap().as_str()).unwrap();
        assert_eq!(
            out["prompt"],
            json!([
                {"type": "text", "text": "context"},
                {"type": "text", "text": "one", "futureAnno": 1},
                {"type": "text", "text": "TWO", "futureAnno": 2}
            ])
        );
    }

    #[test]
    fn an_unknown_kind_of_update_goes_on_as_it_came() {
        let came =
            r#"{"sessionId":"s1","update":{"sessionUpdate":"future_kind","x":[1,{"y":null}]}}"#;
        let n: SessionNotification = read(&RawJson::from_string(came).unwrap()).unwrap();
        assert!(matches!(n.update, SessionUpdate::Other(_)));
        assert_eq!(text(&write(&n).unwrap()), came);
    }

    #[test]
    fn a_message_made_here_is_written_as_it_is() {
        let response = PromptResponse::new(StopReason::Cancelled);
        assert_eq!(
            text(&write(&response).unwrap()),
            r#"{"stopReason":"cancelled"}"#
        );
    }

    #[test]
    fn arrays_align_on_what_they_have_in_common() {
        let v = |s: &str| json!({"k": s});
        let seen = Value::Array(vec![v("a"), v("b"), v("c")]);
        let mut target = json!([{"k": "a", "u": 1}, {"k": "b", "u": 2}, {"k": "c", "u": 3}]);
        // `b` removed, `x` added after `c`.
        apply(
            &mut target,
            &seen,
            Value::Array(vec![v("a"), v("c"), v("x")]),
        );
        assert_eq!(
            target,
            json!([{"k": "a", "u": 1}, {"k": "c", "u": 3}, {"k": "x"}])
        );
        // `b` changed in place keeps its unknown field.
        let mut target = json!([{"k": "a", "u": 1}, {"k": "b", "u": 2}, {"k": "c", "u": 3}]);
        apply(
            &mut target,
            &seen,
            Value::Array(vec![v("a"), v("B"), v("c")]),
        );
        assert_eq!(
            target,
            json!([{"k": "a", "u": 1}, {"k": "B", "u": 2}, {"k": "c", "u": 3}])
        );
    }
}
