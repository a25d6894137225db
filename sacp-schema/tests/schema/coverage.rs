//! Every method of each table has at least one example, in params and in response.

use std::collections::BTreeSet;

use sacp_schema::table::{NotificationEntry, RequestEntry};

use crate::fixtures;
use crate::harness::Case;

fn covered(cases: &[Case]) -> BTreeSet<&str> {
    cases.iter().map(|c| c.ty.as_str()).collect()
}

/// The params and response types of a table that no case is an instance of.
fn missing<S>(
    requests: &[RequestEntry<S>],
    notifications: &[NotificationEntry<S>],
    cases: &[Case],
) -> Vec<&'static str> {
    let have = covered(cases);
    requests
        .iter()
        .flat_map(|r| [r.params_type, r.response_type])
        .chain(notifications.iter().map(|n| n.params_type))
        .filter(|t| !have.contains(t))
        .collect()
}

#[test]
fn every_acp_v1_method_has_examples() {
    use sacp_schema::acp::v1::methods::{NOTIFICATIONS, REQUESTS};
    let missing = missing(REQUESTS, NOTIFICATIONS, &fixtures::acp_v1_cases());
    assert!(missing.is_empty(), "no example for: {missing:?}");
}

#[test]
fn every_acp_v2_method_has_examples() {
    use sacp_schema::acp::v2::methods::{NOTIFICATIONS, REQUESTS};
    let missing = missing(REQUESTS, NOTIFICATIONS, &fixtures::acp_v2_cases());
    assert!(missing.is_empty(), "no example for: {missing:?}");
}

/// Every `SessionUpdate` kind of the schema has an example.
#[test]
fn every_session_update_kind_has_examples() {
    for (file, text, kinds) in [
        ("acp v1", fixture_texts("v1"), session_update_kinds("v1")),
        ("acp v2", fixture_texts("v2"), session_update_kinds("v2")),
    ] {
        let missing: Vec<&&str> = kinds
            .iter()
            .filter(|k| !text.contains(&format!("\"sessionUpdate\": \"{k}\"")))
            .collect();
        assert!(
            missing.is_empty(),
            "{file}: no example of session update kinds {missing:?}"
        );
    }
}

/// The text of a version's fixture files (with the feature `unstable`, its unstable ones too).
fn fixture_texts(version: &str) -> String {
    let stable = match version {
        "v1" => include_str!("../fixtures/acp_v1.json"),
        _ => include_str!("../fixtures/acp_v2.json"),
    };
    #[cfg(feature = "unstable")]
    let stable = format!(
        "{stable}{}",
        match version {
            "v1" => include_str!("../fixtures/acp_v1_unstable.json"),
            _ => include_str!("../fixtures/acp_v2_unstable.json"),
        }
    );
    stable.to_string()
}

/// The kinds, as the generated enum spells them on the wire (read back from its serde renames),
/// of this build: a variant under `cfg(feature = "unstable")` only with the feature.
fn session_update_kinds(version: &str) -> Vec<&'static str> {
    let source = match version {
        "v1" => include_str!("../../src/generated/acp_v1.rs"),
        _ => include_str!("../../src/generated/acp_v2.rs"),
    };
    let start = source
        .find("pub enum SessionUpdate {")
        .expect("SessionUpdate in the generated code");
    let body = &source[start..start + source[start..].find("\n}").unwrap_or(0)];
    let mut kinds = Vec::new();
    let mut unstable_only = false;
    for line in body.lines().skip(1).map(str::trim) {
        if line == "#[cfg(feature = \"unstable\")]" {
            unstable_only = true;
        } else if let Some(rest) = line.strip_prefix("#[serde(rename = \"") {
            if !unstable_only || cfg!(feature = "unstable") {
                kinds.push(&rest[..rest.find('"').unwrap_or(0)]);
            }
        } else if line.starts_with(|c: char| c.is_ascii_uppercase()) {
            unstable_only = false;
        }
    }
    kinds
}

/// The MCP messages the SDK relies on: initialize, tools/list, tools/call, progress, errors.
#[test]
fn the_mcp_messages_the_sdk_uses_have_examples() {
    let cases = fixtures::mcp_cases();
    let have = covered(&cases);
    let needed = [
        "InitializeRequest",
        "InitializeResult",
        "ListToolsRequest",
        "ListToolsResult",
        "CallToolRequest",
        "CallToolResult",
        "ProgressNotification",
        "JsonrpcErrorResponse",
    ];
    let missing: Vec<&&str> = needed.iter().filter(|t| !have.contains(**t)).collect();
    assert!(missing.is_empty(), "no MCP example for: {missing:?}");
}
