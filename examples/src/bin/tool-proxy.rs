//! A proxy that gives the agent tools: `tool-proxy [NAME]` (an MCP server named `NAME`, default
//! `tools`). See `sacp_examples::toolbox`.

#[tokio::main(flavor = "current_thread")]
async fn main() -> sacp::Result<()> {
    sacp_examples::init_logging();
    let name = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "tools".to_owned());
    sacp::proxy::serve_stdio(sacp_examples::toolbox::Toolbox::new(name)).await
}
