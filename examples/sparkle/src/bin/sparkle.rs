//! `sparkle [--embodiment-file FILE]`: the Sparkle proxy on stdio; run it in a chain,
//! `conductor agent sparkle "my-agent --acp"`. See the `sparkle` crate docs.
//!
//! The same source builds as a WebAssembly component (`cargo build --target wasm32-wasip2
//! --bin sparkle`) that the conductor runs in its own process: `conductor agent
//! wasm:sparkle.wasm "my-agent --acp"` (an embodiment file must then be in a directory its
//! chain-file entry grants it).

use std::process::ExitCode;

use sparkle::{DEFAULT_EMBODIMENT, Sparkle};

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .init();
    let embodiment = match embodiment() {
        Ok(text) => text,
        Err(why) => {
            eprintln!("sparkle: {why}");
            return ExitCode::from(2);
        }
    };
    match sacp::run(sacp::proxy::serve_stdio(Sparkle::new(embodiment))) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sparkle: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The embodiment text: `--embodiment-file FILE`, else `SPARKLE_EMBODIMENT`, else the default.
fn embodiment() -> Result<String, String> {
    let mut args = std::env::args().skip(1);
    match (args.next().as_deref(), args.next(), args.next()) {
        (None, _, _) => {
            Ok(std::env::var("SPARKLE_EMBODIMENT")
                .unwrap_or_else(|_| DEFAULT_EMBODIMENT.to_owned()))
        }
        (Some("--embodiment-file"), Some(path), None) => std::fs::read_to_string(&path)
            .map(|text| text.trim_end().to_owned())
            .map_err(|e| format!("cannot read the embodiment file {path}: {e}")),
        _ => Err("usage: sparkle [--embodiment-file FILE]".to_owned()),
    }
}
