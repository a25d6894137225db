//! A proxy that adds the turn's prompt to each permission request the agent makes: `audit-proxy`.
//! Run it in a chain: `conductor agent audit-proxy <agent>`. See `sacp_examples::audit`.

#[tokio::main(flavor = "current_thread")]
async fn main() -> sacp::Result<()> {
    sacp_examples::init_logging();
    sacp::proxy::serve_stdio(sacp_examples::audit::Auditor::default()).await
}
