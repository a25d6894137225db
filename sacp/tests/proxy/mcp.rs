//! A proxy's `#[tool]` methods as an MCP server over ACP, driven by an agent stand-in that
//! speaks `_mcp/*` by hand (so the test checks the wire, not our own client).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use sacp::acp::{PromptRequest, PromptResponse};
use sacp::jsonrpc::{Error, RawJson};
use sacp::mcp::ToolCx;
use sacp::proxy::Cx;
use serde_json::{Value, json};

use crate::common::*;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct EchoInput {
    /// What to say back.
    text: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct AddInput {
    a: i64,
    b: i64,
}

#[derive(serde::Serialize)]
struct Sum {
    sum: i64,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct SlowInput {
    steps: u32,
}

#[derive(Default)]
struct Toolbox {
    stopped: Arc<AtomicUsize>,
}

struct CountOnDrop(Arc<AtomicUsize>);

impl Drop for CountOnDrop {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[sacp::proxy]
impl Toolbox {
    /// Says the text back.
    #[tool]
    async fn echo(&self, input: EchoInput, _cx: &ToolCx) -> sacp::Result<String> {
        Ok(input.text)
    }

    /// Adds two numbers.
    #[tool(name = "add")]
    async fn plus(&self, input: AddInput, _cx: &ToolCx) -> sacp::Result<Sum> {
        Ok(Sum {
            sum: input.a + input.b,
        })
    }

    /// Always fails.
    #[tool]
    async fn fail(&self, _cx: &ToolCx) -> sacp::Result<String> {
        Err(Error::new(-32000, "the disk is full"))
    }

    /// Which session calls.
    #[tool]
    async fn whoami(&self, cx: &ToolCx) -> sacp::Result<String> {
        Ok(cx.session_id().map_or("unknown".to_owned(), |s| s.0))
    }

    /// Reports progress, pings the client, then works until it is cancelled.
    #[tool]
    async fn slow(&self, input: SlowInput, cx: &ToolCx) -> sacp::Result<()> {
        let _stopped = CountOnDrop(self.stopped.clone());
        for step in 1..=input.steps {
            cx.progress(
                f64::from(step),
                Some(f64::from(input.steps)),
                Some("working"),
            )
            .await?;
        }
        cx.ping().await?;
        std::future::pending::<()>().await;
        Ok(())
    }

    /// A prompt handler that awaits the agent, as Sparkle's does.
    #[on_request]
    async fn prompt(&self, req: PromptRequest, cx: &Cx) -> sacp::Result<PromptResponse> {
        cx.successor().request(req).await
    }
}

/// The agent stand-in: answers `session/new` with a session id, and the tools' `ping`s.
fn agent() -> Answer {
    Arc::new(|method, params, _| {
        Box::pin(async move {
            match method.as_str() {
                "session/new" => RawJson::from_string(r#"{"sessionId":"s1"}"#),
                "_mcp/request" => {
                    let p: Value = params.unwrap().parse()?;
                    assert_eq!(p["method"], "ping", "{p}");
                    Ok(RawJson::empty_object())
                }
                other => Err(Error::method_not_found(other)),
            }
        })
    })
}

/// The `acp:` URL the proxy declared in the `session/new` the agent got.
fn declared_url(chain: &Chain, name: &str) -> String {
    let line = chain
        .transcript
        .lines()
        .into_iter()
        .find(|l| l.starts_with("agent <- request session/new "))
        .expect("session/new reached the agent");
    let params: Value =
        serde_json::from_str(&line["agent <- request session/new ".len()..]).unwrap();
    let servers = params["mcpServers"].as_array().unwrap();
    let server = servers
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no server {name}: {params}"));
    assert_eq!(server["type"], "http");
    assert_eq!(server["headers"], json!([]));
    server["url"].as_str().unwrap().to_owned()
}

/// Sends an MCP request as the agent; its result, or the error.
async fn mcp(
    chain: &Chain,
    connection: &str,
    id: u64,
    method: &str,
    params: Value,
) -> Result<Value, Error> {
    let wrapped = json!({"connection_id": connection, "method": method, "params": params, "mcp_request_id": id});
    chain
        .request_as_agent("_mcp/request", &wrapped.to_string())
        .await
        .map(|raw| raw.parse::<Value>().unwrap())
}

async fn connected(chain: &Chain) -> String {
    chain
        .request_as_editor(
            "session/new",
            r#"{"cwd":"/tmp","mcpServers":[{"type":"stdio","name":"theirs","command":"x","args":[],"env":[]}]}"#,
        )
        .await
        .unwrap();
    let url = declared_url(chain, "toolbox");
    assert!(url.starts_with("acp:"), "{url}");
    let connect = json!({"acp_url": url});
    let answer: Value = chain
        .request_as_agent("_mcp/connect", &connect.to_string())
        .await
        .unwrap()
        .parse()
        .unwrap();
    answer["connection_id"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn tools_are_listed_with_their_schemas_and_called() {
    let chain = chain(Toolbox::default(), agent(), empty_answers());
    let conn = connected(&chain).await;

    let init = mcp(&chain, &conn, 1, "initialize", json!({
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "stand-in", "version": "1"}
    })).await.unwrap();
    assert_eq!(
        init["protocolVersion"], "2025-06-18",
        "the client's version, which we speak"
    );
    assert_eq!(init["serverInfo"]["name"], "toolbox");
    assert_eq!(init["capabilities"]["tools"], json!({"listChanged": false}));
    chain
        .notify_from_agent(
            "_mcp/notification",
            &json!({"connection_id": conn, "method": "notifications/initialized"}).to_string(),
        )
        .await;

    let list = mcp(&chain, &conn, 2, "tools/list", json!({}))
        .await
        .unwrap();
    let names: Vec<&str> = list["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["echo", "add", "fail", "whoami", "slow"]);
    assert_eq!(list.get("nextCursor"), None);
    let echo = &list["tools"][0];
    assert_eq!(echo["description"], "Says the text back.");
    assert_eq!(echo["inputSchema"]["type"], "object");
    assert_eq!(
        echo["inputSchema"]["properties"]["text"]["description"],
        "What to say back."
    );
    assert_eq!(echo["inputSchema"]["required"], json!(["text"]));
    assert_eq!(
        echo["inputSchema"]["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    assert_eq!(
        list["tools"][2]["inputSchema"],
        json!({"type": "object", "properties": {}})
    );

    let said = mcp(
        &chain,
        &conn,
        3,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "hi"}}),
    )
    .await
    .unwrap();
    assert_eq!(said, json!({"content": [{"type": "text", "text": "hi"}]}));
    let sum = mcp(
        &chain,
        &conn,
        4,
        "tools/call",
        json!({"name": "add", "arguments": {"a": 2, "b": 3}}),
    )
    .await
    .unwrap();
    assert_eq!(sum["structuredContent"], json!({"sum": 5}));
    assert_eq!(sum["content"][0]["text"], r#"{"sum":5}"#);
    let failed = mcp(&chain, &conn, 5, "tools/call", json!({"name": "fail"}))
        .await
        .unwrap();
    assert_eq!(failed["isError"], true);
    assert_eq!(failed["content"][0]["text"], "the disk is full");
    let who = mcp(&chain, &conn, 6, "tools/call", json!({"name": "whoami"}))
        .await
        .unwrap();
    assert_eq!(
        who["content"][0]["text"], "s1",
        "the session named in session/new's answer"
    );

    let bad = mcp(
        &chain,
        &conn,
        7,
        "tools/call",
        json!({"name": "add", "arguments": {"a": "two"}}),
    )
    .await
    .unwrap_err();
    assert_eq!(bad.code, -32602, "{bad}");
    assert!(bad.message.contains("add"), "{bad}");
    let unknown = mcp(&chain, &conn, 8, "tools/call", json!({"name": "nope"}))
        .await
        .unwrap_err();
    assert_eq!(unknown.code, -32602, "{unknown}");
    assert!(unknown.message.contains("unknown tool: nope"), "{unknown}");
    let method = mcp(&chain, &conn, 9, "resources/list", json!({}))
        .await
        .unwrap_err();
    assert_eq!(method.code, -32601, "{method}");
    let pong = mcp(&chain, &conn, 10, "ping", json!({})).await.unwrap();
    assert_eq!(pong, json!({}));
}

#[tokio::test]
async fn a_call_reports_progress_asks_the_client_and_stops_when_cancelled() {
    let toolbox = Toolbox::default();
    let stopped = toolbox.stopped.clone();
    let chain = chain(toolbox, agent(), empty_answers());
    let conn = connected(&chain).await;
    let call = json!({"connection_id": conn, "method": "tools/call", "mcp_request_id": 42,
        "params": {"name": "slow", "arguments": {"steps": 3}, "_meta": {"progressToken": "p1"}}});
    let running = tokio::spawn({
        let conductor = chain.conductor.clone();
        let wrapped = sacp::protocol::envelope::wrap("_mcp/request", Some(&raw(&call.to_string())));
        async move {
            conductor
                .request_raw(sacp::protocol::envelope::SUCCESSOR_REQUEST, Some(wrapped))
                .await
        }
    });
    // Three progress notifications and a ping, all naming the call, reach the agent.
    let lines = chain.wait_for_lines(1 + 3 + 1).await;
    let progress: Vec<Value> = lines
        .iter()
        .filter_map(|l| l.strip_prefix("agent <- notification _mcp/notification "))
        .map(|p| serde_json::from_str(p).unwrap())
        .collect();
    assert_eq!(progress.len(), 3, "{lines:#?}");
    for (i, p) in progress.iter().enumerate() {
        assert_eq!(p["connection_id"], conn.as_str());
        assert_eq!(p["method"], "notifications/progress");
        assert_eq!(p["related_mcp_request_id"], 42);
        assert_eq!(
            p["params"],
            json!({"progressToken": "p1", "progress": (i + 1) as f64, "total": 3.0, "message": "working"})
        );
    }
    let ping = lines
        .iter()
        .find_map(|l| l.strip_prefix("agent <- request _mcp/request "))
        .unwrap();
    let ping: Value = serde_json::from_str(ping).unwrap();
    assert_eq!(
        (&ping["method"], &ping["related_mcp_request_id"]),
        (&json!("ping"), &json!(42))
    );

    assert_eq!(stopped.load(Ordering::SeqCst), 0, "the tool still runs");
    chain
        .notify_from_agent(
            "_mcp/notification",
            &json!({"connection_id": conn, "method": "notifications/cancelled", "params": {"requestId": 42}}).to_string(),
        )
        .await;
    let answer = within("the cancelled call", running).await.unwrap();
    assert_eq!(answer.unwrap_err().code, -32800);
    within("the tool to stop", async {
        while stopped.load(Ordering::SeqCst) == 0 {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    })
    .await;
}

#[tokio::test]
async fn mcp_messages_for_servers_of_others_pass_through_unchanged() {
    let chain = chain(Toolbox::default(), agent(), empty_answers());
    let conn = connected(&chain).await;
    // A URL and a connection that are not this proxy's go up to the editor as they are.
    let foreign_connect = r#"{"acp_url":"acp:0000-not-ours"}"#;
    chain
        .request_as_agent("_mcp/connect", foreign_connect)
        .await
        .unwrap();
    let foreign = r#"{"connection_id":"theirs-1","method":"tools/list","params":{}}"#;
    chain
        .request_as_agent("_mcp/request", foreign)
        .await
        .unwrap();
    let lines = chain.transcript.lines();
    assert!(
        lines.contains(&format!("editor <- request _mcp/connect {foreign_connect}")),
        "{lines:#?}"
    );
    assert!(
        lines.contains(&format!("editor <- request _mcp/request {foreign}")),
        "{lines:#?}"
    );
    // After `_mcp/disconnect`, the connection is gone: a request for it goes up too.
    chain
        .notify_from_agent(
            "_mcp/disconnect",
            &json!({"connection_id": conn}).to_string(),
        )
        .await;
    let after = json!({"connection_id": conn, "method": "ping"}).to_string();
    chain
        .request_as_agent("_mcp/request", &after)
        .await
        .unwrap();
    assert!(
        chain
            .transcript
            .lines()
            .contains(&format!("editor <- request _mcp/request {after}"))
    );
}

#[tokio::test]
async fn every_session_gets_a_url_of_its_own_and_tools_see_their_session() {
    let agent: Answer = Arc::new(|method, params, _| {
        Box::pin(async move {
            assert_eq!(method, "session/new");
            let p: Value = params.unwrap().parse()?;
            // Name the session after the editor's cwd.
            RawJson::from_string(json!({"sessionId": p["cwd"]}).to_string())
        })
    });
    let chain = chain(Toolbox::default(), agent, empty_answers());
    for cwd in ["/one", "/two"] {
        chain
            .request_as_editor(
                "session/new",
                &json!({"cwd": cwd, "mcpServers": []}).to_string(),
            )
            .await
            .unwrap();
    }
    let urls: Vec<String> = chain
        .transcript
        .lines()
        .iter()
        .filter_map(|l| l.strip_prefix("agent <- request session/new "))
        .map(|p| {
            serde_json::from_str::<Value>(p).unwrap()["mcpServers"][0]["url"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(urls.len(), 2);
    assert_ne!(urls[0], urls[1]);
    for (url, cwd) in urls.iter().zip(["/one", "/two"]) {
        let answer: Value = chain
            .request_as_agent("_mcp/connect", &json!({"acp_url": url}).to_string())
            .await
            .unwrap()
            .parse()
            .unwrap();
        let conn = answer["connection_id"].as_str().unwrap();
        let who = mcp(&chain, conn, 1, "tools/call", json!({"name": "whoami"}))
            .await
            .unwrap();
        assert_eq!(who["content"][0]["text"], cwd);
    }
}

/// A proxy with many tools, written by hand: `ToolSet` and `Proxy` without the macro.
struct Many;

impl sacp::mcp::ToolSet for Many {
    fn server_name(&self) -> String {
        "many".into()
    }

    fn server_version(&self) -> String {
        "1.0.0".into()
    }

    fn tools() -> Vec<sacp::schema::mcp::Tool> {
        (0..120)
            .map(|i| {
                serde_json::from_value(
                    json!({"name": format!("t{i}"), "inputSchema": {"type": "object"}}),
                )
                .unwrap()
            })
            .collect()
    }

    async fn call_tool(
        &self,
        name: &str,
        _arguments: Option<serde_json::Map<String, Value>>,
        _cx: &ToolCx,
    ) -> Option<Result<sacp::schema::mcp::CallToolResult, Error>> {
        name.starts_with('t')
            .then(|| Ok(sacp::schema::mcp::CallToolResult::new(Vec::new())))
    }
}

impl sacp::proxy::Proxy for Many {
    fn takes(_method: &str, _from: sacp::acp::Side) -> bool {
        false
    }

    async fn dispatch(&self, message: sacp::proxy::Incoming, cx: &Cx) {
        cx.forward(message).await
    }

    fn mcp_servers(this: &Arc<Self>) -> Vec<Arc<dyn sacp::mcp::McpServer>> {
        vec![Arc::new(sacp::mcp::ToolServer::new(this.clone()))]
    }
}

#[tokio::test]
async fn tools_list_in_pages_with_a_cursor() {
    let chain = chain(Many, agent(), empty_answers());
    chain
        .request_as_editor("session/new", r#"{"cwd":"/tmp","mcpServers":[]}"#)
        .await
        .unwrap();
    let url = declared_url(&chain, "many");
    let answer: Value = chain
        .request_as_agent("_mcp/connect", &json!({"acp_url": url}).to_string())
        .await
        .unwrap()
        .parse()
        .unwrap();
    let conn = answer["connection_id"].as_str().unwrap();
    let mut names = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let page = mcp(&chain, conn, pages + 1, "tools/list", params)
            .await
            .unwrap();
        pages += 1;
        names.extend(
            page["tools"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["name"].as_str().unwrap().to_owned()),
        );
        match page.get("nextCursor").and_then(Value::as_str) {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(names, (0..120).map(|i| format!("t{i}")).collect::<Vec<_>>());
    let bad = mcp(
        &chain,
        conn,
        9,
        "tools/list",
        json!({"cursor": "not-a-cursor"}),
    )
    .await
    .unwrap_err();
    assert_eq!(bad.code, -32602, "{bad}");
}

#[tokio::test]
async fn a_session_that_ends_takes_its_servers_and_connections_with_it() {
    let chain = chain(Toolbox::default(), agent(), empty_answers());
    let conn = connected(&chain).await;
    mcp(&chain, &conn, 1, "ping", json!({})).await.unwrap();
    // The editor closes the session (the agent stand-in refuses, which does not matter).
    let _ = chain
        .request_as_editor("session/close", r#"{"sessionId":"s1"}"#)
        .await;
    // The connection is no longer this proxy's: the request goes up to the editor.
    let after = json!({"connection_id": conn, "method": "ping"}).to_string();
    chain
        .request_as_agent("_mcp/request", &after)
        .await
        .unwrap();
    assert!(
        chain
            .transcript
            .lines()
            .contains(&format!("editor <- request _mcp/request {after}")),
        "{:?}",
        chain.transcript
    );
}
