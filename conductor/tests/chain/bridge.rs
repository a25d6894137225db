//! The MCP bridges through the real conductor: a proxy's tools (`tool-proxy`) reach an agent
//! that knows nothing of MCP over ACP — the test agent, whose MCP client is `rmcp` — over the
//! stdio bridge (`conductor mcp PORT` processes) or the HTTP bridge; and an agent that speaks
//! MCP over ACP gets no bridge at all.

use std::io::{Read, Write};
use std::net::TcpStream;

use serde_json::{Value, json};

use crate::common::*;

/// `conductor agent [flags] tool-proxy "test-agent <agent_flags>"`, with a trace of payloads.
fn bridged_chain(flags: &[&str], agent_flags: &str, trace: &std::path::Path) -> Vec<String> {
    let mut args = vec!["agent".to_owned()];
    args.extend(flags.iter().map(|f| (*f).to_owned()));
    args.extend([
        "--trace".to_owned(),
        trace.to_string_lossy().into_owned(),
        "--trace-payloads".to_owned(),
        quoted(&example("tool-proxy")),
        format!("{} {agent_flags}", quoted(&agent())),
    ]);
    args
}

fn trace_file(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("sacp-bridge-{}-{name}.jsonl", std::process::id()))
}

/// The trace's lines of requests and notifications between the bridges and a proxy that carry
/// `what`.
fn bridge_lines(trace: &std::path::Path, what: &str) -> Vec<Value> {
    std::fs::read_to_string(trace)
        .unwrap_or_default()
        .lines()
        .filter(|l| {
            l.contains("mcp-bridge") && !l.contains(r#""kind":"response""#) && l.contains(what)
        })
        // The last line may be half written: the next read has it whole.
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// Waits (a little: the trace reaches its file within 20 ms of an idle chain, later on a
/// loaded machine) until the trace has `n` `_mcp/connect`s of the bridges.
async fn connects_reach(trace: &std::path::Path, n: usize) {
    until(
        &format!("{n} _mcp/connect"),
        PATIENCE,
        || match bridge_lines(trace, "\"_mcp/connect\"").len() {
            seen if seen == n => Ok(()),
            seen => Err(format!("{seen} so far")),
        },
    )
    .await
}

/// The processes of this editor's tree that run `conductor mcp`.
fn bridge_processes(editor: &Editor) -> Vec<u32> {
    processes_tagged(&editor.tag)
        .into_iter()
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|cmdline| {
                let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
                args.len() >= 3 && args[1] == b"mcp"
            })
        })
        .collect()
}

/// The TCP ports `pid` listens on, with the address each is bound to (IPv4, as the kernel
/// writes it in `/proc/net/tcp`: `0100007F` is 127.0.0.1), and any IPv6 listener as address
/// `v6`.
fn listening(pid: u32) -> Vec<(String, u16)> {
    let inodes: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|dir| {
            dir.flatten()
                .filter_map(|fd| std::fs::read_link(fd.path()).ok())
                .filter_map(|link| {
                    let link = link.to_string_lossy().into_owned();
                    Some(link.strip_prefix("socket:[")?.strip_suffix(']')?.to_owned())
                })
                .collect()
        })
        .unwrap_or_default();
    let mut found = Vec::new();
    for (table, family) in [("/proc/net/tcp", "v4"), ("/proc/net/tcp6", "v6")] {
        for line in std::fs::read_to_string(table)
            .unwrap_or_default()
            .lines()
            .skip(1)
        {
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.len() > 9 && fields[3] == "0A" && inodes.iter().any(|i| i == fields[9]) {
                let (address, port) = fields[1].split_once(':').unwrap();
                let port = u16::from_str_radix(port, 16).unwrap();
                let address = if family == "v4" {
                    address.to_owned()
                } else {
                    "v6".to_owned()
                };
                found.push((address, port));
            }
        }
    }
    found
}

