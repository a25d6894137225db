//! Proxies and the conductor in one binary: `one_binary N "<agent command>"` runs `N`
//! pass-through proxies inside the conductor's own process (`Chain::proxy`) in front of the
//! agent's process. It is the chain benchmark's in-process chain, and the smallest example of
//! shipping your proxies with the conductor.

use std::process::ExitCode;

use sacp_conductor::Chain;

/// Forwards everything, both ways.
#[derive(Debug, Default)]
struct PassThrough;

#[sacp::proxy]
impl PassThrough {}

fn main() -> ExitCode {
    // Also this binary's own launcher and stdio MCP bridge.
    if let Some(code) = sacp_conductor::cli::helper_subcommand() {
        return code;
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(n), Some(agent), 2) = (
        args.first().and_then(|n| n.parse::<usize>().ok()),
        args.get(1),
        args.len(),
    ) else {
        eprintln!("usage: one_binary N \"<agent command>\"");
        return ExitCode::from(2);
    };
    let mut chain = Chain::new();
    for _ in 0..n {
        chain = chain.proxy(PassThrough);
    }
    let chain = match chain.agent_command(agent) {
        Ok(chain) => chain,
        Err(e) => {
            eprintln!("one_binary: {e}");
            return ExitCode::from(2);
        }
    };
    chain.run_as_program()
}
