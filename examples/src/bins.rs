//! The workspace's binaries, for the tests, benchmarks and demos that run them as processes.
//!
//! Cargo only tells a package about its own binaries (`CARGO_BIN_EXE_<name>`), and a chain needs
//! binaries of two packages (`conductor` and the example components). [`built`] asks cargo to
//! build the packages' binaries with the profile of the running executable (a no-op when they
//! are up to date, as they are after `cargo test --workspace`), and returns the directory they
//! are in: the one the running executable was built into.

use std::path::PathBuf;
use std::process::Command;

/// Builds the binaries of `packages` (with the running executable's profile) and returns the
/// directory that holds them.
pub fn built(packages: &[&str]) -> Result<PathBuf, String> {
    let exe =
        std::env::current_exe().map_err(|e| format!("cannot find the running executable: {e}"))?;
    let mut dir = exe
        .parent()
        .ok_or("the running executable has no directory")?
        .to_path_buf();
    if dir.ends_with("deps") || dir.ends_with("examples") {
        // Test, bench and example executables live one level down.
        dir.pop();
    }
    let profile = dir
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or("the target directory has no profile name")?
        .to_owned();
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    command
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["build", "--quiet", "--bins"]);
    match profile.as_str() {
        "debug" => {}
        "release" => {
            command.arg("--release");
        }
        other => {
            command.args(["--profile", other]);
        }
    }
    for package in packages {
        command.args(["--package", package]);
    }
    let status = command
        .status()
        .map_err(|e| format!("cannot run cargo to build {packages:?}: {e}"))?;
    if !status.success() {
        return Err(format!("`cargo build` of {packages:?} failed ({status})"));
    }
    Ok(dir)
}
