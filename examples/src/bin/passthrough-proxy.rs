//! A proxy that forwards everything unchanged: all a proxy needs is the handlers it wants, and
//! this one wants none. Run it in a chain: `conductor agent passthrough-proxy <agent>`.
//!
//! With no typed handler it reads nothing it forwards, so it speaks ACP v1 and the v2 draft
//! alike, and says so: a v2 chain through it stays v2. It also builds as a WebAssembly
//! component (`--target wasm32-wasip2`): `conductor agent wasm:passthrough-proxy.wasm <agent>`.

/// Forwards every message in both directions.
struct PassThrough;

#[sacp::proxy(protocol = [1, 2])]
impl PassThrough {}

fn main() -> sacp::Result<()> {
    sacp_examples::init_logging();
    sacp::run(sacp::proxy::serve_stdio(PassThrough))
}
