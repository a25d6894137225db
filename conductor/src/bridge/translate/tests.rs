//! The translator between a stateless caller and a connection provider, message by
//! message: the provider and the caller are JSON-RPC connections standing where the routing table
//! would (the process-level tests in `tests/dialects` run it in real chains).

use std::time::Duration;

use sacp::jsonrpc::{Connection, Methods, RawJson};
use serde_json::{Value, json};

use super::*;

type Seen = Arc<Mutex<Vec<String>>>;

/// A connection-oriented provider on the hub's other end: `_mcp/connect`, MCP
/// `initialize`, a tool that reports progress before its answer, one that never answers.
fn provider(transport: sacp::jsonrpc::Channel, seen: Seen) -> Connection {
    let told = seen.clone();
    let handler = Methods::new()
        .on_raw_request(CONNECT, |_, _| async {
            RawJson::to_raw(&json!({"connection_id": "c1"}))
        })
        .on_raw_request(REQUEST, move |params, cx| {
            let seen = seen.clone();
            async move {
                let m = MessageParams::parse(params.as_ref())?;
                let p: Value = m.params.map(|p| p.parse()).transpose()?.unwrap_or_default();
                lock(&seen).push(format!("{} {p}", m.method));
                match (m.method.as_str(), p["name"].as_str()) {
                    ("initialize", _) => RawJson::to_raw(&json!({
                        "protocolVersion": "2025-11-25",
                        "capabilities": {"tools": {}},
                        "serverInfo": {"name": "conn-server", "version": "1"}
                    })),
                    ("tools/call", Some("steps")) => {
                        for progress in 1..=2 {
                            let note = json!({
                                "connection_id": "c1",
                                "method": "notifications/progress",
                                "params": {"progressToken": p["_meta"]["progressToken"], "progress": progress}
                            });
                            cx.notify_raw(NOTIFICATION, Some(RawJson::to_raw(&note)?)).await?;
                        }
                        RawJson::to_raw(&json!({"content": []}))
                    }
                    ("tools/call", _) => std::future::pending().await,
                    _ => Err(Error::method_not_found(&m.method)),
                }
            }
        })
        .on_raw_notification(NOTIFICATION, move |params, _| {
            let told = told.clone();
            async move {
                let m = MessageParams::parse(params.as_ref())?;
                lock(&told).push(format!("told {}", m.method));
                Ok(())
            }
        });
    Connection::builder()
        .name("provider")
        .spawn(transport, handler)
}

async fn call(caller: &Connection, method: &str, params: Value) -> Value {
    let message = json!({"serverId": "acp:u1", "requestId": 7, "method": method, "params": params});
    let answer = caller
        .request_raw(RFD_MESSAGE, Some(RawJson::to_raw(&message).unwrap()))
        .timeout(Duration::from_secs(5))
        .await
        .unwrap();
    answer.parse().unwrap()
}

