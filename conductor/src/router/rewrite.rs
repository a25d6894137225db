//! What the router changes in the messages it passes on: session ids, and paths.

use serde_json::{Map, Value};

use super::config::PathMap;
use sacp::jsonrpc::{Error, RawJson};

/// Where a session id stands in a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Place {
    /// The top-level `sessionId` of params or a result: the session the message is about, or
    /// the one a result introduces (`session/new`, `session/fork`).
    Session,
    /// `update.sessionId` of a `subagent_update`: a child of the message's session.
    Child,
    /// `update.senderSessionId` or `update.recipientSessionId` of a session message.
    Peer,
    /// `sessions[].sessionId` of a `session/list` result.
    Listed,
}

/// The session ids of a message, where they travel: every place [`Place`] names.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Ids {
    session_id: Option<String>,
    update: Option<UpdateIds>,
    sessions: Option<Vec<ListedId>>,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct UpdateIds {
    session_update: Option<String>,
    session_id: Option<String>,
    sender_session_id: Option<String>,
    recipient_session_id: Option<String>,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct ListedId {
    session_id: Option<String>,
}

/// The top-level `sessionId` of params or a result, if any.
pub(super) fn session_of(raw: Option<&RawJson>) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Named {
        #[serde(rename = "sessionId")]
        session_id: Option<String>,
    }
    raw?.parse::<Named>().ok()?.session_id
}

/// `raw` with every session id in it renamed by `rename` (called with each id and its place,
/// the top-level one first; `None` leaves an id as it is). Unchanged — bytes and all — when
/// nothing was renamed, and when `raw` is not an object of the shape the places need.
pub(super) fn rename_sessions(
    raw: RawJson,
    mut rename: impl FnMut(&str, Place) -> Option<String>,
) -> Result<RawJson, Error> {
    let Ok(ids) = raw.parse::<Ids>() else {
        return Ok(raw);
    };
    let mut renamed = |id: &Option<String>, place| {
        let id = id.as_deref()?;
        rename(id, place).filter(|new| new != id)
    };
    let top = renamed(&ids.session_id, Place::Session);
    let (child, sender, recipient) = match &ids.update {
        Some(update) => (
            if update.session_update.as_deref() == Some("subagent_update") {
                renamed(&update.session_id, Place::Child)
            } else {
                None
            },
            renamed(&update.sender_session_id, Place::Peer),
            renamed(&update.recipient_session_id, Place::Peer),
        ),
        None => (None, None, None),
    };
    let listed: Vec<Option<String>> = ids
        .sessions
        .iter()
        .flatten()
        .map(|entry| renamed(&entry.session_id, Place::Listed))
        .collect();
    let nothing = top.is_none()
        && child.is_none()
        && sender.is_none()
        && recipient.is_none()
        && listed.iter().all(Option::is_none);
    if nothing {
        return Ok(raw);
    }
    let mut value: Map<String, Value> = raw.parse()?;
    let set = |object: &mut Map<String, Value>, key: &str, id: Option<String>| {
        if let Some(id) = id {
            object.insert(key.to_owned(), Value::String(id));
        }
    };
    set(&mut value, "sessionId", top);
    if let Some(Value::Object(update)) = value.get_mut("update") {
        set(update, "sessionId", child);
        set(update, "senderSessionId", sender);
        set(update, "recipientSessionId", recipient);
    }
    if let Some(Value::Array(sessions)) = value.get_mut("sessions") {
        for (entry, id) in sessions.iter_mut().zip(listed) {
            if let Value::Object(entry) = entry {
                set(entry, "sessionId", id);
            }
        }
    }
    RawJson::to_raw(&value)
}

/// `raw` with its top-level `sessionId` set to `id` (unchanged, bytes and all, when it
/// already is); added when it has none.
pub(super) fn with_session(raw: Option<RawJson>, id: &str) -> Result<Option<RawJson>, Error> {
    let Some(raw) = raw else {
        return Ok(None);
    };
    if session_of(Some(&raw)).as_deref() == Some(id) {
        return Ok(Some(raw));
    }
    let mut value: Map<String, Value> = raw.parse()?;
    value.insert("sessionId".into(), Value::String(id.to_owned()));
    RawJson::to_raw(&value).map(Some)
}

