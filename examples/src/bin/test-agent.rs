//! A deterministic ACP agent for tests and benchmarks; see `sacp_examples::test_agent`.

#[tokio::main(flavor = "current_thread")]
async fn main() -> sacp::Result<()> {
    sacp_examples::init_logging();
    sacp::agent::serve_stdio(sacp_examples::test_agent::TestAgent::default()).await
}