#[tokio::test]
async fn a_stateless_caller_reaches_a_connection_provider() {
    let (hub_end, provider_end) = sacp::jsonrpc::channel();
    let (translator_end, caller_end) = sacp::jsonrpc::channel();
    let seen: Seen = Arc::default();
    let _provider = provider(provider_end, seen.clone());
    let _translator = start(translator_end, Hub::start(hub_end));
    let notes: Seen = Arc::default();
    let caller = Connection::builder().name("caller").spawn(
        caller_end,
        Methods::new().on_raw_notification(RFD_MESSAGE, {
            let notes = notes.clone();
            move |params, _| {
                let notes = notes.clone();
                async move {
                    let m: RfdMessage = params.unwrap().parse()?;
                    lock(&notes).push(format!(
                        "{} {} {}",
                        m.request_id,
                        m.method,
                        m.params.unwrap().as_str()
                    ));
                    Ok(())
                }
            }
        }),
    );
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "rfd-agent", "version": "2"},
        "progressToken": "t"
    });

    // `server/discover`, answered from the `initialize` the translator did for the caller.
    let discovered = call(&caller, "server/discover", json!({"_meta": meta})).await;
    assert_eq!(discovered["result"]["capabilities"], json!({"tools": {}}));
    assert_eq!(
        discovered["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "conn-server"
    );
    assert_eq!(
        lock(&seen).first().map(String::as_str),
        Some(
            r#"initialize {"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"rfd-agent","version":"2"}}"#
        )
    );

    // Progress comes back before the answer, with the caller's request id; the RFD's
    // `_meta` keys do not reach the provider; the result gets its `resultType`.
    let answer = call(
        &caller,
        "tools/call",
        json!({"name": "steps", "_meta": meta}),
    )
    .await;
    assert_eq!(
        answer,
        json!({"result": {"content": [], "resultType": "complete"}})
    );
    assert_eq!(
        *lock(&notes),
        [
            r#"7 notifications/progress {"progressToken":"t","progress":1}"#,
            r#"7 notifications/progress {"progressToken":"t","progress":2}"#
        ]
    );
    assert!(
        lock(&seen)
            .contains(&r#"tools/call {"name":"steps","_meta":{"progressToken":"t"}}"#.to_owned())
    );

    // Another revision is an inner error; an MCP error stays one.
    let old = json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2025-06-18"}});
    let refused = call(&caller, "tools/list", old).await;
    assert_eq!(refused["error"]["code"], -32022);
    assert_eq!(refused["error"]["data"]["requested"], "2025-06-18");
    let failed = call(&caller, "prompts/list", json!({})).await;
    assert_eq!(failed["error"]["code"], -32601);

    // A call the caller gives up on is cancelled at the provider.
    let message = json!({"serverId": "acp:u1", "requestId": 8, "method": "tools/call", "params": {"name": "slow"}});
    let gave_up = caller
        .request_raw(RFD_MESSAGE, Some(RawJson::to_raw(&message).unwrap()))
        .timeout(Duration::from_millis(300))
        .await;
    assert!(gave_up.is_err());
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while !lock(&seen).contains(&"told notifications/cancelled".to_owned()) {
        assert!(tokio::time::Instant::now() < deadline, "{:?}", lock(&seen));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Pushes `what` to `seen` when dropped (a handler cancelled).
struct OnDrop(Seen, &'static str);

impl Drop for OnDrop {
    fn drop(&mut self) {
        lock(&self.0).push(self.1.to_owned());
    }
}

#[tokio::test]
async fn a_connection_caller_reaches_a_stateless_provider() {
    let (hub_end, provider_end) = sacp::jsonrpc::channel();
    let (translator_end, caller_end) = sacp::jsonrpc::channel();
    let seen: Seen = Arc::default();
    // An RFD provider: `server/discover`, a tool that asks for input (2026-07-28), one
    // that never answers.
    let _provider = Connection::builder().name("rfd-provider").spawn(
        provider_end,
        Methods::new().on_raw_request(RFD_MESSAGE, {
            let seen = seen.clone();
            move |params, _| {
                let seen = seen.clone();
                async move {
                    let m: RfdMessage = params.unwrap().parse()?;
                    lock(&seen).push(format!("{} {}", m.method, m.params.as_ref().unwrap().as_str()));
                    let p: Value = m.params.unwrap().parse()?;
                    let result = match (m.method.as_str(), p["name"].as_str()) {
                        ("server/discover", _) => json!({"resultType": "complete", "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}}),
                        ("tools/call", Some("ask")) => json!({"resultType": "input_required", "inputRequests": {}}),
                        _ => {
                            let _cancelled = OnDrop(seen.clone(), "cancelled");
                            std::future::pending::<()>().await;
                            json!({})
                        }
                    };
                    RawJson::to_raw(&json!({"result": result}))
                }
            }
        }),
    );
    let _translator = start(translator_end, Hub::start(hub_end));
    let caller = Connection::builder()
        .name("caller")
        .spawn(caller_end, Methods::new());
    let connected = caller
        .request_raw(
            CONNECT,
            Some(RawJson::to_raw(&json!({"acp_url": "acp:s1", "server_id": "s1"})).unwrap()),
        )
        .await
        .unwrap();
    let id: ConnectResult = connected.parse().unwrap();
    let with_id = |mut params: Value| {
        params["connection_id"] = Value::from(id.connection_id.clone());
        RawJson::to_raw(&params).unwrap()
    };
    let request = |method: &str, params: Value, mcp_id: u64| {
        caller.request_raw(
            REQUEST,
            Some(with_id(
                json!({"method": method, "params": params, "mcp_request_id": mcp_id}),
            )),
        )
    };
    let init = request(
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {"roots": {}}, "clientInfo": {"name": "agent", "version": "1"}}),
        0,
    )
    .timeout(Duration::from_secs(5))
    .await
    .unwrap();
    let init: Value = init.parse().unwrap();
    assert_eq!(init["protocolVersion"], "2025-06-18");
    assert_eq!(init["capabilities"], json!({"tools": {}}));
    assert_eq!(
        lock(&seen)[0],
        r#"server/discover {"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":{}},"io.modelcontextprotocol/clientInfo":{"name":"agent","version":"1"}}}"#
    );
    // What a 2025-11-25 client cannot take is an error saying so.
    let asked = request("tools/call", json!({"name": "ask"}), 1)
        .timeout(Duration::from_secs(5))
        .await;
    assert!(asked.unwrap_err().message.contains("`input_required`"));
    // `notifications/cancelled` cancels the stateless call at the provider.
    let slow = request("tools/call", json!({"name": "slow"}), 2);
    let slow = tokio::spawn(async move { slow.timeout(Duration::from_secs(5)).await });
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while lock(&seen).len() < 3 {
        assert!(tokio::time::Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let cancel = with_id(json!({"method": "notifications/cancelled", "params": {"requestId": 2}}));
    caller.notify_raw(NOTIFICATION, Some(cancel)).await.unwrap();
    let answer = slow.await.unwrap();
    assert_eq!(answer.unwrap_err().code, jsonrpc::code::REQUEST_CANCELLED);
    while !lock(&seen).contains(&"cancelled".to_owned()) {
        assert!(tokio::time::Instant::now() < deadline, "{:?}", lock(&seen));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
