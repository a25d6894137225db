//! A deterministic ACP agent for tests and benchmarks: `test-agent [--mcp-acp|--mcp-http]`; see
//! `sacp_examples::test_agent`.

use sacp_examples::test_agent::TestAgent;

#[tokio::main(flavor = "current_thread")]
async fn main() -> sacp::Result<()> {
    sacp_examples::init_logging();
    let agent = match std::env::args().nth(1).as_deref() {
        None => TestAgent::default(),
        Some("--mcp-acp") => TestAgent::speaking_mcp_over_acp(),
        Some("--mcp-http") => TestAgent::with_mcp_over_http(),
        Some(other) => {
            eprintln!(
                "test-agent: unknown argument {other:?}; expected nothing, --mcp-acp or --mcp-http"
            );
            std::process::exit(2);
        }
    };
    sacp::agent::serve_stdio(agent).await
}
