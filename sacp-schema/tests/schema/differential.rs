//! Differential test against an independent implementation: the hand-written
//! `agent-client-protocol-schema` crate (=1.15.1, a dev-dependency only). Every ACP example
//! (the fixtures, and the documentation corpus when `SACP_SCHEMA_DIR` is set) is parsed by both
//! and re-serialized; the JSON must be equal, or the difference must be listed in [`KNOWN`]
//! with its justification. An unlisted difference fails, and so does a listed one that is gone.

use serde_json::Value;

use crate::harness::{self, Case, Decoder, Registry, roundtrip};

/// `(protocol, doc page or fixture file, type, why the two crates write different JSON)`. For every listed
/// case our output is the input itself (checked): the difference is the other crate's policy.
const KNOWN: &[(&str, &str, &str, &str)] = &[
    // The hand-written crate writes the defaults of capabilities nobody sent
    // (`"auth":{"terminal":false}`, `"fs":{..false}`, `"acp":false`, `"sessionCapabilities":{}`);
    // ours writes back what was received.
    ("acp v1", V1_FIXTURES, "InitializeRequest", DEFAULTS_WRITTEN),
    (
        "acp v1",
        V1_FIXTURES,
        "InitializeResponse",
        DEFAULTS_WRITTEN,
    ),
    (
        "acp v1",
        "authentication.mdx",
        "InitializeRequest",
        DEFAULTS_WRITTEN,
    ),
    (
        "acp v1",
        "initialization.mdx",
        "InitializeRequest",
        DEFAULTS_WRITTEN,
    ),
    (
        "acp v1",
        "initialization.mdx",
        "InitializeResponse",
        DEFAULTS_WRITTEN,
    ),
    // The hand-written crate leaves out values equal to their default that *were* sent
    // (`"mcpServers":[]`, `"env":[]`, `"authMethods":[]`, `"kind":"other"`, `"status":"pending"`).
    (
        "acp v1",
        V1_FIXTURES,
        "ResumeSessionRequest",
        DEFAULTS_DROPPED,
    ),
    (
        "acp v1",
        "prompt-turn.mdx",
        "SessionNotification",
        DEFAULTS_DROPPED,
    ),
    (
        "acp v1",
        "tool-calls.mdx",
        "SessionNotification",
        DEFAULTS_DROPPED,
    ),
    (
        "acp v2",
        "initialization.mdx",
        "InitializeResponse",
        DEFAULTS_DROPPED,
    ),
    (
        "acp v2",
        "migration.mdx",
        "InitializeResponse",
        DEFAULTS_DROPPED,
    ),
    (
        "acp v2",
        "session-setup.mdx",
        "NewSessionRequest",
        DEFAULTS_DROPPED,
    ),
    (
        "acp v2",
        "session-setup.mdx",
        "ResumeSessionRequest",
        DEFAULTS_DROPPED,
    ),
    // Forward compatibility: an unknown session update kind or content type is kept as `Other`
    // by ours and rejected by the hand-written crate.
    ("acp v1", V1_FIXTURES, "SessionNotification", UNKNOWN_KEPT),
    // Docs out of step with the schema (see docs_corpus::KNOWN): ours keeps the message whole in
    // `Other`; the hand-written crate rejects it, or empties the offending list.
    (
        "acp v1",
        "session-modes.mdx",
        "SessionNotification",
        OUT_OF_STEP,
    ),
    (
        "acp v1",
        "session-modes.mdx",
        "RequestPermissionRequest",
        OUT_OF_STEP,
    ),
];

const V1_FIXTURES: &str = "fixtures/acp_v1.json";
const DEFAULTS_WRITTEN: &str = "the hand-written crate writes defaults that were not sent";
const DEFAULTS_DROPPED: &str = "the hand-written crate drops default-valued fields that were sent";
const UNKNOWN_KEPT: &str = "ours keeps unknown kinds in Other; the hand-written crate rejects them";
const OUT_OF_STEP: &str = "docs out of step with the schema; ours keeps the data in Other";

macro_rules! theirs {
    ($m:path; $($t:ident),* $(,)?) => {{
        use $m as m;
        Registry(vec![$((stringify!($t), roundtrip::<m::$t> as Decoder)),*])
    }};
}

