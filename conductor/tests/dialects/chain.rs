//! Proxies of other SDKs in our chains (see `sacp::protocol::dialect`): a pass-through built on
//! symposium's `sacp` 11 (S11) and one on `agent-client-protocol` 5 (the RFD), real crates
//! from the registry (`conductor/tests/peers`), found by probing their `initialize` or
//! declared, alone and mixed with ours.

use serde_json::{Value, json};

use crate::common::*;
use crate::peers::*;

/// The two foreign pass-throughs, or `None` where they cannot be built (said on stderr).
fn peers() -> Option<[(String, &'static str); 2]> {
    Some([
        (peer("s11-passthrough")?, "_proxy/initialize"),
        (peer("rfd-passthrough")?, "proxy/initialize"),
    ])
}

/// A stream in order before its answer, a permission request across the chain and back, and
/// a cancel that reaches the agent, for a session of `editor`.
async fn stream_permission_and_cancel(editor: &mut Editor, what: &str) {
    let session = editor.open_session().await;
    let id = editor.send_prompt(&session, "stream 20").await;
    expect_stream(editor, &id, 20, "").await;

    let done = editor.prompt(&session, "permission").await;
    assert_eq!(done["result"]["stopReason"], "end_turn", "{what}: {done}");
    assert!(
        editor
            .transcript
            .iter()
            .any(|l| l.starts_with("asked session/request_permission")),
        "{what}: the permission request never reached the editor"
    );
    assert_eq!(said(editor), ["permission: allow"], "{what}");

    let waiting = editor.start_waiting(&session).await;
    editor
        .notify("session/cancel", json!({"sessionId": session}))
        .await;
    let done = editor.until_response(&waiting).await;
    assert_eq!(done["result"]["stopReason"], "cancelled", "{what}: {done}");
}

/// Saves `insight` with Sparkle's `save_insight` (through whatever carries MCP to Sparkle on
/// the way) and checks that `list_insights` then shows it.
pub(crate) async fn sparkle_keeps(editor: &mut Editor, session: &str, insight: &str) {
    let save = format!(
        r#"call sparkle save_insight {{"topic":"dialects","insight":"{insight}","tags":[]}}"#
    );
    editor.prompt(session, &save).await;
    editor
        .prompt(session, "call sparkle list_insights {}")
        .await;
    let listed = said(editor);
    assert!(
        listed.first().is_some_and(|l| l.contains(insight)),
        "{listed:?}"
    );
}

/// The methods of the trace's lines that went to component `position`.
fn methods_to(trace: &str, position: usize) -> Vec<String> {
    trace
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| {
            r["to"]
                .as_str()
                .is_some_and(|to| to.starts_with(&format!("{position}:")))
                && r["kind"] == "request"
        })
        .filter_map(|r| r["method"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn a_pass_through_of_each_sdk_runs_in_our_chain_found_by_its_refusal() {
    let Some(peers) = peers() else { return };
    let dir = std::env::temp_dir().join(format!("sacp-dialects-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (proxy, init) in peers {
        let trace = dir.join("trace.jsonl");
        let args = [
            "agent".to_owned(),
            "--trace".to_owned(),
            trace.to_string_lossy().into_owned(),
            proxy.clone(),
            agent(),
        ];
        let mut editor = Editor::start(conductor(), &args);
        stream_permission_and_cancel(&mut editor, &proxy).await;
        // Other SDKs' proxies do not exit at the end of stdin: the conductor ends them.
        editor.close_and_expect_a_clean_exit().await;
        // The trace shows the probe: ours offered, then the proxy's own method.
        let methods = methods_to(&std::fs::read_to_string(&trace).unwrap(), 1);
        assert_eq!(methods[..2], ["initialize", init], "{proxy}: {methods:?}");
    }
}

#[tokio::test]
async fn a_declared_dialect_is_offered_at_once() {
    let Some(peers) = peers() else { return };
    let dir = std::env::temp_dir().join(format!("sacp-dialects-declared-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for ((proxy, init), dialect) in peers.into_iter().zip(["s11", "rfd"]) {
        let trace = dir.join("trace.jsonl");
        let args = [
            "agent".to_owned(),
            "--trace".to_owned(),
            trace.to_string_lossy().into_owned(),
            "--dialect".to_owned(),
            format!("1={dialect}"),
            proxy.clone(),
            agent(),
        ];
        let mut editor = Editor::start(conductor(), &args);
        let session = editor.open_session().await;
        let id = editor.send_prompt(&session, "stream 3").await;
        expect_stream(&mut editor, &id, 3, "").await;
        editor.close_and_expect_a_clean_exit().await;
        let methods = methods_to(&std::fs::read_to_string(&trace).unwrap(), 1);
        assert_eq!(methods[0], init, "{proxy}: {methods:?}");
    }
}

#[tokio::test]
async fn mixed_chains_in_both_orders_carry_a_turn_a_permission_and_a_cancel() {
    let Some([(s11, _), (rfd, _)]) = peers() else {
        return;
    };
    let ours = example("audit-proxy");
    for order in [[&ours, &s11, &rfd], [&rfd, &s11, &ours]] {
        let mut args = vec!["agent".to_owned()];
        args.extend(order.iter().map(|p| p.to_string()));
        args.push(agent());
        let mut editor = Editor::start(conductor(), &args);
        stream_permission_and_cancel(&mut editor, &format!("{order:?}")).await;
        editor.close_and_expect_a_clean_exit().await;
    }
}

#[tokio::test]
async fn sparkles_tools_reach_the_agent_across_other_sdks_proxies() {
    let Some([(s11, _), (rfd, _)]) = peers() else {
        return;
    };
    let args = [
        "agent".to_owned(),
        example("sparkle"),
        s11,
        rfd,
        format!("{} --mcp-acp", quoted(&agent())),
    ];
    let mut editor = Editor::start(conductor(), &args);
    let session = editor.open_session().await;
    editor.prompt(&session, "tools").await;
    let tools = said(&editor);
    assert!(
        tools.len() == 1 && tools[0].starts_with("sparkle: "),
        "{tools:?}\n{}",
        editor.stderr()
    );
    sparkle_keeps(&mut editor, &session, "they meet").await;
    editor.close_and_expect_a_clean_exit().await;
}

#[tokio::test]
async fn a_declared_dialect_the_proxy_refuses_is_an_error_naming_both() {
    let Some([(s11, _), _]) = peers() else { return };
    let args = [
        "agent".to_owned(),
        "--dialect".to_owned(),
        "1=rfd".to_owned(),
        s11,
        agent(),
    ];
    let mut editor = Editor::start(conductor(), &args);
    let init = editor
        .request(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {}}),
        )
        .await;
    let message = init["error"]["message"].as_str().unwrap_or_default();
    assert_eq!(init["error"]["code"], -32603, "{init}");
    assert!(
        message.contains("declared to speak the rfd proxy dialect (`proxy/initialize`)")
            && message.contains("speaks the s11 dialect (`_proxy/initialize`)"),
        "{init}"
    );
    assert_eq!(editor.exit().await.0, Some(1));
    editor.assert_no_process_left().await;
}

#[tokio::test]
async fn a_component_that_refuses_every_dialect_is_named() {
    // The test agent is no proxy: offered our capability it answers without the marker;
    // offered S11's or the RFD's init method, it answers an error. Either way §3's refusal.
    for dialect in [None, Some("s11"), Some("rfd")] {
        let mut args = vec!["agent".to_owned()];
        if let Some(dialect) = dialect {
            args.extend(["--dialect".to_owned(), format!("1={dialect}")]);
        }
        args.extend([agent(), agent()]);
        let mut editor = Editor::start(conductor(), &args);
        let init = editor
            .request(
                "initialize",
                json!({"protocolVersion": 1, "clientCapabilities": {}}),
            )
            .await;
        assert_eq!(init["error"]["code"], -32603, "{dialect:?}: {init}");
        assert_eq!(
            init["error"]["message"],
            "component 1 (\"test-agent\") did not accept the proxy capability",
            "{dialect:?}: {init}"
        );
        assert_eq!(editor.exit().await.0, Some(1), "{dialect:?}");
        editor.assert_no_process_left().await;
    }
}

#[tokio::test]
async fn an_rfd_agent_calls_sparkles_tools_through_every_dialect_with_mcp_message() {
    let Some([(s11, _), (rfd, _)]) = peers() else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("sacp-dialects-rfd-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("trace.jsonl");
    let args = [
        "agent".to_owned(),
        "--trace".to_owned(),
        trace.to_string_lossy().into_owned(),
        "--trace-payloads".to_owned(),
        example("sparkle"),
        s11,
        rfd,
        format!("{} --mcp-rfd", quoted(&agent())),
    ];
    let mut editor = Editor::start(conductor(), &args);
    let session = editor.open_session().await;
    editor.prompt(&session, "tools").await;
    assert_eq!(
        said(&editor),
        ["sparkle: embody_sparkle, save_insight, list_insights"],
        "{}",
        editor.stderr()
    );
    sparkle_keeps(&mut editor, &session, "stateless").await;
    editor.close_and_expect_a_clean_exit().await;
    // The agent saw only what it declared: no `_mcp/*`, no `_proxy/*`; it asked with
    // `mcp/message`.
    let text = std::fs::read_to_string(&trace).unwrap();
    let records: Vec<Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let to_agent: Vec<&str> = records
        .iter()
        .filter(|r| r["to"].as_str().is_some_and(|to| to.starts_with("4:")))
        .flat_map(|r| [r["method"].as_str(), r["via"].as_str()])
        .flatten()
        .collect();
    assert!(
        to_agent
            .iter()
            .all(|m| !m.starts_with("_mcp/") && !m.starts_with("_proxy/")),
        "{to_agent:?}"
    );
    assert!(
        records
            .iter()
            .any(|r| r["from"].as_str().is_some_and(|f| f.starts_with("4:"))
                // Delivered in the RFD proxy's envelope.
                && r["via"] == "proxy/successor"
                && r["method"] == "mcp/message"),
        "the agent never sent mcp/message"
    );
}

#[tokio::test]
async fn an_editors_own_rfd_mcp_server_reaches_the_agent_through_every_dialect() {
    let Some([(s11, _), (rfd, _)]) = peers() else {
        return;
    };
    let ours = passthrough();
    let dir = std::env::temp_dir().join(format!("sacp-dialects-editor-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("trace.jsonl");
    for order in [[&ours, &s11, &rfd], [&rfd, &s11, &ours]] {
        let mut args = vec!["agent".to_owned()];
        args.extend(["--trace", trace.to_str().unwrap(), "--trace-payloads"].map(str::to_owned));
        args.extend(order.iter().map(|p| p.to_string()));
        args.push(format!("{} --mcp-rfd", quoted(&agent())));
        let mut editor = Editor::start(conductor(), &args);
        editor
            .request(
                "initialize",
                json!({"protocolVersion": 1, "clientCapabilities": {}}),
            )
            .await;
        // An S11 proxy cannot parse this entry: it sees it as an `acp:` URL, and the hops
        // after it see it as the editor wrote it.
        let server = json!({"type": "acp", "name": "edmcp", "serverId": "editor-server-1"});
        let created = editor
            .request(
                "session/new",
                json!({"cwd": "/tmp", "mcpServers": [server]}),
            )
            .await;
        let session = created["result"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("{order:?}: {created}"))
            .to_owned();
        editor.prompt(&session, "tools").await;
        assert_eq!(said(&editor), ["edmcp: from_editor"], "{order:?}");
        editor.prompt(&session, "call edmcp from_editor {}").await;
        assert_eq!(
            said(&editor),
            ["edmcp.from_editor: hello from the editor's \"editor-server-1\""],
            "{order:?}"
        );
        editor.close_and_expect_a_clean_exit().await;
        // What each hop was given: the S11 proxy (position 2) the `acp:` URL, the others the
        // editor's entry.
        let text = std::fs::read_to_string(&trace).unwrap();
        let given: Vec<(String, String)> = text
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|r| r["direction"] == "down" && r["kind"] == "request")
            .filter_map(|r| {
                let p = &r["payload"];
                let setup = if p["method"] == "session/new" {
                    &p["params"]
                } else {
                    p
                };
                let entry = setup["mcpServers"].get(0)?;
                Some((
                    r["to"].as_str()?.to_owned(),
                    entry["type"].as_str()?.to_owned(),
                ))
            })
            .collect();
        let types: Vec<&str> = given.iter().map(|(_, t)| t.as_str()).collect();
        assert_eq!(types, ["acp", "http", "acp", "acp"], "{order:?}: {given:?}");
    }
}

#[tokio::test]
async fn an_agent_on_the_typescript_sdk_calls_our_tools_the_rfds_way() {
    // The official TypeScript SDK's `/unstable` agent (`McpOverAcpCaller`), an implementation
    // that is not ours, behind our proxies and an S11 one.
    let (Some(ts_agent), Some(s11)) = (ts_agent(), peer("s11-passthrough")) else {
        return;
    };
    let args = [
        "agent".to_owned(),
        example("sparkle"),
        s11,
        format!("{} tools", quoted(&example("tool-proxy"))),
        ts_agent,
    ];
    let mut editor = Editor::start(conductor(), &args);
    let session = editor.open_session().await;
    editor.prompt(&session, "tools").await;
    assert_eq!(
        said(&editor),
        [
            "sparkle: embody_sparkle, save_insight, list_insights",
            "tools: echo, add, whoami, status, steps"
        ],
        "{}",
        editor.stderr()
    );
    editor
        .prompt(&session, r#"call tools add {"a":2,"b":40}"#)
        .await;
    assert_eq!(said(&editor), [r#"tools.add: {"sum":42} [0 progress]"#]);
    // A tool's failure is an inner MCP error, not a failed ACP request.
    editor
        .prompt(&session, r#"call sparkle save_insight {"wrong":1}"#)
        .await;
    let failed = said(&editor);
    assert!(
        failed[0].starts_with("sparkle.save_insight failed: MCP error -32602: Invalid params"),
        "{failed:?}"
    );
    // Progress reaches it, tied to its request; the RFD has no requests from a server, so the
    // tool's closing `ping` fails, inside the tool.
    editor.prompt(&session, r#"call tools steps {"n":3}"#).await;
    assert_eq!(
        said(&editor),
        ["tools.steps: Method not found: ping (error) [3 progress]"]
    );
    editor.close_and_expect_a_clean_exit().await;
}

#[tokio::test]
async fn an_s11_proxys_mcp_server_reaches_agents_that_speak_ours_or_none() {
    // `s11-tools` serves `_mcp/connect` and S11's `_mcp/message`: the conductor puts each MCP
    // message in its form on the way to it, and in ours on the way back.
    let Some(tools) = peer("s11-tools") else {
        return;
    };
    let agents = [
        format!("{} --mcp-acp", quoted(&agent())),
        agent(),
        format!("{} --mcp-http", quoted(&agent())),
    ];
    let over = ["", " [over stdio; 0 progress]", " [over http; 0 progress]"];
    for (test_agent, over) in agents.into_iter().zip(over) {
        let args = ["agent".to_owned(), passthrough(), tools.clone(), test_agent];
        let mut editor = Editor::start(conductor(), &args);
        let session = editor.open_session().await;
        editor.prompt(&session, "tools").await;
        let listed = said(&editor);
        assert!(
            listed.len() == 1 && listed[0].starts_with("s11tools: greet"),
            "{listed:?}\n{}",
            editor.stderr()
        );
        editor
            .prompt(&session, r#"call s11tools greet {"name":"ada"}"#)
            .await;
        assert_eq!(
            said(&editor),
            [format!(
                r#"s11tools.greet: "hello, ada, from sacp 11"{over}"#
            )]
        );
        editor.close_and_expect_a_clean_exit().await;
    }
}

#[tokio::test]
async fn an_rfd_agent_calls_an_s11_proxys_tools_through_the_conductors_translator() {
    // An S11 proxy serves only `_mcp/*` connections; an RFD agent calls statelessly. The
    // conductor opens a connection for it, does the MCP `initialize` it never sends, and
    // carries each `mcp/message` over it: ours (`--mcp-rfd`) and the TypeScript SDK's
    // (`McpOverAcpCaller`), with an RFD proxy in between.
    let (Some(tools), Some(rfd)) = (peer("s11-tools"), peer("rfd-passthrough")) else {
        return;
    };
    let mut agents = vec![format!("{} --mcp-rfd", quoted(&agent()))];
    agents.extend(ts_agent());
    for (n, rfd_agent) in agents.into_iter().enumerate() {
        let trace =
            std::env::temp_dir().join(format!("sacp-translator-{}-{n}.jsonl", std::process::id()));
        let args = [
            "agent".to_owned(),
            "--trace".to_owned(),
            trace.to_string_lossy().into_owned(),
            tools.clone(),
            rfd.clone(),
            rfd_agent.clone(),
        ];
        let mut editor = Editor::start(conductor(), &args);
        let session = editor.open_session().await;
        editor.prompt(&session, "tools").await;
        let listed = said(&editor);
        assert!(
            listed.len() == 1 && listed[0].starts_with("s11tools: greet"),
            "{rfd_agent}: {listed:?}\n{}",
            editor.stderr()
        );
        editor
            .prompt(&session, r#"call s11tools greet {"name":"ada"}"#)
            .await;
        let called = said(&editor);
        assert!(
            called.len() == 1
                && called[0].starts_with(r#"s11tools.greet: "hello, ada, from sacp 11""#),
            "{rfd_agent}: {called:?}"
        );
        // A tool's bad arguments stay an inner MCP error.
        editor
            .prompt(&session, r#"call s11tools greet {"nom":1}"#)
            .await;
        let failed = said(&editor);
        assert!(
            failed.len() == 1 && failed[0].starts_with("s11tools.greet failed"),
            "{rfd_agent}: {failed:?}"
        );
        assert!(
            !editor
                .transcript
                .iter()
                .any(|l| l.starts_with("asked mcp/message") || l.starts_with("asked _mcp")),
            "the editor was asked: {:#?}",
            editor.transcript
        );
        // The session ends: the connection the translator opened to the S11 proxy for it
        // ends with it (`_mcp/disconnect`), while the chain goes on.
        editor
            .request("session/close", json!({"sessionId": session}))
            .await;
        let count = |method: &str| {
            std::fs::read_to_string(&trace)
                .unwrap_or_default()
                .lines()
                .filter(|l| {
                    l.contains(&format!(r#""method":"{method}""#))
                        && l.contains(r#""kind":"#)
                        && !l.contains(r#""kind":"response""#)
                        && l.contains(r#""from":"mcp-bridge""#)
                })
                .count()
        };
        until(
            "an _mcp/disconnect for every _mcp/connect",
            PATIENCE,
            || {
                let (connects, disconnects) = (count("_mcp/connect"), count("_mcp/disconnect"));
                match disconnects >= connects {
                    true => Ok(()),
                    false => Err(format!(
                        "{rfd_agent}: {connects} _mcp/connect to the S11 proxy, {disconnects} \
                     _mcp/disconnect after the session closed"
                    )),
                }
            },
        )
        .await;
        assert!(
            count("_mcp/connect") >= 1,
            "{rfd_agent}: the translator connected: {:#?}",
            std::fs::read_to_string(&trace)
                .unwrap_or_default()
                .lines()
                .filter(|l| l.contains("_mcp/"))
                .take(6)
                .collect::<Vec<_>>()
        );
        editor.close_and_expect_a_clean_exit().await;
        let _ = std::fs::remove_file(&trace);
    }
}

#[tokio::test]
async fn an_editors_own_rfd_server_reaches_agents_that_speak_ours_or_none() {
    // The editor's server is stateless (the RFD's); the agents open `_mcp/*` connections
    // (themselves, or the conductor's stdio and HTTP bridges for them): the conductor answers
    // the MCP `initialize` from the server's `server/discover` and calls it statelessly.
    let Some([(s11, _), (rfd, _)]) = peers() else {
        return;
    };
    let agents = [
        format!("{} --mcp-acp", quoted(&agent())),
        agent(),
        format!("{} --mcp-http", quoted(&agent())),
    ];
    let over = ["", " [over stdio; 0 progress]", " [over http; 0 progress]"];
    for (test_agent, over) in agents.into_iter().zip(over) {
        let args = [
            "agent".to_owned(),
            passthrough(),
            s11.clone(),
            rfd.clone(),
            test_agent.clone(),
        ];
        let mut editor = Editor::start(conductor(), &args);
        editor
            .request(
                "initialize",
                json!({"protocolVersion": 1, "clientCapabilities": {}}),
            )
            .await;
        let server = json!({"type": "acp", "name": "edmcp", "serverId": "editor-server-1"});
        let created = editor
            .request(
                "session/new",
                json!({"cwd": "/tmp", "mcpServers": [server]}),
            )
            .await;
        let session = created["result"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("{test_agent}: {created}"))
            .to_owned();
        editor.prompt(&session, "tools").await;
        let listed = said(&editor);
        assert!(
            listed.len() == 1 && listed[0].starts_with("edmcp: from_editor"),
            "{test_agent}: {listed:?}\n{}",
            editor.stderr()
        );
        editor.prompt(&session, "call edmcp from_editor {}").await;
        assert_eq!(
            said(&editor),
            [format!(
                "edmcp.from_editor: hello from the editor's \"editor-server-1\"{over}"
            )],
            "{test_agent}"
        );
        // Progress about a request reaches the agent's MCP client before the answer.
        editor.prompt(&session, "call edmcp steps {}").await;
        let stepped = said(&editor);
        assert!(
            stepped.len() == 1 && stepped[0].starts_with("edmcp.steps: hello from the editor's"),
            "{test_agent}: {stepped:?}"
        );
        if !over.is_empty() {
            assert!(stepped[0].ends_with("; 3 progress]"), "{stepped:?}");
        }
        // The editor was asked statelessly, and never of `_mcp/*`.
        let asked: Vec<&String> = editor
            .transcript
            .iter()
            .filter(|l| l.starts_with("asked"))
            .collect();
        assert!(
            asked.iter().any(|l| l.starts_with("asked mcp/message"))
                && !asked.iter().any(|l| l.starts_with("asked _mcp")),
            "{asked:#?}"
        );
        editor.close_and_expect_a_clean_exit().await;
    }
}

#[tokio::test]
async fn the_typescript_sdks_editor_server_reaches_agents_that_speak_ours_or_none() {
    // The official TypeScript SDK's `McpOverAcpProvider`, in an editor: its server is stateless
    // (`mcp/message`, MCP 2026-07-28); the agents open `_mcp/*` connections, themselves or
    // through the conductor's stdio and HTTP bridges, across an S11 and an RFD proxy.
    let (Some(editor), Some([(s11, _), (rfd, _)])) = (ts_editor(), peers()) else {
        return;
    };
    let agents = [
        format!("{} --mcp-acp", quoted(&agent())),
        agent(),
        format!("{} --mcp-http", quoted(&agent())),
    ];
    let over = ["", " [over stdio; 3 progress]", " [over http; 3 progress]"];
    for (test_agent, over) in agents.into_iter().zip(over) {
        let mut command = editor.split_whitespace();
        let output = tokio::process::Command::new(command.next().unwrap())
            .args(command)
            .arg(conductor())
            .args(["agent", &passthrough(), &s11, &rfd, &test_agent, "--"])
            .args(["tools", "call tsed hello {}", "call tsed steps {}"])
            .kill_on_drop(true)
            .output();
        let output = tokio::time::timeout(std::time::Duration::from_secs(60), output)
            .await
            .expect("the TypeScript editor's session did not end within 60 s")
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        let said: Vec<Vec<String>> = stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert!(
            output.status.success() && said.len() == 3,
            "{test_agent}: {said:?}\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(said[0][0].starts_with("tsed: hello, steps"), "{said:?}");
        let hello = over.replace("3 progress", "0 progress");
        assert_eq!(
            said[1],
            [format!(
                "tsed.hello: hello from the TypeScript editor (MCP 2026-07-28){hello}"
            )]
        );
        // The bridged agents' MCP client counts the progress it got.
        assert_eq!(
            said[2],
            [format!(
                "tsed.steps: steps from the TypeScript editor (MCP 2026-07-28){over}"
            )]
        );
    }
}
