//! A proxy written with symposium's `sacp` 11 that gives every session an MCP server over ACP,
//! `s11tools`, with one tool, `greet` — as its users write one.

use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Greet {
    name: String,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), sacp::Error> {
    let server = sacp::mcp_server::McpServer::builder("s11tools".to_string())
        .tool_fn(
            "greet",
            "Greets someone by name",
            async |input: Greet, _cx| Ok(format!("hello, {}, from sacp 11", input.name)),
            sacp::tool_fn!(),
        )
        .build();
    sacp::Proxy
        .builder()
        .name("s11-tools")
        .with_mcp_server(server)
        .connect_to(sacp::ByteStreams::new(
            tokio::io::stdout().compat_write(),
            tokio::io::stdin().compat(),
        ))
        .await
}