/// Calls `steps` (progress and a ping back to the client), `whoami` and `echo` and checks what
/// the agent says of them, over `via`.
async fn call_the_tools(editor: &mut Editor, session: &str, via: &str) {
    let done = editor.prompt(session, "tools").await;
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    assert_eq!(
        said(editor),
        [format!(
            "tools: echo, add, whoami, status, steps (over {via})"
        )]
    );
    editor.prompt(session, r#"call tools steps {"n": 3}"#).await;
    assert_eq!(
        said(editor),
        [format!(
            "tools.steps: 3 steps done, and the client answered a ping [over {via}; 3 progress]"
        )],
        "the progress notifications and the ping reached the agent's MCP client"
    );
    // The proxy's prompt handler awaits the agent while the agent calls the tool.
    editor.prompt(session, "call tools status {}").await;
    assert_eq!(
        said(editor),
        [format!(
            "tools.status: 1 prompt handler(s) awaiting the agent [over {via}; 0 progress]"
        )]
    );
    editor
        .prompt(session, r#"call tools add {"a": 2, "b": 40}"#)
        .await;
    assert_eq!(
        said(editor),
        [format!(
            r#"tools.add: {{"sum":42}} [over {via}; 0 progress]"#
        )]
    );
}

/// Opens a second session and calls `whoami` in both at once: each call sees its session.
async fn two_sessions_at_once(editor: &mut Editor, first: &str, via: &str) {
    let second = editor.new_session().await;
    let a = editor.send_prompt(first, "call tools whoami {}").await;
    let b = editor.send_prompt(&second, "call tools whoami {}").await;
    let answers = editor.until_responses(&[a, b]).await;
    for answer in &answers {
        assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    }
    let mut heard: Vec<String> = editor
        .transcript
        .iter()
        .filter_map(|l| l.strip_prefix("notification session/update "))
        .filter_map(|u| {
            let u: Value = serde_json::from_str(u).ok()?;
            let text = u["update"]["content"]["text"].as_str()?;
            text.starts_with("tools.whoami")
                .then(|| format!("{} {text}", u["sessionId"].as_str().unwrap_or_default()))
        })
        .collect();
    heard.sort();
    let mut expected = vec![
        format!("{first} tools.whoami: {first} [over {via}; 0 progress]"),
        format!("{second} tools.whoami: {second} [over {via}; 0 progress]"),
    ];
    expected.sort();
    assert_eq!(heard, expected);
}

#[tokio::test]
async fn an_rmcp_agent_calls_a_proxys_tools_through_the_stdio_bridge() {
    let trace = trace_file("stdio");
    let mut editor = Editor::start(conductor(), &bridged_chain(&[], "", &trace));
    let session = editor.open_session().await;
    call_the_tools(&mut editor, &session, "stdio").await;
    // The agent started `conductor mcp PORT` for the session's server, with the secret.
    let bridges = bridge_processes(&editor);
    assert_eq!(bridges.len(), 1, "{bridges:?}");
    two_sessions_at_once(&mut editor, &session, "stdio").await;
    assert_eq!(bridge_processes(&editor).len(), 2);
    // Every listener of the conductor is on 127.0.0.1.
    let ports = listening(editor.pid());
    assert_eq!(ports.len(), 2, "one listener per bridged entry: {ports:?}");
    assert!(
        ports.iter().all(|(address, _)| address == "0100007F"),
        "{ports:?}"
    );
    editor.close_and_expect_a_clean_exit().await;
    // Nothing listens any more.
    for (_, port) in ports {
        assert!(
            TcpStream::connect(("127.0.0.1", port)).is_err(),
            "port {port}"
        );
    }
    let _ = std::fs::remove_file(trace);
}

#[tokio::test]
async fn an_rmcp_agent_calls_a_proxys_tools_through_the_http_bridge() {
    let trace = trace_file("http");
    let mut editor = Editor::start(conductor(), &bridged_chain(&[], "--mcp-http", &trace));
    let session = editor.open_session().await;
    call_the_tools(&mut editor, &session, "http").await;
    assert!(bridge_processes(&editor).is_empty(), "no stdio bridge");
    two_sessions_at_once(&mut editor, &session, "http").await;
    let ports = listening(editor.pid());
    assert_eq!(
        ports.len(),
        1,
        "one HTTP listener for the conductor: {ports:?}"
    );
    assert_eq!(ports[0].0, "0100007F", "{ports:?}");
    // Each MCP session of the agent's clients was one `_mcp/connect`.
    connects_reach(&trace, 2).await;
    editor.close_and_expect_a_clean_exit().await;
    assert!(TcpStream::connect(("127.0.0.1", ports[0].1)).is_err());
    let _ = std::fs::remove_file(trace);
}

/// An editor that sends `session/new` right after `initialize`, to an agent slow to answer
/// `initialize`: the session's `acp:` entries are still bridged (the setup waits for the
/// answer that says what the agent speaks), and the tools work.
#[tokio::test]
async fn a_session_new_sent_before_the_initialize_answer_is_bridged_too() {
    let trace = trace_file("early");
    let mut editor = Editor::start(
        conductor(),
        &bridged_chain(&[], "--mcp-http --initialize-delay 500ms", &trace),
    );
    let init = editor
        .send_request(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {}}),
        )
        .await;
    let new = editor
        .send_request("session/new", json!({"cwd": "/tmp", "mcpServers": []}))
        .await;
    let answers = editor.until_responses(&[init, new]).await;
    let session = answers
        .iter()
        .find_map(|a| a["result"]["sessionId"].as_str())
        .unwrap_or_else(|| panic!("no session: {answers:?}"))
        .to_owned();
    call_the_tools(&mut editor, &session, "http").await;
    editor.close_and_expect_a_clean_exit().await;
    let _ = std::fs::remove_file(trace);
}

