//! `probe-proxy NAME`: a proxy that tells what it can reach (files, directories, the network,
//! its environment) when a prompt asks it; see `sacp_examples::probe`. Built natively and as a
//! WebAssembly component, to test the conductor's sandbox.

use sacp_examples::probe::Probe;

fn main() -> sacp::Result<()> {
    sacp_examples::init_logging();
    let name = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "probe".to_owned());
    sacp::run(sacp::proxy::serve_stdio(Probe { name }))
}
