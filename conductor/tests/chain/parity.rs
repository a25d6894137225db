//! The test kit's chain against the conductor: the same scenarios — a streamed turn, a
//! permission, a cancel, a component failing mid-turn — through `sacp::testing::TestChain`
//! (the prefix proxy and the test agent in this process) and through the conductor binary
//! (the same two as processes), driven by the same `ScriptedEditor`. What the editor saw and
//! every hop of every message (the kit's transcript, the conductor's trace) must be the same.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;

use sacp::jsonrpc::ByteStream;
use sacp::testing::{MessageKind, Permission, ScriptedEditor, TestChain, line, within};
use sacp_examples::prefix::Prefixer;
use sacp_examples::test_agent::TestAgent;
use serde_json::Value;

use crate::common::*;

const PREFIX: &str = "» ";

fn editor() -> ScriptedEditor {
    ScriptedEditor::new().permission(Permission::Choose(
        sacp::acp::PermissionOptionKind::AllowOnce,
    ))
}

/// The scenarios, on an initialized editor: what the editor saw, a line per thing. `crash`
/// ends the agent once it has said its last words, where it cannot end itself (in process).
async fn scenarios(editor: &ScriptedEditor, crash: impl FnOnce()) -> Vec<String> {
    let mut seen = Vec::new();
    let session = within("session/new", editor.new_session())
        .await
        .expect("a session");
    seen.push(format!("session {}", session.id().0));
    for text in ["stream 3", "permission"] {
        let turn = session.prompt(text).await.expect("a turn");
        seen.push(format!(
            "{text}: {:?} {:?}",
            turn.lines(),
            turn.stop_reason()
        ));
    }
    for (request, outcome) in editor.permission_requests() {
        seen.push(format!(
            "asked {} for {:?}: {outcome:?}",
            request.session_id.0, request.tool_call.title
        ));
    }
    // A cancel, once the turn has begun.
    let waiting = session.prompt("wait");
    session
        .until_update("the turn's start", |u| line(u).ends_with("waiting"))
        .await;
    session.cancel().await.expect("the cancel is sent");
    let turn = waiting.await.expect("the cancelled turn");
    seen.push(format!("wait: {:?} {:?}", turn.lines(), turn.stop_reason()));
    // The agent fails mid-turn: two chunks and its last words, then its end.
    let before = session.updates().len();
    let crashing = session.prompt("crash 3 2");
    session
        .until_update("the last words", |u| line(u).ends_with("crashing"))
        .await;
    crash();
    let failed = crashing.await;
    let error = failed.expect_err("the turn of a crashed agent fails");
    seen.push(format!(
        "crash: code {} component {} after {:?}",
        error.code,
        error
            .data
            .as_ref()
            .map_or(Value::Null, |d| d["component"].clone()),
        session.updates()[before..]
            .iter()
            .map(line)
            .collect::<Vec<_>>()
    ));
    seen
}

/// One hop of one message, by the components' positions (the editor is 0): the link, then
/// what it carried.
type Hop = ((String, String), String);

/// Every hop in the kit's transcript, by link, in order.
fn kit_hops(records: &[sacp::testing::Record]) -> BTreeMap<(String, String), Vec<String>> {
    let position = |name: &str| match name {
        "editor" => "0".to_owned(),
        "Prefixer" => "1".to_owned(),
        "TestAgent" => "2".to_owned(),
        other => other.to_owned(),
    };
    by_link(records.iter().map(|r| {
        let kind = match r.kind {
            MessageKind::Request => "request",
            MessageKind::Notification => "notification",
            MessageKind::Result => "response",
            MessageKind::Error => "error",
        };
        // The conductor's own answers name no method in the trace.
        let method = if r.method == "?" { "" } else { &r.method };
        (
            (position(&r.from), position(&r.to)),
            what(kind, method, &r.payload, &r.from),
        )
    }))
}

