//! A proxy that renders HTML as text itself for a client that cannot take HTML: `plain-proxy`.
//! Run it in a chain: `conductor agent plain-proxy panel-proxy <agent>`. See
//! `sacp_examples::plain`.

#[tokio::main(flavor = "current_thread")]
async fn main() -> sacp::Result<()> {
    sacp_examples::init_logging();
    sacp::proxy::serve_stdio(sacp_examples::plain::Plain).await
}
