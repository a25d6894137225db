//! Hand-written messages (from the schemas), always run.

use crate::harness::{self, Case, Registry};

fn run(file: &str, text: &str, registry: &Registry) {
    let cases = harness::load_cases(text, file);
    let failures = harness::run_all(&cases, registry);
    let report: Vec<String> = failures
        .iter()
        .map(|(c, why)| format!("  {} {} {}: {why}", c.source, c.ty, c.json))
        .collect();
    assert!(
        report.is_empty(),
        "{} of {} cases failed:\n{}",
        report.len(),
        cases.len(),
        report.join("\n")
    );
}

/// The ACP v1 fixtures; with the `unstable` feature, those of the unstable methods and
/// updates too.
pub fn acp_v1_cases() -> Vec<Case> {
    #[allow(unused_mut)]
    let mut cases = harness::load_cases(
        include_str!("../fixtures/acp_v1.json"),
        "fixtures/acp_v1.json",
    );
    #[cfg(feature = "unstable")]
    cases.extend(harness::load_cases(
        include_str!("../fixtures/acp_v1_unstable.json"),
        "fixtures/acp_v1_unstable.json",
    ));
    cases
}

/// The ACP v2 fixtures; with the `unstable` feature, those of the unstable methods and
/// updates too.
pub fn acp_v2_cases() -> Vec<Case> {
    #[allow(unused_mut)]
    let mut cases = harness::load_cases(
        include_str!("../fixtures/acp_v2.json"),
        "fixtures/acp_v2.json",
    );
    #[cfg(feature = "unstable")]
    cases.extend(harness::load_cases(
        include_str!("../fixtures/acp_v2_unstable.json"),
        "fixtures/acp_v2_unstable.json",
    ));
    cases
}

pub fn mcp_cases() -> Vec<Case> {
    harness::load_cases(include_str!("../fixtures/mcp.json"), "fixtures/mcp.json")
}

#[test]
fn acp_v1_fixtures_round_trip() {
    run(
        "fixtures/acp_v1.json",
        include_str!("../fixtures/acp_v1.json"),
        &harness::acp_v1(),
    );
}

#[test]
fn acp_v2_fixtures_round_trip() {
    run(
        "fixtures/acp_v2.json",
        include_str!("../fixtures/acp_v2.json"),
        &harness::acp_v2(),
    );
}

#[test]
fn mcp_fixtures_round_trip() {
    run(
        "fixtures/mcp.json",
        include_str!("../fixtures/mcp.json"),
        &harness::mcp(),
    );
}

#[cfg(feature = "unstable")]
#[test]
fn acp_v1_unstable_fixtures_round_trip() {
    run(
        "fixtures/acp_v1_unstable.json",
        include_str!("../fixtures/acp_v1_unstable.json"),
        &harness::acp_v1(),
    );
}

#[cfg(feature = "unstable")]
#[test]
fn acp_v2_unstable_fixtures_round_trip() {
    run(
        "fixtures/acp_v2_unstable.json",
        include_str!("../fixtures/acp_v2_unstable.json"),
        &harness::acp_v2(),
    );
}
