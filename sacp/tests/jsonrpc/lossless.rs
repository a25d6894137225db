//! Typed is lossless: every ACP message of the corpora — the schema crate's fixtures, and the
//! protocols' documentation examples when `SACP_SCHEMA_DIR` is set — read into its type and
//! written again is the same text, byte for byte; and so is each one with a field newer than
//! the schema and an explicit `null` added to every object in it.

use std::collections::HashMap;
use std::path::PathBuf;

use sacp::jsonrpc::{HasOrigin, RawJson, lossless};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

type RoundTrip = fn(&str) -> Result<String, String>;

fn round_trip<T: Serialize + DeserializeOwned + HasOrigin>(text: &str) -> Result<String, String> {
    let raw = RawJson::from_string(text).map_err(|e| e.message)?;
    let value: T = lossless::read(&raw).map_err(|e| e.message)?;
    lossless::write(&value)
        .map(|raw| raw.as_str().to_owned())
        .map_err(|e| e.message)
}

fn short(path: &str) -> String {
    path.rsplit("::").next().unwrap_or(path).trim().to_owned()
}

macro_rules! requests {
    ($(($params:ty, $response:ty, $method:literal, $receiver:ident),)*) => {
        vec![$(
            (short(stringify!($params)), round_trip::<$params> as RoundTrip),
            (short(stringify!($response)), round_trip::<$response> as RoundTrip),
        )*]
    };
}

macro_rules! notifications {
    ($(($params:ty, $method:literal, $receiver:ident),)*) => {
        vec![$((short(stringify!($params)), round_trip::<$params> as RoundTrip),)*]
    };
}

fn v1() -> HashMap<String, RoundTrip> {
    let mut all: Vec<(String, RoundTrip)> = sacp::schema::for_each_acp_v1_request!(requests);
    all.extend(sacp::schema::for_each_acp_v1_notification!(notifications));
    all.into_iter().collect()
}

fn v2() -> HashMap<String, RoundTrip> {
    let mut all: Vec<(String, RoundTrip)> = sacp::schema::for_each_acp_v2_request!(requests);
    all.extend(sacp::schema::for_each_acp_v2_notification!(notifications));
    all.into_iter().collect()
}

/// `(source, type, json)` of each case of a corpus file.
fn cases(text: &str) -> Vec<(String, String, Value)> {
    let cases: Vec<Value> = serde_json::from_str(text).expect("a corpus is a JSON array");
    cases
        .into_iter()
        .map(|c| {
            (
                c.get("src")
                    .and_then(Value::as_str)
                    .unwrap_or("fixture")
                    .to_owned(),
                c["type"].as_str().unwrap_or_default().to_owned(),
                c["json"].clone(),
            )
        })
        .collect()
}

/// Adds `"futureField": {"n": 1}` and `"futureNull": null` to every object of `value`.
fn with_future_fields(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for v in map.values_mut() {
                with_future_fields(v);
            }
            map.insert("futureField".into(), serde_json::json!({"n": 1}));
            map.insert("futureNull".into(), Value::Null);
        }
        Value::Array(items) => items.iter_mut().for_each(with_future_fields),
        _ => {}
    }
}

/// Checks every case of `corpus` whose type is a message of `registry`; how many it checked.
fn check(corpus: &str, registry: &HashMap<String, RoundTrip>) -> usize {
    let mut checked = 0;
    let mut problems = Vec::new();
    for (source, ty, json) in cases(corpus) {
        let Some(round_trip) = registry.get(&ty) else {
            continue;
        };
        let mut future = json.clone();
        with_future_fields(&mut future);
        for value in [json, future] {
            let text = value.to_string();
            match round_trip(&text) {
                Ok(out) if out == text => checked += 1,
                Ok(out) => problems.push(format!("{source} {ty}:\n  in:  {text}\n  out: {out}")),
                // What does not fit its type is never handled typed: it is forwarded untouched.
                Err(_) => {}
            }
        }
    }
    assert!(
        problems.is_empty(),
        "changed on the way:\n{}",
        problems.join("\n")
    );
    checked
}

fn fixture(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../sacp-schema/tests/fixtures")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn the_fixtures_messages_leave_as_they_came() {
    assert!(check(&fixture("acp_v1.json"), &v1()) > 40);
    assert!(check(&fixture("acp_v2.json"), &v2()) > 40);
}

#[test]
fn the_documentation_examples_leave_as_they_came() {
    let Some(dir) = std::env::var_os("SACP_SCHEMA_DIR") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "SACP_SCHEMA_DIR is not set (under CI it must be)"
        );
        eprintln!("SACP_SCHEMA_DIR is not set: the documentation examples are not checked");
        return;
    };
    let mut dir = PathBuf::from(dir);
    if dir.is_relative() {
        dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("..")
            .join(dir);
    }
    let read = |name: &str| {
        std::fs::read_to_string(dir.join("examples").join(name).join("cases.json"))
            .unwrap_or_else(|e| panic!("{name}: {e}"))
    };
    assert!(check(&read("acp-v1"), &v1()) > 50);
    assert!(check(&read("acp-v2"), &v2()) > 50);
}
