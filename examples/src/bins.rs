//! The workspace's binaries, for the tests, benchmarks and demos that run them as processes.
//!
//! Cargo only tells a package about its own binaries (`CARGO_BIN_EXE_<name>`), and a chain needs
//! binaries of several packages (`conductor`, the example components, `sparkle`). [`built`] asks
//! cargo to build the packages' binaries with the profile of the running executable and returns
//! the directory they are in: the one the running executable was built into.
//!
//! Tests call [`built_like_tests`] instead: it asks for what `cargo test --workspace` builds
//! (every package, binaries and test targets, dev-dependencies on), so cargo resolves the same
//! features, finds everything up to date and builds nothing, instead of a second copy of every
//! dependency with the features of a plain `cargo build` (twice the disk, minutes of CPU). A
//! program that a test starts and that calls [`built`] is handed the test's directory in
//! [`DIR_ENV`] and builds nothing: a cargo run, even one with nothing to do, takes tens of
//! seconds on a machine busy with the rest of the suite, which the test's guard against a
//! hung program must not count.

use std::path::PathBuf;
use std::process::Command;

/// Set in a program's environment to a directory of built binaries (the one
/// [`built_like_tests`] returned), makes its [`built`] return it without building.
pub const DIR_ENV: &str = "SACP_BINS_DIR";

/// Builds the binaries of `packages` (with the running executable's profile) and returns the
/// directory that holds them; with [`DIR_ENV`] set, returns that directory.
pub fn built(packages: &[&str]) -> Result<PathBuf, String> {
    if let Some(dir) = std::env::var_os(DIR_ENV) {
        return Ok(PathBuf::from(dir));
    }
    let mut args = vec!["--bins"];
    for package in packages {
        args.extend(["--package", package]);
    }
    cargo_build(&args, &format!("{packages:?}"))
}

/// Builds what `cargo test --workspace` builds (a no-op after it) and returns the directory that
/// holds the workspace's binaries.
pub fn built_like_tests() -> Result<PathBuf, String> {
    cargo_build(&["--workspace", "--bins", "--tests"], "the workspace")
}

/// The directory of the running executable's profile (`TARGET/PROFILE`): test, bench and
/// example executables live one level down, in `deps` or `examples`.
fn profile_dir() -> Result<PathBuf, String> {
    let exe =
        std::env::current_exe().map_err(|e| format!("cannot find the running executable: {e}"))?;
    let mut dir = exe
        .parent()
        .ok_or("the running executable has no directory")?
        .to_path_buf();
    if dir.ends_with("deps") || dir.ends_with("examples") {
        dir.pop();
    }
    Ok(dir)
}

fn cargo_build(args: &[&str], what: &str) -> Result<PathBuf, String> {
    let dir = profile_dir()?;
    let profile = dir
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or("the target directory has no profile name")?
        .to_owned();
    let mut command = cargo();
    command
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["build", "--quiet"])
        .args(args);
    match profile.as_str() {
        "debug" => {}
        "release" => {
            command.arg("--release");
        }
        other => {
            command.args(["--profile", other]);
        }
    }
    let status = command
        .status()
        .map_err(|e| format!("cannot run cargo to build {what}: {e}"))?;
    if !status.success() {
        return Err(format!("`cargo build` of {what} failed ({status})"));
    }
    Ok(dir)
}

/// The target the examples that build as WebAssembly components are built for.
pub const WASM_TARGET: &str = "wasm32-wasip2";

/// Builds the examples that also build as WebAssembly components (`passthrough-proxy`,
/// `prefix-proxy`, `probe-proxy`, `sparkle`) for [`WASM_TARGET`], with the workspace's
/// `component` profile, and returns the directory that holds them (`NAME.wasm`). An error
/// says why not — the target not installed (`rustup target add wasm32-wasip2`), say.
pub fn components() -> Result<PathBuf, String> {
    let target = profile_dir()?
        .parent()
        .ok_or("the running executable is not in a cargo target directory")?
        .to_path_buf();
    let output = cargo()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "build",
            "--quiet",
            "--profile",
            "component",
            "--target",
            WASM_TARGET,
        ])
        .arg("--target-dir")
        .arg(&target)
        .args([
            "--package",
            "sacp-examples",
            "--bin",
            "passthrough-proxy",
            "--bin",
            "prefix-proxy",
            "--bin",
            "probe-proxy",
        ])
        .args(["--package", "sacp-sparkle", "--bin", "sparkle"])
        .output()
        .map_err(|e| format!("cannot run cargo to build the components: {e}"))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        if stderr.contains("may not be installed") || stderr.contains("can't find crate for `core`")
        {
            return Err(format!(
                "the {WASM_TARGET} target is not installed (`rustup target add {WASM_TARGET}`)"
            ));
        }
        return Err(format!(
            "`cargo build --target {WASM_TARGET}` of the components failed ({}):\n{stderr}",
            output.status
        ));
    }
    Ok(target.join(WASM_TARGET).join("component"))
}

/// A `cargo` command (the one running this program, when cargo started it) with the
/// environment of a shell, not of a program cargo runs: without the variables cargo sets for
/// the crate it runs (`CARGO_MANIFEST_DIR`, `CARGO_PKG_*`, …). Some build scripts track one of
/// them (ring's, `CARGO_MANIFEST_DIR`), so a build started from a test or a bench with them
/// set looks like a change to every later `cargo` run from the shell, and the two rebuild
/// ring, rustls and everything above them in turn.
pub fn cargo() -> Command {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    for (name, _) in std::env::vars_os() {
        let Some(name) = name.to_str() else { continue };
        let set_for_a_crate = name == "OUT_DIR"
            || name.starts_with("CARGO_PKG_")
            || name.starts_with("CARGO_BIN_")
            || matches!(
                name,
                "CARGO_MANIFEST_DIR"
                    | "CARGO_MANIFEST_PATH"
                    | "CARGO_MANIFEST_LINKS"
                    | "CARGO_CRATE_NAME"
                    | "CARGO_PRIMARY_PACKAGE"
                    | "CARGO_TARGET_TMPDIR"
                    | "CARGO_RUSTC_CURRENT_DIR"
            );
        if set_for_a_crate {
            command.env_remove(name);
        }
    }
    command
}