#[tokio::test]
async fn the_bridge_can_be_chosen_on_the_command_line_and_in_the_chain_file() {
    // An agent that could take HTTP gets stdio when told so...
    let trace = trace_file("forced");
    let mut editor = Editor::start(
        conductor(),
        &bridged_chain(&["--mcp-bridge", "stdio"], "--mcp-http", &trace),
    );
    let session = editor.open_session().await;
    editor
        .prompt(&session, "call tools echo {\"text\":\"x\"}")
        .await;
    assert_eq!(said(&editor), ["tools.echo: x [over stdio; 0 progress]"]);
    editor.close_and_expect_a_clean_exit().await;

    // ...and one that declared nothing gets HTTP when the chain file says so.
    let file = std::env::temp_dir().join(format!("sacp-bridge-{}.toml", std::process::id()));
    std::fs::write(
        &file,
        format!(
            "mcp_bridge = \"http\"\n[[component]]\ncommand = {:?}\n",
            example("tool-proxy")
        ),
    )
    .unwrap();
    let args = vec![
        "agent".to_owned(),
        "--chain".to_owned(),
        file.to_string_lossy().into_owned(),
        quoted(&agent()),
    ];
    let mut editor = Editor::start(conductor(), &args);
    let session = editor.open_session().await;
    editor
        .prompt(&session, "call tools echo {\"text\":\"y\"}")
        .await;
    assert_eq!(said(&editor), ["tools.echo: y [over http; 0 progress]"]);
    editor.close_and_expect_a_clean_exit().await;
    let _ = std::fs::remove_file(file);
    let _ = std::fs::remove_file(trace);
}

