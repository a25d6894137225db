//! `logging-proxy FILE`: appends a JSON line per message it sees to `FILE`; see
//! `sacp_examples::logger`.

use std::process::ExitCode;

use sacp_examples::logger::Logger;

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    sacp_examples::init_logging();
    let mut args = std::env::args_os().skip(1);
    let (Some(path), None) = (args.next(), args.next()) else {
        eprintln!("usage: logging-proxy FILE");
        return ExitCode::from(2);
    };
    let logger = match Logger::to_file(path.as_ref()) {
        Ok(logger) => logger,
        Err(e) => {
            eprintln!("logging-proxy: cannot open {}: {e}", path.to_string_lossy());
            return ExitCode::from(2);
        }
    };
    match sacp::proxy::serve_stdio(logger).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("logging-proxy: {e}");
            ExitCode::FAILURE
        }
    }
}
