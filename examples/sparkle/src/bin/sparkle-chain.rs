//! `sparkle-chain [--embodiment-file FILE] "<agent command>"`: Sparkle and any agent in one
//! binary. Sparkle runs inside the conductor's process (`Chain::proxy`), the agent as a
//! process; the editor runs this as its agent, as it would run `conductor agent sparkle
//! "<agent command>"`.

use std::process::ExitCode;

use sacp_conductor::Chain;
use sparkle::{DEFAULT_EMBODIMENT, Sparkle};

fn main() -> ExitCode {
    // This executable is also the conductor's helper: how components start, the MCP bridge.
    if let Some(code) = sacp_conductor::cli::helper_subcommand() {
        return code;
    }
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (embodiment, agent) = match args.as_slice() {
        [agent] => (
            std::env::var("SPARKLE_EMBODIMENT").unwrap_or_else(|_| DEFAULT_EMBODIMENT.to_owned()),
            agent,
        ),
        [flag, path, agent] if flag == "--embodiment-file" => match std::fs::read_to_string(path) {
            Ok(text) => (text.trim_end().to_owned(), agent),
            Err(e) => {
                eprintln!("sparkle-chain: cannot read {path}: {e}");
                return ExitCode::from(2);
            }
        },
        _ => {
            eprintln!("usage: sparkle-chain [--embodiment-file FILE] \"<agent command>\"");
            return ExitCode::from(2);
        }
    };
    let chain = match Chain::new()
        .proxy(Sparkle::new(embodiment))
        .agent_command(agent)
    {
        Ok(chain) => chain,
        Err(e) => {
            eprintln!("sparkle-chain: {e}");
            return ExitCode::from(2);
        }
    };
    chain.run_as_program()
}