#[tokio::test]
async fn an_agent_that_speaks_mcp_over_acp_gets_no_bridge() {
    let trace = trace_file("native");
    let mut editor = Editor::start(conductor(), &bridged_chain(&[], "--mcp-acp", &trace));
    let session = editor.open_session().await;
    editor.prompt(&session, "tools").await;
    assert_eq!(said(&editor), ["tools: echo, add, whoami, status, steps"]);
    editor.prompt(&session, "call tools whoami {}").await;
    assert_eq!(said(&editor), [format!("tools.whoami: {session}")]);
    assert!(listening(editor.pid()).is_empty(), "no listener");
    assert!(bridge_processes(&editor).is_empty());
    assert!(
        bridge_lines(&trace, "_mcp").is_empty(),
        "the bridges took no part"
    );
    // A connection the proxy does not know gets an error; the chain goes on.
    editor
        .prompt(&session, "mcp-request no-such-connection tools/list")
        .await;
    let refused = said(&editor);
    assert!(
        refused[0].starts_with("tools/list on no-such-connection failed:"),
        "{refused:?}"
    );
    editor
        .prompt(&session, "call tools echo {\"text\":\"still here\"}")
        .await;
    assert_eq!(said(&editor), ["tools.echo: still here"]);
    editor.close_and_expect_a_clean_exit().await;
    let _ = std::fs::remove_file(trace);
}

/// The first MCP server entry the agent was given for `session`, as it says (`setup`): the
/// trace has its secrets redacted.
async fn agents_entry(editor: &mut Editor, session: &str) -> Value {
    editor.prompt(session, "setup").await;
    let said = said(editor);
    let servers = said[0]
        .split(" servers=")
        .nth(1)
        .expect("setup says its servers");
    let servers: Value = serde_json::from_str(servers).unwrap();
    servers[0].clone()
}

/// The trace's line of the `session/new` that reached the agent (where the bridge's secret is
/// redacted; the agent's own words are its own). Waits for it a little: the trace reaches its
/// file within 20 ms of an idle chain, later on a loaded machine (its writer runs last).
async fn setup_given(trace: &std::path::Path) -> String {
    until(
        "session/new to reach the agent in the trace",
        PATIENCE,
        || {
            let text = std::fs::read_to_string(trace).unwrap();
            text.lines()
                .find(|l| {
                    l.ends_with('}')
                        && l.contains("\"to\":\"2:test-agent\"")
                        && l.contains("\"method\":\"session/new\"")
                })
                .map(str::to_owned)
                .ok_or("not yet")
        },
    )
    .await
}

/// The stdio entry the agent was given: its port and secret.
async fn stdio_entry(editor: &mut Editor, session: &str) -> (u16, String) {
    let server = agents_entry(editor, session).await;
    assert_eq!(server["args"][0], "mcp", "{server}");
    let port = server["args"][1].as_str().unwrap().parse().unwrap();
    let secret = server["env"][0]["value"].as_str().unwrap().to_owned();
    assert_eq!(server["env"][0]["name"], "SACP_MCP_BRIDGE_TOKEN");
    (port, secret)
}

