//! `conductor`: see `conductor --help`.

fn main() -> std::process::ExitCode {
    sacp_conductor::cli::main()
}
