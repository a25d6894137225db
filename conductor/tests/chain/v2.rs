//! ACP v2 (the draft) through the conductor: the test agent's v2 side (`--protocol 2`, or a
//! dual `1,2`) behind zero or two proxies that speak both versions, and what each hop answers
//! for what its version lacks.

use serde_json::{Value, json};

use crate::common::*;

fn v2_agent(protocols: &str) -> Vec<String> {
    vec![agent(), "--protocol".to_owned(), protocols.to_owned()]
}

/// `conductor agent` with `proxies` before `agent`; the agent's arguments in one word.
fn chain(proxies: &[String], agent: &[String]) -> Vec<String> {
    let mut args = vec!["agent".to_owned()];
    args.extend(proxies.iter().cloned());
    args.push(
        agent
            .iter()
            .map(|w| quoted(w))
            .collect::<Vec<_>>()
            .join(" "),
    );
    args
}

fn v2_initialize(version: u16) -> Value {
    json!({"protocolVersion": version, "info": {"name": "v2-editor", "version": "1.0.0"}})
}

/// Sends a `session/new` with `id: null` and expects `-32600`, answered with `id: null`.
async fn expect_a_null_id_refused(editor: &mut Editor) {
    editor
        .send_line(r#"{"jsonrpc":"2.0","id":null,"method":"session/new","params":{"cwd":"/tmp"}}"#)
        .await;
    let refused = editor.next_message().await.unwrap();
    assert_eq!(refused["id"], Value::Null, "{refused}");
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
}

/// What a v2 turn showed the editor: its updates as they were written (UUIDs numbered), the
/// permission requests' params, and whether the acknowledgement came before the idle update.
struct V2Turn {
    ack: Value,
    updates: Vec<String>,
    permissions: Vec<Value>,
    ack_before_idle: bool,
}

impl V2Turn {
    fn kinds(&self) -> Vec<String> {
        self.updates
            .iter()
            .map(|line| {
                let v: Value = serde_json::from_str(line).unwrap();
                let update = &v["params"]["update"];
                match update["sessionUpdate"].as_str().unwrap() {
                    "state_update" => match update["stopReason"].as_str() {
                        Some(reason) => format!("{} {reason}", update["state"].as_str().unwrap()),
                        None => update["state"].as_str().unwrap().to_owned(),
                    },
                    "agent_message_chunk" => {
                        format!("chunk {}", update["content"]["text"].as_str().unwrap())
                    }
                    other => other.to_owned(),
                }
            })
            .collect()
    }
}

/// Sends a v2 prompt and reads until the turn's idle update (and the acknowledgement).
/// With `cancel_on`, sends `session/cancel` once a chunk with that text arrives.
async fn v2_turn(
    editor: &mut Editor,
    session: &str,
    text: &str,
    cancel_on: Option<&str>,
) -> V2Turn {
    let id = editor.send_prompt(session, text).await;
    let (mut ack, mut updates, mut permissions, mut idle) = (None, Vec::new(), Vec::new(), false);
    let mut ack_before_idle = false;
    while ack.is_none() || !idle {
        let line = editor
            .next_line()
            .await
            .expect("the conductor's output ended");
        let message: Value = serde_json::from_str(&line).unwrap();
        if message.get("method").is_none() {
            assert_eq!(message["id"], id, "{line}");
            ack_before_idle = !idle;
            ack = Some(message);
            continue;
        }
        if message["method"] == "session/update" {
            let update = &message["params"]["update"];
            idle |= update["sessionUpdate"] == "state_update" && update["state"] == "idle";
            if cancel_on.is_some() && update["content"]["text"].as_str() == cancel_on {
                editor
                    .notify("session/cancel", json!({"sessionId": session}))
                    .await;
            }
            updates.push(without_uuids(&line));
            continue;
        }
        if message["method"] == "session/request_permission" {
            permissions.push(message["params"].clone());
        }
        editor.handle(message).await;
    }
    V2Turn {
        ack: ack.unwrap(),
        updates,
        permissions,
        ack_before_idle,
    }
}

/// Initializes for v2 (answered 2, with the agent's `info`), opens a session, runs `full`.
async fn full_turn(args: &[String]) -> (V2Turn, V2Turn) {
    let mut editor = Editor::start(conductor(), args);
    let init = editor.request("initialize", v2_initialize(2)).await;
    assert_eq!(init["result"]["protocolVersion"], 2, "{init}");
    assert_eq!(init["result"]["info"]["name"], "test-agent", "{init}");
    let session = editor.new_session().await;
    let full = v2_turn(&mut editor, &session, "full", None).await;
    let cancelled = v2_turn(&mut editor, &session, "wait", Some("waiting")).await;
    editor.close_and_expect_a_clean_exit().await;
    (full, cancelled)
}

#[tokio::test]
async fn a_v2_turn_through_two_proxies_is_the_direct_turn_byte_for_byte() {
    let agent = v2_agent("2");
    let (direct, direct_cancel) = full_turn(&chain(&[], &agent)).await;
    let (proxied, proxied_cancel) =
        full_turn(&chain(&[passthrough(), passthrough()], &agent)).await;

    // The whole v2 turn, in order: the acknowledgement before idle, the user message,
    // running, chunks, the plan, the tool call with its permission and content, idle last.
    assert_eq!(
        direct.kinds(),
        [
            "user_message",
            "running",
            "chunk looking",
            "plan_update",
            "tool_call_update",
            "tool_call_update",
            "tool_call_content_chunk",
            "tool_call_update",
            "chunk chose allow",
            "idle end_turn",
        ],
        "{:#?}",
        direct.updates
    );
    for turn in [&direct, &proxied, &direct_cancel, &proxied_cancel] {
        assert!(turn.ack_before_idle, "{:?}", turn.ack);
        assert!(turn.ack["result"]["messageId"].is_string(), "{}", turn.ack);
    }
    // The permission arrived with its title and subject.
    assert_eq!(direct.permissions.len(), 1);
    assert_eq!(direct.permissions[0]["title"], "Edit src/main.rs?");
    assert_eq!(
        direct.permissions[0]["subject"],
        json!({"type": "tool_call", "toolCall": {"toolCallId": "call-1"}})
    );
    // Two proxies change nothing: every update as the agent wrote it, in its order.
    assert_eq!(proxied.updates, direct.updates);
    assert_eq!(proxied.permissions, direct.permissions);
    // A cancel ends the turn idle `cancelled`.
    assert_eq!(
        direct_cancel.kinds(),
        ["user_message", "running", "chunk waiting", "idle cancelled"]
    );
    assert_eq!(proxied_cancel.updates, direct_cancel.updates);
}

#[tokio::test]
async fn a_v1_proxy_brings_a_v2_editor_to_v1_or_to_32022() {
    // In front of a dual agent: the agent's v1 side is chosen, and the editor told 1.
    let trace = std::env::temp_dir().join(format!("sacp-v1-hop-{}.jsonl", std::process::id()));
    let mut args = chain(&[example("prefix-proxy")], &v2_agent("1,2"));
    args.splice(
        1..1,
        [
            "--trace".to_owned(),
            trace.to_string_lossy().into_owned(),
            "--trace-payloads".to_owned(),
        ],
    );
    let mut editor = Editor::start(conductor(), &args);
    let mut v2 = v2_initialize(2);
    v2["capabilities"] = json!({"auth": {"terminal": true}, "newInV3": {}});
    let init = editor.request("initialize", v2).await;
    assert_eq!(init["result"]["protocolVersion"], 1, "{init}");
    let session = editor.new_session().await;
    let answer = editor.prompt(&session, "hello").await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    editor.close_and_expect_a_clean_exit().await;
    // The v1 hop got the `initialize` v1 writes: `clientInfo`, `clientCapabilities` (what v1
    // defines alike), no v2 fields.
    let to_agent = std::fs::read_to_string(&trace)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .find(|line| {
            line["method"] == "initialize" && line["hop"] == 2 && line["kind"] == "request"
        })
        .expect("the initialize the agent got");
    assert_eq!(
        to_agent["payload"],
        json!({
            "protocolVersion": 1,
            "clientInfo": {"name": "v2-editor", "version": "1.0.0"},
            "clientCapabilities": {"auth": {"terminal": true}},
        }),
        "{to_agent}"
    );
    let _ = std::fs::remove_file(trace);

    // In front of a v2-only agent: the agent's `-32022` reaches the editor, and the editor's
    // next `initialize` is still answered.
    let mut editor = Editor::start(
        conductor(),
        &chain(&[example("prefix-proxy")], &v2_agent("2")),
    );
    for _ in 0..2 {
        let init = editor.request("initialize", v2_initialize(2)).await;
        assert_eq!(init["error"]["code"], -32022, "{init}");
        assert_eq!(
            init["error"]["data"],
            json!({"requested": 1, "supported": [2]})
        );
        // The agent said no (the proxy passed its answer up): its name is in the message.
        let message = init["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.starts_with("component 2 (\"test-agent\") refused initialize: "),
            "{init}"
        );
    }
    editor.close_and_expect_a_clean_exit().await;
}

#[tokio::test]
async fn a_v1_editor_refused_by_a_v2_only_proxy_is_told_which_component_refused() {
    let mut editor = Editor::start(
        conductor(),
        &chain(&[example("v2-observer-proxy")], &v2_agent("2")),
    );
    let init = editor
        .request(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {}}),
        )
        .await;
    // Code and data as the proxy gave them; the message names it among the chain's parts.
    assert_eq!(init["error"]["code"], -32022, "{init}");
    assert_eq!(init["error"]["data"]["requested"], 1, "{init}");
    let message = init["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("component 1 (\"v2-observer-proxy\") refused initialize: "),
        "{init}"
    );
    editor.close_and_expect_a_clean_exit().await;
}

