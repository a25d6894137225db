//! What the router changes in the messages it passes on besides session ids (those are the
//! session layer's, `crate::sessions::rewrite`): paths.

use serde_json::{Map, Value};

use super::config::PathMap;
use sacp::jsonrpc::{Error, RawJson};

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
}
