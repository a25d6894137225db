//! The documentation corpus (`$SACP_SCHEMA_DIR/examples/*/cases.json`: messages taken from the
//! protocols' own docs), run when `SACP_SCHEMA_DIR` is set, as `.ci/run` does.
//!
//! A case may fail only if it is listed in [`KNOWN`] with the reason; a listed case that passes
//! fails the test too, so the list cannot go stale.

use std::path::PathBuf;

use crate::harness::{self, Case, Registry};

/// `(corpus, doc page, type, why it cannot round-trip)`.
const KNOWN: &[(&str, &str, &str, &str)] = &[
    (
        "acp-v1",
        "file-system.mdx",
        "WriteTextFileResponse",
        "the page answers `\"result\": null`; the type accepts it (see null_results) and writes `{}`",
    ),
    (
        "acp-v1",
        "session-setup.mdx",
        "LoadSessionResponse",
        "the page answers `\"result\": null`; the type accepts it and writes `{}`",
    ),
    (
        "acp-v1",
        "session-modes.mdx",
        "SessionNotification",
        "docs out of step: `current_mode_update` with `modeId`, the schema requires `currentModeId`; kept as `Other`",
    ),
    (
        "acp-v1",
        "session-modes.mdx",
        "RequestPermissionRequest",
        "docs out of step: tool call content `{\"type\":\"text\"}`, the schema allows content/diff/terminal; kept as `Other`",
    ),
    (
        "acp-v2",
        "authentication.mdx",
        "InitializeRequest",
        "docs out of step: no `info`, which the v2 schema requires",
    ),
    (
        "acp-v2",
        "migration.mdx",
        "InitializeRequest",
        "docs out of step: no `info`, which the v2 schema requires",
    ),
    (
        "acp-v2",
        "migration.mdx",
        "InitializeResponse",
        "docs out of step: no `info`, which the v2 schema requires",
    ),
    (
        "acp-v2",
        "prompt-lifecycle.mdx",
        "PromptResponse",
        "docs out of step: no `messageId`, which the v2 schema requires",
    ),
    (
        "acp-v2",
        "slash-commands.mdx",
        "UpdateSessionNotification",
        "docs out of step: commands without the `type` the v2 schema requires; kept as `Other` (nothing lost)",
    ),
    (
        "mcp-2025-11-25",
        "basic/utilities/tasks.mdx",
        "CallToolResult",
        "corpus mislabels a task-augmented call's result (a `CreateTaskResult`) as `CallToolResult`",
    ),
];

/// `$SACP_SCHEMA_DIR`; a relative path is taken from the workspace root, where the README's
/// commands run (tests themselves run inside the package directory).
fn schema_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(std::env::var_os("SACP_SCHEMA_DIR")?);
    Some(if dir.is_relative() {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("..")
            .join(dir)
    } else {
        dir
    })
}

pub fn corpus(name: &str) -> Option<Vec<Case>> {
    let dir = schema_dir()?;
    let path = dir.join("examples").join(name).join("cases.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "SACP_SCHEMA_DIR is set but {} is unreadable: {e}",
            path.display()
        )
    });
    Some(harness::load_cases(&text, name))
}

/// Says that the corpus `name` cannot be checked here: a note on a developer's machine, a
/// failure under CI (`CI` set), where the schemas are always beside the project.
pub fn not_checked(name: &str) {
    let why = format!("SACP_SCHEMA_DIR is not set: the {name} documentation corpus is not checked");
    assert!(
        std::env::var_os("CI").is_none(),
        "{why} (under CI it must be)"
    );
    eprintln!("{why}");
}

fn run(name: &str, registry: &Registry) {
    let Some(cases) = corpus(name) else {
        not_checked(name);
        return;
    };
    check_corpus(name, cases, registry);
}

fn check_corpus(name: &str, cases: Vec<Case>, registry: &Registry) {
    let failures = harness::run_all(&cases, registry);
    let known: Vec<_> = KNOWN.iter().filter(|k| k.0 == name).collect();
    let mut problems = Vec::new();
    for (case, why) in &failures {
        if !known.iter().any(|k| k.1 == case.source && k.2 == case.ty) {
            problems.push(format!(
                "  unlisted failure: {} {}: {why}\n      {}",
                case.source, case.ty, case.json
            ));
        }
    }
    for k in &known {
        if !failures.iter().any(|(c, _)| c.source == k.1 && c.ty == k.2) {
            problems.push(format!(
                "  listed as failing but passes now (remove it from KNOWN): {} {}",
                k.1, k.2
            ));
        }
    }
    eprintln!(
        "{name}: {} cases, {} pass, {} known differences",
        cases.len(),
        cases.len() - failures.len(),
        failures.len()
    );
    assert!(problems.is_empty(), "{name}:\n{}", problems.join("\n"));
}

#[test]
fn acp_v1_docs_examples_round_trip() {
    run("acp-v1", &harness::acp_v1());
}

#[test]
fn acp_v2_docs_examples_round_trip() {
    run("acp-v2", &harness::acp_v2());
}

#[test]
fn mcp_2025_11_25_docs_examples_round_trip() {
    run("mcp-2025-11-25", &harness::mcp());
}

/// Messages of the previous MCP version read with the current types, where the schemas agree.
/// Its corpus holds request and notification bodies (`{method, params}`) without the JSON-RPC
/// envelope, so those are read as the params type the method table names.
#[test]
fn mcp_2025_06_18_docs_examples_still_deserialize() {
    use sacp_schema::mcp::methods::{NOTIFICATIONS, REQUESTS};
    let Some(cases) = corpus("mcp-2025-06-18") else {
        not_checked("mcp-2025-06-18");
        return;
    };
    let cases = cases
        .into_iter()
        .map(|mut c| {
            if let Some(method) = c
                .json
                .get("method")
                .and_then(|m| m.as_str())
                .map(str::to_owned)
            {
                let params = REQUESTS
                    .iter()
                    .find(|r| r.method == method)
                    .map(|r| r.params_type)
                    .or_else(|| {
                        NOTIFICATIONS
                            .iter()
                            .find(|n| n.method == method)
                            .map(|n| n.params_type)
                    });
                c.ty = params.unwrap_or("<unknown method>").to_owned();
                c.json = c
                    .json
                    .get("params")
                    .cloned()
                    .unwrap_or_else(|| serde_json::json!({}));
            }
            c
        })
        .collect();
    check_corpus("mcp-2025-06-18", cases, &harness::mcp());
}