/// The hops `method` travelled in a trace file, as `(hop, kind)`.
fn hops_of(trace: &std::path::Path, method: &str) -> Vec<(u64, String)> {
    std::fs::read_to_string(trace)
        .expect("the trace file")
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).expect("a trace line is JSON"))
        .filter(|line| line["type"] == "message" && line["method"] == method)
        .map(|line| {
            (
                line["hop"].as_u64().unwrap_or(0),
                line["kind"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_v2_hop_answers_what_its_version_lacks_and_goes_on() {
    // Each hop is v2, and the agent speaks v1 too: it has a `session/load` for its v1
    // connections, which would answer. The first hop that lacks the method refuses it, and
    // no later component ever sees it.
    for proxies in [vec![passthrough(), passthrough()], vec![]] {
        let trace = std::env::temp_dir().join(format!(
            "sacp-v2-refusal-{}-{}.jsonl",
            std::process::id(),
            proxies.len()
        ));
        let mut args = chain(&proxies, &v2_agent("1,2"));
        args.splice(
            1..1,
            ["--trace".to_owned(), trace.to_string_lossy().into_owned()],
        );
        let mut editor = Editor::start(conductor(), &args);
        let init = editor.request("initialize", v2_initialize(2)).await;
        assert_eq!(init["result"]["protocolVersion"], 2, "{init}");
        let session = editor.new_session().await;
        let load = editor
            .request(
                "session/load",
                json!({"sessionId": session, "cwd": "/tmp", "mcpServers": []}),
            )
            .await;
        assert_eq!(load["error"]["code"], -32601, "{load}");
        assert_eq!(
            load["error"]["message"], "Method not found: session/load is not a method of ACP v2",
            "{load}"
        );
        // `id: null` is not a v2 request: the conductor, whose hops renumber ids, refuses it.
        expect_a_null_id_refused(&mut editor).await;
        let turn = v2_turn(&mut editor, &session, "stream 2", None).await;
        assert_eq!(
            turn.kinds(),
            [
                "user_message",
                "running",
                "chunk chunk 1",
                "chunk chunk 2",
                "idle end_turn"
            ]
        );
        editor.close_and_expect_a_clean_exit().await;
        // The request went one hop, and its refusal came back on it.
        assert_eq!(
            hops_of(&trace, "session/load"),
            [(1, "request".to_owned()), (1, "error".to_owned())],
            "with {} proxies",
            proxies.len()
        );
        let _ = std::fs::remove_file(&trace);
    }
}

/// A v2 turn runs after the prompt's answer (`Cx::run_turn`); the client closing the
/// connection right after the prompt gives it the grace a request gets: every update of the
/// turn, to its idle state, still reaches the client.
#[tokio::test]
async fn a_v2_turn_gets_the_eof_grace_when_the_client_leaves_after_the_prompt() {
    let mut editor = Editor::start(&agent(), &["--protocol".to_owned(), "2".to_owned()]);
    let init = editor.request("initialize", v2_initialize(2)).await;
    assert_eq!(init["result"]["protocolVersion"], 2, "{init}");
    let session = editor.new_session().await;
    let id = editor.send_prompt(&session, "stream 3000").await;
    editor.close_stdin();
    let mut chunks = 0;
    let mut idle = None;
    let mut answered = false;
    while let Some(message) = editor.next_message().await {
        if message["id"] == id {
            answered = true;
            continue;
        }
        let update = &message["params"]["update"];
        if update["content"]["text"]
            .as_str()
            .is_some_and(|t| t.starts_with("chunk "))
        {
            chunks += 1;
        }
        if update["sessionUpdate"] == "state_update" && update["state"] == "idle" {
            idle = Some(update.clone());
        }
    }
    assert!(answered, "the prompt was answered");
    assert_eq!(chunks, 3000, "every chunk of the turn arrived");
    assert!(idle.is_some(), "the turn reached its idle state");
}

#[tokio::test]
async fn a_v2_agent_answers_versions_and_requests_as_the_draft_says() {
    let mut editor = Editor::start(&agent(), &["--protocol".to_owned(), "2".to_owned()]);
    // Asked for 3: the highest it speaks at or below, 2.
    let three = editor.request("initialize", v2_initialize(3)).await;
    assert_eq!(three["result"]["protocolVersion"], 2, "{three}");
    // Asked for 0 or 1: nothing it speaks fits.
    for version in [0, 1] {
        let low = editor
            .request("initialize", json!({"protocolVersion": version}))
            .await;
        assert_eq!(low["error"]["code"], -32022, "{low}");
        assert_eq!(
            low["error"]["data"],
            json!({"requested": version, "supported": [2]})
        );
    }
    // v2 without `info`: not a v2 `initialize`.
    let bare = editor
        .request("initialize", json!({"protocolVersion": 2}))
        .await;
    assert_eq!(bare["error"]["code"], -32602, "{bare}");
    let init = editor.request("initialize", v2_initialize(2)).await;
    assert_eq!(init["result"]["protocolVersion"], 2, "{init}");
    // v1's methods are not v2's: `-32601`, and the connection goes on.
    for (method, params) in [
        (
            "fs/read_text_file",
            json!({"sessionId": "s", "path": "/etc/hostname"}),
        ),
        (
            "session/load",
            json!({"sessionId": "s", "cwd": "/tmp", "mcpServers": []}),
        ),
    ] {
        let answer = editor.request(method, params).await;
        assert_eq!(answer["error"]["code"], -32601, "{answer}");
    }
    // `id: null` is not a v2 request.
    expect_a_null_id_refused(&mut editor).await;
    let session = editor.new_session().await;
    assert_eq!(session, "session-1");
    editor.close_and_expect_a_clean_exit().await;
}

/// Reads until every session of `sessions` has gone idle, its prompt (of id `acks[i]`)
/// acknowledged before; each session's updates in order.
async fn until_idle(editor: &mut Editor, sessions: &[String], acks: &[Value]) -> Vec<Vec<Value>> {
    let mut updates = vec![Vec::new(); sessions.len()];
    let mut idle = vec![false; sessions.len()];
    let mut acked = vec![false; sessions.len()];
    while idle.contains(&false) {
        let message = editor
            .next_message()
            .await
            .expect("the conductor's output ended");
        if message.get("method").is_none() {
            let at = acks
                .iter()
                .position(|id| *id == message["id"])
                .expect("an ack");
            assert!(message["result"]["messageId"].is_string(), "{message}");
            acked[at] = true;
            continue;
        }
        if message["method"] != "session/update" {
            editor.handle(message).await;
            continue;
        }
        let at = sessions
            .iter()
            .position(|s| message["params"]["sessionId"] == s.as_str())
            .expect("an update of a session of this test");
        let update = message["params"]["update"].clone();
        if update["sessionUpdate"] == "state_update" && update["state"] == "idle" {
            assert!(
                acked[at],
                "session {at} went idle before its prompt was acknowledged"
            );
            idle[at] = true;
        } else {
            assert!(!idle[at], "an update after idle: {update}");
        }
        if update["sessionUpdate"] == "agent_message_chunk"
            && update["content"]["text"] == "waiting"
        {
            editor
                .notify("session/cancel", json!({"sessionId": sessions[at]}))
                .await;
        }
        updates[at].push(update);
    }
    updates
}

#[tokio::test]
async fn v2_turns_of_several_sessions_keep_their_order_through_three_proxies_and_end_idle() {
    // Three proxies, one of them typed on v2: two sessions stream at once while a third
    // waits and is cancelled.
    let proxies = [passthrough(), example("v2-observer-proxy"), passthrough()];
    let mut editor = Editor::start(conductor(), &chain(&proxies, &v2_agent("2")));
    let init = editor.request("initialize", v2_initialize(2)).await;
    assert_eq!(init["result"]["protocolVersion"], 2, "{init}");
    let mut sessions = Vec::new();
    for _ in 0..3 {
        sessions.push(editor.new_session().await);
    }
    const N: usize = 2000;
    let acks = [
        editor
            .send_prompt(&sessions[0], &format!("stream {N}"))
            .await,
        editor
            .send_prompt(&sessions[1], &format!("stream {N}"))
            .await,
        editor.send_prompt(&sessions[2], "wait").await,
    ];
    let updates = until_idle(&mut editor, &sessions, &acks).await;
    for (session, updates) in updates.iter().enumerate().take(2) {
        let texts: Vec<String> = updates
            .iter()
            .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
            .map(|u| u["content"]["text"].as_str().unwrap().to_owned())
            .collect();
        let expected: Vec<String> = (1..=N).map(|i| format!("chunk {i}")).collect();
        assert!(
            texts == expected,
            "session {session}: the chunks came out of order"
        );
        assert_eq!(updates[0]["sessionUpdate"], "user_message");
        assert_eq!(updates[1]["state"], "running");
        assert_eq!(updates.last().unwrap()["stopReason"], "end_turn");
        assert_eq!(updates.len(), N + 3);
    }
    let cancelled: Vec<&Value> = updates[2].iter().collect();
    assert_eq!(
        cancelled.last().unwrap()["stopReason"],
        "cancelled",
        "{cancelled:?}"
    );
    editor.close_and_expect_a_clean_exit().await;
    // The typed proxy's prompt handlers waited for their turns' ends (`cx.idle`).
    let stderr = editor.stderr();
    for (session, stop) in sessions.iter().zip(["end_turn", "end_turn", "cancelled"]) {
        let line = format!("v2-observer-proxy: the turn of {session} ended \"{stop}\"");
        assert!(stderr.contains(&line), "{line}\n{stderr}");
    }
}

#[tokio::test]
async fn a_v2_agent_gets_a_v2_entry_for_a_proxys_tools_over_the_transport_it_declared() {
    // The v2 test agent declares `session.mcp.stdio` alone, or `session.mcp.http` alone
    // (`--mcp-http`); the typed v2 proxy in front of it has a `#[tool]` server.
    for (flags, transport) in [("2", "stdio"), ("2 --mcp-http", "http")] {
        let mut agent_words = v2_agent("2");
        agent_words.extend(flags.split(' ').skip(1).map(str::to_owned));
        let mut editor = Editor::start(
            conductor(),
            &chain(&[example("v2-observer-proxy")], &agent_words),
        );
        let init = editor.request("initialize", v2_initialize(2)).await;
        assert_eq!(init["result"]["protocolVersion"], 2, "{init}");
        let session = editor.new_session().await;
        let chunks = |turn: &V2Turn| -> Vec<String> {
            turn.updates
                .iter()
                .map(|l| serde_json::from_str::<Value>(l).unwrap())
                .filter(|v| v["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
                .map(|v| {
                    v["params"]["update"]["content"]["text"]
                        .as_str()
                        .unwrap()
                        .to_owned()
                })
                .collect()
        };
        let setup = v2_turn(&mut editor, &session, "setup", None).await;
        let entries: Value = serde_json::from_str(&chunks(&setup)[0]).unwrap();
        let entry = &entries[0];
        assert_eq!(entry["type"], transport, "{entries}");
        assert_eq!(entry["name"], "observer");
        // A valid v2 entry: it reads as v2's `McpServer` of that transport.
        let typed: sacp::schema::acp::v2::McpServer =
            serde_json::from_value(entry.clone()).unwrap();
        match (transport, typed) {
            ("stdio", sacp::schema::acp::v2::McpServer::Stdio(stdio)) => {
                assert!(
                    std::path::Path::new(&stdio.command.0).is_absolute(),
                    "{entry}"
                );
            }
            ("http", sacp::schema::acp::v2::McpServer::Http(http)) => {
                assert!(http.url.starts_with("http://127.0.0.1:"), "{entry}");
            }
            (_, other) => panic!("not a {transport} entry: {other:?}"),
        }
        let tools = v2_turn(&mut editor, &session, "tools", None).await;
        assert_eq!(
            chunks(&tools),
            [format!("observer: prompts (over {transport})")]
        );
        editor.close_and_expect_a_clean_exit().await;
    }
}

#[tokio::test]
async fn a_typed_v2_proxy_changes_only_the_text_it_rewrote() {
    // The v2 `future` turn: fields this schema lacks, explicit `null`s (v2's "clear this
    // field"), an update of an unknown kind, an acknowledgement with an unknown field. Through
    // `v2-observer-proxy '>> '`, typed on v2 and rewriting agent text chunks, only the text
    // changes; through a pass-through, nothing does.
    use sacp_examples::test_agent::FUTURE_V2;
    let observer = format!("{} '>> '", quoted(&example("v2-observer-proxy")));
    for (proxy, prefix) in [(observer, ">> "), (passthrough(), "")] {
        let mut editor = Editor::start(conductor(), &chain(&[proxy], &v2_agent("2")));
        let init = editor.request("initialize", v2_initialize(2)).await;
        assert_eq!(init["result"]["protocolVersion"], 2, "{init}");
        let session = editor.new_session().await;
        let id = editor.send_prompt(&session, "future").await;
        let (mut ack, mut lines) = (None, Vec::new());
        while lines.len() < 6 || ack.is_none() {
            let line = editor.next_line().await.expect("the chain ended");
            let message: Value = serde_json::from_str(&line).unwrap();
            if message.get("method").is_none() {
                assert_eq!(message["id"], id);
                ack = Some(line);
            } else {
                lines.push(line);
            }
        }
        // user message, running, the three, idle.
        let sent: Vec<String> = FUTURE_V2
            .iter()
            .map(|u| {
                let params = u
                    .replace("SESSION", &session)
                    .replace(r#""text":"future""#, &format!(r#""text":"{prefix}future""#));
                format!(r#"{{"jsonrpc":"2.0","method":"session/update","params":{params}}}"#)
            })
            .collect();
        assert_eq!(lines[2..5], sent[..], "{lines:#?}");
        assert!(lines[5].contains(r#""state":"idle""#), "{}", lines[5]);
        let ack = ack.expect("the acknowledgement");
        assert!(ack.contains(r#","futureRes":3}"#), "{ack}");
        editor.close_and_expect_a_clean_exit().await;
    }
}
