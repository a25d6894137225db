//! A proxy that ends every turn with an HTML panel summarising the tools the turn used:
//! `panel-proxy`. Run it in a chain: `conductor agent panel-proxy <agent>`. See
//! `sacp_examples::panel`.

#[tokio::main(flavor = "current_thread")]
async fn main() -> sacp::Result<()> {
    sacp_examples::init_logging();
    sacp::proxy::serve_stdio(sacp_examples::panel::Panel::default()).await
}
