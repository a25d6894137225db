//! A proxy that prefixes every text chunk the agent streams: `prefix-proxy [PREFIX]` (default
//! `"» "`). Run it in a chain: `conductor agent "prefix-proxy '>> '" <agent>`.
//!
//! The same source builds as a WebAssembly component (`cargo build --target wasm32-wasip2
//! --bin prefix-proxy`), which the conductor runs in its own process:
//! `conductor agent "wasm:prefix-proxy.wasm '>> '" <agent>`.

use sacp_examples::prefix::Prefixer;

fn main() -> sacp::Result<()> {
    sacp_examples::init_logging();
    let prefix = std::env::args().nth(1).unwrap_or_else(|| "» ".to_owned());
    sacp::run(sacp::proxy::serve_stdio(Prefixer::new(prefix)))
}