/// Every hop in the conductor's trace, by link, in order.
fn trace_hops(trace: &Path) -> BTreeMap<(String, String), Vec<String>> {
    let text = std::fs::read_to_string(trace).expect("the trace");
    let position = |node: &Value| {
        let name = node.as_str().unwrap_or_default();
        match name.split_once(':') {
            Some((p, _)) => p.to_owned(),
            None if name == "editor" => "0".to_owned(),
            None => name.to_owned(),
        }
    };
    by_link(
        text.lines()
            .map(|l| serde_json::from_str::<Value>(l).expect("a trace line"))
            .filter(|l| l["type"] == "message")
            .map(|l| {
                let payload = match (&l["via"], &l["payload"]) {
                    // What travelled in an envelope, as the kit shows it: the message inside.
                    (Value::String(_), payload) => payload["params"].clone(),
                    (_, Value::Null) => Value::Null,
                    (_, payload) => payload.clone(),
                };
                let from = position(&l["from"]);
                let what = what(
                    l["kind"].as_str().unwrap_or_default(),
                    l["method"].as_str().unwrap_or_default(),
                    &payload,
                    &from,
                );
                ((from, position(&l["to"])), what)
            }),
    )
}

/// One hop, as compared. The error the conductor answers for a failed component says how the
/// component ended, which only the conductor knows (a process's status and stderr): its code
/// and the component it names are compared.
fn what(kind: &str, method: &str, payload: &Value, from: &str) -> String {
    if from == "conductor" && kind == "error" {
        return format!(
            "{kind} {method} code {} component {}",
            payload["code"], payload["data"]["component"]
        );
    }
    format!("{kind} {method} {payload}")
}

fn by_link(hops: impl Iterator<Item = Hop>) -> BTreeMap<(String, String), Vec<String>> {
    let mut links: BTreeMap<_, Vec<String>> = BTreeMap::new();
    for (link, what) in hops {
        links.entry(link).or_default().push(what);
    }
    links
}

#[tokio::test]
async fn the_kit_and_the_conductor_give_the_same_transcript() {
    // Through the kit.
    let chain = TestChain::new()
        .proxy(Prefixer::new(PREFIX))
        .agent(TestAgent::default().in_process())
        .editor(editor())
        .start()
        .await
        .expect("the kit's chain starts");
    let kit_saw = scenarios(chain.editor(), || chain.kill::<TestAgent>()).await;
    let kit = kit_hops(&chain.transcript().records());

    // Through the conductor, the same components as processes.
    let trace = std::env::temp_dir().join(format!("sacp-parity-{}.jsonl", std::process::id()));
    let mut child = tokio::process::Command::new(conductor())
        .args(["agent", "--trace"])
        .arg(&trace)
        .arg("--trace-payloads")
        .arg(format!(
            "{} {}",
            quoted(&example("prefix-proxy")),
            quoted(PREFIX)
        ))
        .arg(agent())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the conductor starts");
    let transport = ByteStream::new(
        child.stdout.take().expect("its stdout"),
        child.stdin.take().expect("its stdin"),
    );
    let editor = editor().connect(transport);
    within("initialize", editor.initialize())
        .await
        .expect("the conductor's chain initializes");
    let conductor_saw = scenarios(&editor, || {}).await;
    let status = within("the conductor to end", child.wait())
        .await
        .expect("its status");
    let conductor = trace_hops(&trace);
    let _ = std::fs::remove_file(&trace);

    assert_eq!(kit_saw, conductor_saw, "what the editor saw");
    assert!(
        kit_saw
            .last()
            .is_some_and(|l| l.contains("chunk 2 before the crash") && l.contains("crashing")),
        "the crashed agent's last words reach the editor before the error: {kit_saw:#?}"
    );
    // A failed chain ends: the conductor with the agent's status.
    assert_eq!(status.code(), Some(3));
    assert_eq!(
        kit.keys().collect::<Vec<_>>(),
        conductor.keys().collect::<Vec<_>>(),
        "the links messages took"
    );
    for (link, hops) in &kit {
        assert_eq!(hops, &conductor[link], "the messages of link {link:?}");
    }
}
