//! What the router changes in the messages it passes on: session ids, and paths.

use serde_json::{Map, Value};

use super::config::PathMap;
use sacp::jsonrpc::{Error, RawJson};

/// The top-level `sessionId` of params or a result, if any.
pub(super) fn session_of(raw: Option<&RawJson>) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Named {
        #[serde(rename = "sessionId")]
        session_id: Option<String>,
    }
    raw?.parse::<Named>().ok()?.session_id
}

/// `raw` with its top-level `sessionId` set to `id` (unchanged, bytes and all, when it
/// already is).
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

/// `session/list` results with each session's id mapped by `rename` (sessions it returns
/// `None` for are left out).
pub(super) fn list_sessions(
    result: &RawJson,
    mut rename: impl FnMut(&str) -> Option<String>,
) -> Result<Vec<Value>, Error> {
    let value: Map<String, Value> = result.parse()?;
    let Some(Value::Array(sessions)) = value.get("sessions") else {
        return Ok(Vec::new());
    };
    Ok(sessions
        .iter()
        .filter_map(|session| {
            let mut session = session.as_object()?.clone();
            let id = session.get("sessionId")?.as_str()?;
            let renamed = rename(id)?;
            session.insert("sessionId".into(), Value::String(renamed));
            Some(Value::Object(session))
        })
        .collect())
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
