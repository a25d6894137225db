//! `seed-proxy FILE`: every new session starts with the conversation in `FILE` (a JSON array of
//! session updates) as its history; see `sacp_examples::seed`.

use std::process::ExitCode;

use sacp_examples::seed::Seed;

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    sacp_examples::init_logging();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [path] = args.as_slice() else {
        eprintln!("usage: seed-proxy FILE (a JSON array of session updates)");
        return ExitCode::from(2);
    };
    let seed = match std::fs::read_to_string(path)
        .map_err(|e| e.to_string())
        .and_then(|text| Seed::from_json(&text))
    {
        Ok(seed) => seed,
        Err(e) => {
            eprintln!("seed-proxy: {path}: {e}");
            return ExitCode::from(2);
        }
    };
    match sacp::proxy::serve_stdio(seed).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("seed-proxy: {e}");
            ExitCode::FAILURE
        }
    }
}