#[tokio::test]
async fn connections_without_the_secret_are_refused_and_never_reach_the_proxy() {
    let trace = trace_file("secret");
    let mut editor = Editor::start(conductor(), &bridged_chain(&[], "", &trace));
    let session = editor.open_session().await;
    editor.prompt(&session, "tools").await;
    // The agent's one connection (the trace reaches its file within 20 ms).
    let connects = 1;
    connects_reach(&trace, connects).await;
    let (port, secret) = stdio_entry(&mut editor, &session).await;
    let given = setup_given(&trace).await;
    assert!(
        !given.contains(&secret) && given.contains("[redacted]"),
        "{given}"
    );

    // A raw connection with a wrong secret, then an MCP message: reset, nothing answered.
    let mut socket = TcpStream::connect(("127.0.0.1", port)).unwrap();
    socket.set_read_timeout(Some(PATIENCE)).unwrap();
    let _ =
        socket.write_all(b"not-the-secret\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n");
    let mut buffer = [0; 64];
    let read = socket.read(&mut buffer);
    assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");

    // The bridge process says so, and exits non-zero (its stdin open all along).
    let (code, stderr) = run_bridge(port, Some("wrong")).await;
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("refused"), "{stderr}");
    // Without a secret at all, and with nothing listening.
    let (code, stderr) = run_bridge(port, None).await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("SACP_MCP_BRIDGE_TOKEN"), "{stderr}");
    let closed = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
    let closed_port = closed.local_addr().unwrap().port();
    drop(closed);
    let (code, stderr) = run_bridge(closed_port, Some(&secret)).await;
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("cannot connect"), "{stderr}");

    // The right secret works, from a process of our own: an MCP `ping` is answered.
    let mut bridge = tokio::process::Command::new(conductor())
        .args(["mcp", &port.to_string()])
        .env("SACP_MCP_BRIDGE_TOKEN", &secret)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = bridge.stdin.take().unwrap();
    let mut stdout = tokio::io::BufReader::new(bridge.stdout.take().unwrap());
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    stdin
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":\"p\",\"method\":\"ping\"}\n")
        .await
        .unwrap();
    let mut line = String::new();
    tokio::time::timeout(PATIENCE, stdout.read_line(&mut line))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(line.trim(), r#"{"jsonrpc":"2.0","id":"p","result":{}}"#);
    // Its stdin closes: it exits 0, and the owner hears `_mcp/disconnect`.
    drop(stdin);
    let status = tokio::time::timeout(PATIENCE, bridge.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(status.code(), Some(0));
    eventually("one _mcp/disconnect", || {
        bridge_lines(&trace, "\"_mcp/disconnect\"").len() == 1
    })
    .await;

    // Only the agent's connection and ours made `_mcp/connect`s.
    connects_reach(&trace, connects + 1).await;
    editor.close_and_expect_a_clean_exit().await;
    let _ = std::fs::remove_file(trace);
}

#[tokio::test]
async fn http_requests_without_the_token_or_from_a_foreign_origin_are_refused() {
    let trace = trace_file("token");
    let mut editor = Editor::start(conductor(), &bridged_chain(&[], "--mcp-http", &trace));
    let session = editor.open_session().await;
    editor.prompt(&session, "tools").await;
    let server = agents_entry(&mut editor, &session).await;
    assert_eq!(server["type"], "http", "{server}");
    let url = server["url"].as_str().unwrap().to_owned();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    let bearer = server["headers"][0]["value"].as_str().unwrap().to_owned();
    let given = setup_given(&trace).await;
    assert!(!given.contains(&bearer), "{given}");
    assert!(
        given.contains(r#"{"name":"Authorization","value":"[redacted]"}"#),
        "{given}"
    );
    assert_eq!(server["headers"][0]["name"], "Authorization");
    // The agent's one connection (the trace reaches its file within 20 ms).
    let connects = 1;
    connects_reach(&trace, connects).await;

    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let post = |headers: Vec<(&'static str, String)>| {
        let url = url.clone();
        let body = initialize.to_string();
        async move { http_post(&url, &headers, &body).await }
    };
    let accept = ("Accept", "application/json, text/event-stream".to_owned());
    assert_eq!(post(vec![accept.clone()]).await.0, 401, "no token");
    assert_eq!(
        post(vec![
            accept.clone(),
            ("Authorization", "Bearer wrong".to_owned())
        ])
        .await
        .0,
        401
    );
    assert_eq!(
        post(vec![
            accept.clone(),
            ("Authorization", bearer.clone()),
            ("Origin", "http://evil.example".to_owned())
        ])
        .await
        .0,
        403
    );
    // None of them reached the proxy.
    assert_eq!(bridge_lines(&trace, "\"_mcp/connect\"").len(), connects);
    // With the token, an unknown MCP session is 404; the right request opens one.
    let (status, _) = http_post(
        &url,
        &[
            accept.clone(),
            ("Authorization", bearer.clone()),
            ("Mcp-Session-Id", "no-such-session".to_owned()),
        ],
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).to_string(),
    )
    .await;
    assert_eq!(status, 404);
    let (status, body) = post(vec![
        ("Accept", "application/json".to_owned()),
        ("Authorization", bearer.clone()),
        ("Origin", "http://127.0.0.1".to_owned()),
    ])
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(
        body.contains("\"protocolVersion\":\"2025-11-25\""),
        "{body}"
    );
    connects_reach(&trace, connects + 1).await;

    // The chain is fine.
    editor
        .prompt(&session, "call tools echo {\"text\":\"ok\"}")
        .await;
    assert_eq!(said(&editor), ["tools.echo: ok [over http; 0 progress]"]);
    editor.close_and_expect_a_clean_exit().await;
    let _ = std::fs::remove_file(trace);
}

#[tokio::test]
async fn killing_a_bridge_process_disconnects_and_the_end_leaves_nothing() {
    let trace = trace_file("kill");
    let mut editor = Editor::start(conductor(), &bridged_chain(&[], "", &trace));
    let session = editor.open_session().await;
    editor.prompt(&session, "tools").await;
    let bridges = bridge_processes(&editor);
    assert_eq!(bridges.len(), 1);
    assert!(bridge_lines(&trace, "\"_mcp/disconnect\"").is_empty());
    std::process::Command::new("kill")
        .args(["-9", &bridges[0].to_string()])
        .status()
        .unwrap();
    eventually("one _mcp/disconnect", || {
        bridge_lines(&trace, "\"_mcp/disconnect\"").len() == 1
    })
    .await;
    let disconnect = &bridge_lines(&trace, "\"_mcp/disconnect\"")[0];
    assert_eq!(disconnect["from"], "mcp-bridge");
    assert_eq!(disconnect["to"], "1:tool-proxy");
    // The agent's client is gone, the chain is not.
    editor
        .prompt(&session, "call tools echo {\"text\":\"x\"}")
        .await;
    assert!(
        said(&editor)[0].starts_with("tools.echo failed"),
        "{:?}",
        said(&editor)
    );
    editor.prompt(&session, "hello").await;
    assert_eq!(said(&editor), ["hello"]);

    // A second session's bridge process ends with the conductor, killed or not.
    let second = editor.new_session().await;
    editor.prompt(&second, "tools").await;
    let ports = listening(editor.pid());
    assert_eq!(ports.len(), 2);
    let conductor = editor.pid();
    std::process::Command::new("kill")
        .args(["-9", &conductor.to_string()])
        .status()
        .unwrap();
    let _ = editor.exit().await;
    editor.assert_no_process_left().await;
    for (_, port) in ports {
        assert!(
            TcpStream::connect(("127.0.0.1", port)).is_err(),
            "port {port}"
        );
    }
    let _ = std::fs::remove_file(trace);
}

/// Runs `conductor mcp PORT` with `token` (or none) and its stdin open until it exits: its
/// exit status and stderr.
async fn run_bridge(port: u16, token: Option<&str>) -> (Option<i32>, String) {
    let mut command = tokio::process::Command::new(conductor());
    command
        .args(["mcp", &port.to_string()])
        .env_remove("SACP_MCP_BRIDGE_TOKEN")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    if let Some(token) = token {
        command.env("SACP_MCP_BRIDGE_TOKEN", token);
    }
    let mut child = command.spawn().unwrap();
    let stdin = child.stdin.take();
    let output = tokio::time::timeout(PATIENCE, child.wait_with_output())
        .await
        .expect("the bridge process ends by itself")
        .unwrap();
    drop(stdin);
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// A POST (the status and the body).
async fn http_post(url: &str, headers: &[(&str, String)], body: &str) -> (u16, String) {
    let mut request = reqwest::Client::new()
        .post(url)
        .header("Content-Type", "application/json")
        .body(body.to_owned());
    for (name, value) in headers {
        request = request.header(*name, value);
    }
    let response = tokio::time::timeout(PATIENCE, request.send())
        .await
        .expect("the bridge answers")
        .expect("the request goes through");
    let status = response.status().as_u16();
    let body = tokio::time::timeout(PATIENCE, response.text())
        .await
        .expect("the body comes")
        .unwrap_or_default();
    (status, body)
}
