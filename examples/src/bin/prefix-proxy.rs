//! A proxy that prefixes every text chunk the agent streams: `prefix-proxy [PREFIX]` (default
//! `"» "`). Run it in a chain: `conductor agent "prefix-proxy '>> '" <agent>`.

use sacp_examples::prefix::Prefixer;

#[tokio::main(flavor = "current_thread")]
async fn main() -> sacp::Result<()> {
    sacp_examples::init_logging();
    let prefix = std::env::args().nth(1).unwrap_or_else(|| "» ".to_owned());
    sacp::proxy::serve_stdio(Prefixer::new(prefix)).await
}
