//! A proxy that forwards everything unchanged: all a proxy needs is the handlers it wants, and
//! this one wants none. Run it in a chain: `conductor agent passthrough-proxy <agent>`.

/// Forwards every message in both directions.
struct PassThrough;

#[sacp::proxy]
impl PassThrough {}

#[tokio::main(flavor = "current_thread")]
async fn main() -> sacp::Result<()> {
    sacp_examples::init_logging();
    sacp::proxy::serve_stdio(PassThrough).await
}