/// Session setup params (`session/new`, `load`, `resume`) with host paths translated: the
/// `cwd`, and the `command`, `args` and `cwd` of stdio MCP servers. `http` and `sse` entries
/// are left alone.
pub(super) fn translate_paths(raw: RawJson, paths: &PathMap) -> Result<RawJson, Error> {
    let mut value: Map<String, Value> = raw.parse()?;
    let translate = |v: &mut Value| {
        if let Some(text) = v.as_str()
            && let Some(seen) = paths.to_backend(text)
        {
            *v = Value::String(seen);
        }
    };
    if let Some(cwd) = value.get_mut("cwd") {
        translate(cwd);
    }
    if let Some(Value::Array(servers)) = value.get_mut("mcpServers") {
        for server in servers.iter_mut().filter_map(Value::as_object_mut) {
            let stdio = !matches!(
                server.get("type").and_then(Value::as_str),
                Some("http" | "sse")
            );
            if !stdio {
                continue;
            }
            for key in ["command", "cwd"] {
                if let Some(v) = server.get_mut(key) {
                    translate(v);
                }
            }
            if let Some(Value::Array(args)) = server.get_mut("args") {
                args.iter_mut().for_each(translate);
            }
        }
    }
    RawJson::to_raw(&value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(v: Value) -> RawJson {
        RawJson::to_raw(&v).unwrap()
    }

    #[test]
    fn stdio_paths_are_translated_and_http_entries_are_not() {
        let paths = PathMap {
            host: "/home/me/app".into(),
            backend: "/workspace".into(),
        };
        let params = raw(serde_json::json!({
            "cwd": "/home/me/app/src",
            "mcpServers": [
                {"name": "fs", "command": "/home/me/app/bin/fs", "args": ["--root", "/home/me/app", "/etc"], "env": []},
                {"type": "http", "name": "web", "url": "http://x/home/me/app", "headers": []}
            ]
        }));
        let out: Value = translate_paths(params, &paths).unwrap().parse().unwrap();
        assert_eq!(out["cwd"], "/workspace/src");
        assert_eq!(out["mcpServers"][0]["command"], "/workspace/bin/fs");
        assert_eq!(
            out["mcpServers"][0]["args"],
            serde_json::json!(["--root", "/workspace", "/etc"])
        );
        assert_eq!(out["mcpServers"][1]["url"], "http://x/home/me/app");
    }

    #[test]
    fn every_place_of_a_session_id_is_renamed_and_nothing_else_changes() {
        let rename = |id: &str, place: Place| Some(format!("{id}@{place:?}"));
        let announcement = raw(serde_json::json!({
            "sessionId": "s1",
            "update": {"sessionUpdate": "subagent_update", "sessionId": "c1", "title": null, "x": 1}
        }));
        let out: Value = rename_sessions(announcement, rename)
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(
            out,
            serde_json::json!({
                "sessionId": "s1@Session",
                "update": {"sessionUpdate": "subagent_update", "sessionId": "c1@Child", "title": null, "x": 1}
            })
        );
        // Another update's own `sessionId` (not a child) is left alone; session messages'
        // peers and listed sessions are renamed.
        let message = raw(serde_json::json!({
            "sessionId": "s1",
            "update": {"sessionUpdate": "session_message", "sessionId": "zz", "senderSessionId": "s1", "recipientSessionId": "c1"}
        }));
        let out: Value = rename_sessions(message, rename).unwrap().parse().unwrap();
        assert_eq!(out["update"]["sessionId"], "zz");
        assert_eq!(out["update"]["senderSessionId"], "s1@Peer");
        assert_eq!(out["update"]["recipientSessionId"], "c1@Peer");
        let listed =
            raw(serde_json::json!({"sessions": [{"sessionId": "a", "cwd": "/"}, {"cwd": "/"}]}));
        let out: Value = rename_sessions(listed, rename).unwrap().parse().unwrap();
        assert_eq!(
            out,
            serde_json::json!({"sessions": [{"sessionId": "a@Listed", "cwd": "/"}, {"cwd": "/"}]})
        );
        // Nothing renamed: the very bytes.
        let text = r#"{"sessionId": "s1",  "update":{"sessionUpdate":"agent_message_chunk"}}"#;
        let same = rename_sessions(RawJson::from_string(text).unwrap(), |_, _| None).unwrap();
        assert_eq!(same.as_str(), text);
        // Not the shape the places need: as it came.
        let odd = r#"{"sessionId": 7}"#;
        let same = rename_sessions(RawJson::from_string(odd).unwrap(), rename).unwrap();
        assert_eq!(same.as_str(), odd);
    }

    #[test]
    fn session_ids_are_set_only_when_they_differ() {
        let same = raw(serde_json::json!({"sessionId": "1", "b": 2}));
        let text = same.as_str().to_owned();
        assert_eq!(
            with_session(Some(same), "1").unwrap().unwrap().as_str(),
            text
        );
        let changed = with_session(Some(raw(serde_json::json!({"sessionId": "1"}))), "1@w")
            .unwrap()
            .unwrap();
        assert_eq!(session_of(Some(&changed)).as_deref(), Some("1@w"));
    }
}
