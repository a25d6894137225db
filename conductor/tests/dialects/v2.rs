//! ACP v2 with the official TypeScript SDK's `/experimental/v2` as editor and agent: whole v2
//! turns through our conductor and proxies (a typed v2 one among them) exactly as without
//! them, and what v1 peers (the TypeScript and Python SDKs' editors) get from v2-only and dual
//! agents.

use crate::common::*;
use crate::peers::{py_editor, ts_editor, ts_v2_agent, ts_v2_editor};

/// Runs `editor` (a `node …mjs` or `python …py` command line) on `agent_command` with `prompts`; its stdout
/// lines (UUIDs numbered in order of appearance) and stderr.
async fn run(editor: &str, agent_command: &[String], prompts: &[&str]) -> (Vec<String>, String) {
    let mut words = editor.split_whitespace();
    let output = tokio::process::Command::new(words.next().unwrap())
        .args(words)
        .args(agent_command)
        .arg("--")
        .args(prompts)
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(std::time::Duration::from_secs(60), output)
        .await
        .expect("the TypeScript editor's session did not end within 60 s")
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "{agent_command:?}: {stderr}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    (stdout.lines().map(without_uuids).collect(), stderr)
}

/// `conductor agent PROXIES… AGENT`, as the editor's agent command line.
fn through(proxies: &[String], agent: &str) -> Vec<String> {
    let mut args = vec![conductor().to_owned(), "agent".to_owned()];
    args.extend(proxies.iter().cloned());
    args.push(agent.to_owned());
    args
}

#[tokio::test]
async fn a_v2_turn_of_the_typescript_sdk_is_the_same_through_our_chain() {
    let (Some(editor), Some(ts_agent)) = (ts_v2_editor(), ts_v2_agent()) else {
        return;
    };
    let prompts = ["full", "wait", "hello"];
    // The TypeScript editor straight on the TypeScript agent: what a v2 turn is.
    let direct: Vec<String> = ts_agent.split_whitespace().map(str::to_owned).collect();
    let (expected, _) = run(&editor, &direct, &prompts).await;
    let kinds: Vec<&str> = expected
        .iter()
        .map(|l| l.split(['{', ' ']).next().unwrap())
        .collect();
    assert_eq!(expected[0], "initialize 2", "{expected:#?}");
    // The acknowledgement first, the permission with its title and subject, idle last.
    assert_eq!(expected[1], "ack");
    assert!(
        expected.contains(
            &r#"permission Edit src/main.rs? {"toolCall":{"toolCallId":"call-1"},"type":"tool_call"}"#
                .to_owned()
        ),
        "{expected:#?}"
    );
    let stops: Vec<&String> = expected.iter().filter(|l| l.starts_with("stop")).collect();
    assert_eq!(stops, ["stop end_turn", "stop cancelled", "stop end_turn"]);
    assert!(kinds.len() > 20, "{expected:#?}");

    let v2_agent = format!("{} --protocol 2", quoted(&agent()));
    let observer = example("v2-observer-proxy");
    let chains = [
        // No proxy, then two (one of them typed on v2 types), before the TypeScript agent.
        through(&[], &ts_agent),
        through(&[passthrough(), observer.clone()], &ts_agent),
        // Our v2 test agent runs the same turn, so the editor sees the same lines.
        through(&[], &v2_agent),
        through(&[observer, passthrough()], &v2_agent),
    ];
    for chain in chains {
        let (seen, stderr) = run(&editor, &chain, &prompts).await;
        assert_eq!(seen, expected, "{chain:?}\n{stderr}");
        if chain.iter().any(|w| w.ends_with("v2-observer-proxy")) {
            // The typed proxy read every prompt and update.
            assert!(
                stderr.contains("v2-observer-proxy: 3 prompts, 18 updates"),
                "{stderr}"
            );
        }
    }
}

#[tokio::test]
async fn v1_peers_get_32022_from_a_v2_only_agent_and_v1_from_a_dual_one() {
    let (Some(v1_editor), Some(v2_editor)) = (ts_editor(), ts_v2_editor()) else {
        return;
    };
    let v2_only = format!("{} --protocol 2", quoted(&agent()));
    let dual = format!("{} --protocol 1,2", quoted(&agent()));
    // The TypeScript SDK's v1 editor: refused by a v2-only agent, served v1 by a dual one.
    let (said, _) = run(&v1_editor, &through(&[], &v2_only), &["hello"]).await;
    assert_eq!(
        said,
        [r#"["initialize failed -32022 {\"requested\":1,\"supported\":[2]}"]"#]
    );
    let (said, _) = run(&v1_editor, &through(&[passthrough()], &dual), &["hello"]).await;
    assert_eq!(said, [r#"["hello"]"#]);
    // The Python SDK's v1 editor, the same.
    if let Some(py_editor) = py_editor() {
        let (said, _) = run(&py_editor, &through(&[], &v2_only), &["hello"]).await;
        assert_eq!(
            said,
            [r#"["initialize failed -32022 {\"requested\":1,\"supported\":[2]}"]"#]
        );
        let (said, _) = run(
            &py_editor,
            &through(&[passthrough()], &dual),
            &["hello", "stream 2"],
        )
        .await;
        assert_eq!(said, [r#"["hello"]"#, r#"["chunk 1", "chunk 2"]"#]);
    }
    // The TypeScript SDK's v2 editor behind a v1-only proxy: the proxy asks a v2-only agent for 1, and the
    // agent's `-32022` reaches the editor.
    let (said, _) = run(
        &v2_editor,
        &through(&[example("prefix-proxy")], &v2_only),
        &["hello"],
    )
    .await;
    assert_eq!(
        said,
        [r#"initialize failed -32022 {"requested":1,"supported":[2]}"#]
    );
}
