//! An existing rmcp server (written with rmcp's `#[tool_router]`), attached to a proxy with
//! `#[mcp_server]` and served over ACP: the same list/call test as the `#[tool]` server's.

use std::sync::Arc;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{ServerCapabilities, ServerConfig};
use rmcp::{ServerHandler, tool, tool_handler, tool_router};
use sacp::jsonrpc::{Error, RawJson};
use sacp::mcp::Rmcp;
use serde_json::{Value, json};

use crate::common::*;

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct SumRequest {
    /// The left-hand side.
    a: i32,
    b: i32,
}

#[derive(Debug, Clone)]
struct Calculator {
    #[allow(dead_code)]
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl Calculator {
    fn new() -> Self {
        Calculator {
            tool_router: Self::tool_router(),
        }
    }

    #[tool(description = "Adds two numbers")]
    fn sum(&self, Parameters(SumRequest { a, b }): Parameters<SumRequest>) -> String {
        (a + b).to_string()
    }

    #[tool(description = "Subtracts the second number from the first")]
    fn sub(&self, Parameters(SumRequest { a, b }): Parameters<SumRequest>) -> String {
        (a - b).to_string()
    }
}

#[tool_handler]
impl ServerHandler for Calculator {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

/// A proxy that gives every session the rmcp calculator.
struct WithCalculator;

#[sacp::proxy]
impl WithCalculator {
    #[mcp_server]
    fn calculator(&self) -> Rmcp<Calculator> {
        Rmcp::new("calculator", Calculator::new())
    }
}

fn agent() -> Answer {
    Arc::new(|method, _, _| {
        Box::pin(async move {
            match method.as_str() {
                "session/new" => RawJson::from_string(r#"{"sessionId":"s1"}"#),
                other => Err(Error::method_not_found(other)),
            }
        })
    })
}

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

#[tokio::test]
async fn an_rmcp_server_lists_and_calls_its_tools_over_acp() {
    let chain = chain(WithCalculator, agent(), empty_answers());
    chain
        .request_as_editor("session/new", r#"{"cwd":"/tmp","mcpServers":[]}"#)
        .await
        .unwrap();
    let line = chain.transcript.lines().remove(0);
    let params: Value =
        serde_json::from_str(line.strip_prefix("agent <- request session/new ").unwrap()).unwrap();
    let server = &params["mcpServers"][0];
    assert_eq!(server["name"], "calculator");
    let connected: Value = chain
        .request_as_agent(
            "_mcp/connect",
            &json!({"acp_url": server["url"], "session_id": "s1"}).to_string(),
        )
        .await
        .unwrap()
        .parse()
        .unwrap();
    let conn = connected["connection_id"].as_str().unwrap();

    let init = mcp(&chain, conn, 1, "initialize", json!({
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "stand-in", "version": "1"}
    })).await.unwrap();
    assert!(init["capabilities"]["tools"].is_object(), "{init}");
    chain
        .notify_from_agent(
            "_mcp/notification",
            &json!({"connection_id": conn, "method": "notifications/initialized"}).to_string(),
        )
        .await;

    let list = mcp(&chain, conn, 2, "tools/list", json!({})).await.unwrap();
    let mut names: Vec<&str> = list["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["sub", "sum"], "{list}");
    let sum = list["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "sum")
        .unwrap();
    assert_eq!(sum["description"], "Adds two numbers");
    assert_eq!(
        sum["inputSchema"]["properties"]["a"]["description"],
        "The left-hand side."
    );

    let five = mcp(
        &chain,
        conn,
        3,
        "tools/call",
        json!({"name": "sum", "arguments": {"a": 2, "b": 3}}),
    )
    .await
    .unwrap();
    assert_eq!(five["content"][0]["text"], "5", "{five}");
    let minus = mcp(
        &chain,
        conn,
        4,
        "tools/call",
        json!({"name": "sub", "arguments": {"a": 2, "b": 3}}),
    )
    .await
    .unwrap();
    assert_eq!(minus["content"][0]["text"], "-1", "{minus}");
    let unknown = mcp(
        &chain,
        conn,
        5,
        "tools/call",
        json!({"name": "nope", "arguments": {}}),
    )
    .await;
    // MCP: an unknown tool is a protocol error (invalid params), not a tool result.
    let refused = unknown.expect_err("an unknown tool is refused");
    assert_eq!(
        refused.code,
        sacp::jsonrpc::code::INVALID_PARAMS,
        "{refused}"
    );
}
