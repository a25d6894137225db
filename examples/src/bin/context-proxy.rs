//! `context-proxy TEXT` or `context-proxy --file FILE`: puts `TEXT` (or the file's contents) in
//! front of every prompt; see `sacp_examples::context`.

use std::process::ExitCode;

use sacp_examples::context::Context;

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    sacp_examples::init_logging();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let text = match args.as_slice() {
        [flag, path] if flag == "--file" => match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) => {
                eprintln!("context-proxy: cannot read {path}: {e}");
                return ExitCode::from(2);
            }
        },
        [text] if !text.starts_with("--") => text.clone(),
        _ => {
            eprintln!("usage: context-proxy TEXT | context-proxy --file FILE");
            return ExitCode::from(2);
        }
    };
    match sacp::proxy::serve_stdio(Context { text }).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("context-proxy: {e}");
            ExitCode::FAILURE
        }
    }
}