fn theirs_v1() -> Registry {
    theirs!(agent_client_protocol_schema::v1;
        InitializeRequest, InitializeResponse, AuthenticateRequest, AuthenticateResponse, LogoutRequest,
        LogoutResponse, NewSessionRequest, NewSessionResponse, LoadSessionRequest, LoadSessionResponse,
        ListSessionsRequest, ListSessionsResponse, DeleteSessionRequest, DeleteSessionResponse,
        ResumeSessionRequest, ResumeSessionResponse, CloseSessionRequest, CloseSessionResponse,
        SetSessionModeRequest, SetSessionModeResponse, SetSessionConfigOptionRequest,
        SetSessionConfigOptionResponse, PromptRequest, PromptResponse, CancelNotification,
        CancelRequestNotification, ReadTextFileRequest, ReadTextFileResponse, WriteTextFileRequest,
        WriteTextFileResponse, RequestPermissionRequest, RequestPermissionResponse, CreateTerminalRequest,
        CreateTerminalResponse, TerminalOutputRequest, TerminalOutputResponse, WaitForTerminalExitRequest,
        WaitForTerminalExitResponse, KillTerminalRequest, KillTerminalResponse, ReleaseTerminalRequest,
        ReleaseTerminalResponse, CreateElicitationRequest, CreateElicitationResponse,
        CompleteElicitationNotification, SessionNotification, SessionUpdate, ContentBlock, ToolCall,
        ToolCallUpdate, McpServer,
    )
}

fn theirs_v2() -> Registry {
    theirs!(agent_client_protocol_schema::v2;
        InitializeRequest, InitializeResponse, NewSessionRequest, NewSessionResponse, ListSessionsRequest,
        ListSessionsResponse, DeleteSessionRequest, DeleteSessionResponse, ResumeSessionRequest,
        ResumeSessionResponse, CloseSessionRequest, CloseSessionResponse, SetSessionConfigOptionRequest,
        SetSessionConfigOptionResponse, PromptRequest, PromptResponse, CancelRequestNotification,
        RequestPermissionRequest, RequestPermissionResponse, CreateElicitationRequest,
        CreateElicitationResponse, CompleteElicitationNotification, SessionUpdate, ContentBlock, McpServer,
    )
}

/// What one implementation made of a case: its JSON, or that it could not read it.
fn outcome(registry: &Registry, case: &Case) -> Option<Result<Value, String>> {
    let decoder = registry.get(&case.ty)?;
    Some(decoder(&case.json).map(|d| d.json))
}

fn compare(
    label: &str,
    cases: &[Case],
    ours: &Registry,
    theirs: &Registry,
) -> (usize, Vec<(Case, String)>) {
    let mut compared = 0;
    let mut differences = Vec::new();
    for case in cases {
        let (Some(a), Some(b)) = (outcome(ours, case), outcome(theirs, case)) else {
            continue;
        };
        compared += 1;
        let why = match (a, b) {
            (Ok(a), Ok(b)) if a == b => continue,
            (Err(_), Err(_)) => continue,
            (Ok(a), Ok(b)) => format!("ours {a}\n      theirs {b}"),
            (Ok(_), Err(e)) => format!("only ours reads it; theirs: {e}"),
            (Err(e), Ok(_)) => format!("only theirs reads it; ours: {e}"),
        };
        differences.push((case.clone(), format!("{label}: {why}")));
    }
    (compared, differences)
}

fn check(
    label: &str,
    mut cases: Vec<Case>,
    corpus: Option<Vec<Case>>,
    ours: &Registry,
    theirs: &Registry,
) {
    match corpus {
        Some(corpus) => cases.extend(corpus),
        None => crate::docs_corpus::not_checked(label),
    }
    let (compared, differences) = compare(label, &cases, ours, theirs);
    let mut problems = Vec::new();
    for (case, why) in &differences {
        if !KNOWN
            .iter()
            .any(|k| k.0 == label && k.1 == case.source && k.2 == case.ty)
        {
            problems.push(format!(
                "  unlisted difference: {} {}: {why}\n      input  {}",
                case.source, case.ty, case.json
            ));
        } else if outcome(ours, case).and_then(Result::ok)
            != Some(harness::without_null_members(&case.json))
        {
            problems.push(format!(
                "  listed difference where ours does not reproduce the input: {} {}: {why}",
                case.source, case.ty
            ));
        }
    }
    for k in KNOWN.iter().filter(|k| k.0 == label) {
        let in_scope = cases.iter().any(|c| c.source == k.1 && c.ty == k.2);
        if in_scope
            && !differences
                .iter()
                .any(|(c, _)| c.source == k.1 && c.ty == k.2)
        {
            problems.push(format!(
                "  listed but no longer different (remove it from KNOWN): {} {}",
                k.1, k.2
            ));
        }
    }
    eprintln!(
        "{label}: {compared} cases compared, {} known differences",
        differences.len()
    );
    assert!(compared > 0, "{label}: nothing was compared");
    assert!(problems.is_empty(), "{label}:\n{}", problems.join("\n"));
}

#[test]
fn acp_v1_agrees_with_the_hand_written_crate() {
    let fixtures = crate::fixtures::acp_v1_cases();
    check(
        "acp v1",
        fixtures,
        crate::docs_corpus::corpus("acp-v1"),
        &harness::acp_v1(),
        &theirs_v1(),
    );
}

#[test]
fn acp_v2_agrees_with_the_hand_written_crate() {
    let fixtures = crate::fixtures::acp_v2_cases();
    check(
        "acp v2",
        fixtures,
        crate::docs_corpus::corpus("acp-v2"),
        &harness::acp_v2(),
        &theirs_v2(),
    );
}
