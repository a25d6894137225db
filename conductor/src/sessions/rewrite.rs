//! Session ids where they travel in a message: which session a message is about, and the
//! message with its ids renamed (the session layer's and the router's ids toward the editor,
//! the chain's or backend's own toward it).

use serde_json::{Map, Value};

use sacp::jsonrpc::{Error, RawJson};

/// Where a session id stands in a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Place {
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
pub(crate) fn session_of(raw: Option<&RawJson>) -> Option<String> {
    raw?.str_member("sessionId")
        .map(std::borrow::Cow::into_owned)
}

/// `raw` with every session id in it renamed by `rename` (called with each id and its place,
/// the top-level one first; `None` leaves an id as it is). Unchanged — bytes and all — when
/// nothing was renamed, and when `raw` is not an object of the shape the places need.
pub(crate) fn rename_sessions(
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

/// Whether a session id may stand in `raw` anywhere but at its top level (a subagent's
/// announcement, a session message's peers, a listing): found by a search of its text, so
/// that a message whose only id is its top-level one can be renamed without a parse.
pub(crate) fn has_other_places(raw: &RawJson) -> bool {
    // Built once: a searcher's set-up costs more than a search of a short message.
    static NEEDLES: std::sync::LazyLock<[memchr::memmem::Finder<'static>; 3]> =
        std::sync::LazyLock::new(|| {
            [&b"\"subagent_update\""[..], b"SessionId\"", b"\"sessions\""]
                .map(memchr::memmem::Finder::new)
        });
    let text = raw.as_bytes();
    NEEDLES.iter().any(|needle| needle.find(text).is_some())
}

/// `raw` with its top-level `sessionId` set to `id` (unchanged, bytes and all, when it
/// already is); added when it has none.
pub(crate) fn with_session(raw: Option<RawJson>, id: &str) -> Result<Option<RawJson>, Error> {
    let Some(raw) = raw else {
        return Ok(None);
    };
    if let Some(current) = raw.plain_str("sessionId") {
        if current == id {
            return Ok(Some(raw));
        }
        if let Some(renamed) = raw.with_plain_str("sessionId", id) {
            return Ok(Some(renamed));
        }
    }
    if session_of(Some(&raw)).as_deref() == Some(id) {
        return Ok(Some(raw));
    }
    let mut value: Map<String, Value> = raw.parse()?;
    value.insert("sessionId".into(), Value::String(id.to_owned()));
    RawJson::to_raw(&value).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(v: Value) -> RawJson {
        RawJson::to_raw(&v).unwrap()
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
