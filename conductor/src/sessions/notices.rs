//! What the session layer says itself, beside what the agent says: its notifications
//! (`_sacp/turn_ended`, `_sacp/history_left_out`, `_sacp/detached`, `_sacp/session_moved`),
//! a prompt shown as the agent's own replay would show it, a v2 session's current state, and
//! a history item of `session/attach`'s answer. Plain functions of their inputs.

use sacp::jsonrpc::{Error, RawJson};
use serde_json::Value;

use super::record::{Entry, LeftOut, Record};

/// The method of the layer's notification that a turn ended (see the module docs of
/// `sessions`).
pub(crate) const TURN_ENDED: &str = "_sacp/turn_ended";
/// The method of the layer's notice that a replay leaves the session's oldest entries out.
pub(crate) const HISTORY_LEFT_OUT: &str = "_sacp/history_left_out";
/// The method of the layer's notice that a client was detached from a session because it
/// took nothing while the session's record was full.
pub(crate) const DETACHED: &str = "_sacp/detached";
/// The method of the layer's notice that another conductor sharing the journal took the
/// session over: `{"sessionId", "heldBy"}`, the conductor a client loads it from now.
pub(crate) const SESSION_MOVED: &str = "_sacp/session_moved";

/// A prompt's content blocks as the `user_message_chunk` updates an agent's own replay gives.
pub(super) fn user_messages(session: &str, params: &RawJson) -> Vec<RawJson> {
    #[derive(serde::Deserialize)]
    struct Prompt {
        prompt: Vec<Box<serde_json::value::RawValue>>,
    }
    let Ok(prompt) = params.parse::<Prompt>() else {
        return Vec::new();
    };
    prompt
        .prompt
        .into_iter()
        .filter_map(|block| {
            let update = serde_json::json!({
                "sessionId": session,
                "update": {"sessionUpdate": "user_message_chunk", "content": block},
            });
            RawJson::to_raw(&update).ok()
        })
        .collect()
}

/// `_sacp/turn_ended`: `{"sessionId", "stopReason"}`, or `{"sessionId", "error"}` for a
/// prompt that failed.
pub(super) fn turn_ended_params(session: &str, result: &Result<RawJson, Box<Error>>) -> RawJson {
    #[derive(serde::Deserialize)]
    struct Stop {
        #[serde(rename = "stopReason")]
        stop_reason: Option<Value>,
    }
    let value = match result {
        Ok(answer) => {
            let stop = answer.parse::<Stop>().ok().and_then(|s| s.stop_reason);
            serde_json::json!({"sessionId": session, "stopReason": stop})
        }
        Err(e) => serde_json::json!({"sessionId": session, "error": e}),
    };
    raw(&value)
}

/// `_sacp/history_left_out`: how much of the session's beginning a replay leaves out.
pub(super) fn left_out_params(session: &str, left_out: LeftOut) -> RawJson {
    raw(&serde_json::json!({
        "sessionId": session,
        "turns": left_out.turns,
        "entries": left_out.entries,
    }))
}

/// `_sacp/detached`: the client took nothing of a full record.
pub(super) fn detached_params(session: &str) -> RawJson {
    raw(&serde_json::json!({
        "sessionId": session,
        "reason": "the client took nothing of the session's stream while its record was full",
    }))
}

/// `_sacp/session_moved`: the conductor `by` holds the session now.
pub(super) fn moved_params(session: &str, by: &str) -> RawJson {
    raw(&serde_json::json!({"sessionId": session, "heldBy": by}))
}

/// Session `id`'s current v2 state: the agent's last `state_update` the record holds, else
/// `running` while a turn runs, else `idle`.
pub(super) fn current_state(record: &Record, id: &str, running: bool) -> RawJson {
    let last = record.newest(|entry| {
        matches!(entry, Entry::Notification { params, .. }
            if memchr::memmem::find(params.as_bytes(), b"\"state_update\"").is_some()
                && params.member_at(&["update", "sessionUpdate"]).is_some_and(|k| k.as_str() == "\"state_update\""))
    });
    match last {
        Some(Entry::Notification { params, .. }) => params.clone(),
        _ => state_update(id, running),
    }
}

/// A v2 `state_update` of session `id`: `running` while a turn runs, else `idle`.
fn state_update(id: &str, running: bool) -> RawJson {
    let state = if running { "running" } else { "idle" };
    raw(&serde_json::json!({
        "sessionId": id,
        "update": {"sessionUpdate": "state_update", "state": state},
    }))
}

/// What the record holds, as `{method, params}`, in order: what a `session/load` would
/// replay (a client `v1` is told of turns' ends with `_sacp/turn_ended`), the prompts as
/// `session/prompt`, the agent's requests, a notice first if the record left out the
/// session's beginning.
pub(super) fn history(
    record: &Record,
    id: &str,
    v1: bool,
    takes: Option<&sacp::protocol::content::Accepts>,
) -> Vec<Value> {
    let item = |method: &str, params: &RawJson| shown(method, params, takes);
    let mut out = Vec::new();
    let left_out = record.left_out();
    if left_out.entries > 0 {
        out.push(item(HISTORY_LEFT_OUT, &left_out_params(id, left_out)));
    }
    for (_, entry) in record.since(0) {
        match entry {
            Entry::Notification { method, params, .. } => out.push(item(method, params)),
            Entry::Prompt { params, .. } => out.push(item("session/prompt", params)),
            Entry::TurnEnded { result, .. } => {
                if v1 {
                    out.push(item(TURN_ENDED, &turn_ended_params(id, result)));
                }
            }
            Entry::Ask(ask) => out.push(item(&ask.method, &ask.params)),
        }
    }
    out
}

/// [`item`], its content adapted to what the client `takes`.
pub(super) fn shown(
    method: &str,
    params: &RawJson,
    takes: Option<&sacp::protocol::content::Accepts>,
) -> Value {
    match takes.and_then(|takes| sacp::protocol::content::adapt(method, params, takes)) {
        Some((adapted, _)) => item(method, &adapted),
        None => item(method, params),
    }
}

/// `{method, params}`: one item of `session/attach`'s `history`.
pub(super) fn item(method: &str, params: &RawJson) -> Value {
    let params = params.parse::<Value>().unwrap_or(Value::Null);
    serde_json::json!({ "method": method, "params": params })
}

fn raw(value: &Value) -> RawJson {
    RawJson::to_raw(value).unwrap_or_else(|_| RawJson::null())
}
