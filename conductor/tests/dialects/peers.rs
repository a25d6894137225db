//! The other SDKs' crates these tests run: built by cargo from the registry on first use.

use std::path::PathBuf;
use std::sync::Mutex;

/// A proxy written with another SDK (`conductor/tests/peers/NAME`, a crate of its own with its
/// lock file), built by cargo into `target/peers` on first use. `None`, said on stderr, when it
/// cannot be built here (no registry, say) — except under CI, where that fails the test.
pub(crate) fn peer(name: &str) -> Option<String> {
    static BUILT: Mutex<Vec<(String, Option<String>)>> = Mutex::new(Vec::new());
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, path)) = built.iter().find(|(n, _)| n == name) {
        return path.clone();
    }
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/peers")
        .join(name)
        .join("Cargo.toml");
    let target = peers_dir();
    let mut command = cargo();
    command
        .args(["build", "--quiet", "--locked", "--manifest-path"])
        .arg(&manifest)
        .arg("--target-dir")
        .arg(&target);
    let path = run_cargo(command, name).map(|()| target.join("debug").join(name));
    let path = path.map(|p| p.to_string_lossy().into_owned());
    built.push((name.to_owned(), path.clone()));
    path
}

/// Another project's published binary crate, `cargo install`ed (a debug build, with its own
/// lock file) into `target/peers/install` on first use; the path of its binary `bin`. `None`
/// as for [`peer`].
pub(crate) fn installed(krate: &str, version: &str, bin: &str) -> Option<String> {
    static INSTALLING: Mutex<()> = Mutex::new(());
    let _one_at_a_time = INSTALLING.lock().unwrap_or_else(|e| e.into_inner());
    let root = peers_dir().join("install");
    let mut command = cargo();
    command
        .args(["install", "--quiet", "--locked", "--debug"])
        .arg(format!("{krate}@{version}"))
        .arg("--root")
        .arg(&root)
        .arg("--target-dir")
        .arg(peers_dir());
    run_cargo(command, krate)?;
    Some(root.join("bin").join(bin).to_string_lossy().into_owned())
}

/// `target/peers`, beside this test's own `target/debug`.
fn peers_dir() -> PathBuf {
    // `target/debug/deps/<test>-…` → `target`.
    let exe = std::env::current_exe().expect("the test's own path");
    exe.ancestors()
        .nth(3)
        .expect("a target directory")
        .join("peers")
}

fn cargo() -> std::process::Command {
    let mut command = sacp_examples::bins::cargo();
    command.env_remove("RUSTFLAGS");
    // No debug info: the peers' target directory is 3.5 GB with it and a third of that
    // without, and a full disk fails every test that needs a peer.
    command
        .env("CARGO_PROFILE_DEV_DEBUG", "false")
        .env("CARGO_INCREMENTAL", "0");
    command
}

/// Runs a cargo build of a peer: `None` (said on stderr) when it fails, except under CI.
fn run_cargo(mut command: std::process::Command, what: &str) -> Option<()> {
    let output = command.output().expect("cargo runs");
    if output.status.success() {
        return Some(());
    }
    let why = String::from_utf8_lossy(&output.stderr);
    assert!(
        std::env::var_os("CI").is_none(),
        "cannot build the peer {what}:\n{why}"
    );
    eprintln!("skipped: cannot build the peer {what} here (it needs the crate registry):\n{why}");
    None
}

/// The ACP agent on the official TypeScript SDK (`tests/peers/ts-rfd-agent/agent.mjs`), its
/// packages installed with `npm ci` into `target/peers/ts-rfd-agent` on first use: the command
/// line that runs it. `None`, said on stderr, where Node.js 20+ and npm are not there (a
/// machine with only Rust) or the npm registry cannot be reached.
pub(crate) fn ts_agent() -> Option<String> {
    ts_peer("agent.mjs")
}

/// The ACP editor on the official TypeScript SDK (`editor.mjs` beside the agent), as
/// [`ts_agent`].
pub(crate) fn ts_editor() -> Option<String> {
    ts_peer("editor.mjs")
}

/// The ACP v2 agent on the official TypeScript SDK's `/experimental/v2` (`agent-v2.mjs`), as
/// [`ts_agent`].
pub(crate) fn ts_v2_agent() -> Option<String> {
    ts_peer("agent-v2.mjs")
}

/// The ACP v2 editor on the official TypeScript SDK's `/experimental/v2` (`editor-v2.mjs`),
/// as [`ts_agent`].
pub(crate) fn ts_v2_editor() -> Option<String> {
    ts_peer("editor-v2.mjs")
}

/// The ACP editor on the official TypeScript SDK's `/unstable` entry (`editor-unstable.mjs`),
/// which forks a session and answers an elicitation, as [`ts_agent`].
pub(crate) fn ts_unstable_editor() -> Option<String> {
    ts_peer("editor-unstable.mjs")
}

/// The ACP editor on the official TypeScript SDK that watches what arrives between turns
/// (`editor-between-turns.mjs`), as [`ts_agent`].
pub(crate) fn ts_between_turns_editor() -> Option<String> {
    ts_peer("editor-between-turns.mjs")
}

/// Says why a peer cannot run here: on stderr, or, under `CI`, by failing the test (CI
/// installs every peer, so a missing one there is a broken set-up, not a skip).
pub(crate) fn missing(peer: &str, why: &str) {
    assert!(
        std::env::var_os("CI").is_none(),
        "{peer} cannot run here: {why}"
    );
    eprintln!("skipped: {peer} cannot run here: {why}");
}

fn ts_peer(script: &str) -> Option<String> {
    static READY: Mutex<Option<Option<String>>> = Mutex::new(None);
    let files = [
        "agent.mjs",
        "editor.mjs",
        "agent-v2.mjs",
        "editor-v2.mjs",
        "editor-unstable.mjs",
        "editor-between-turns.mjs",
    ];
    npm_peer(&READY, "ts-rfd-agent", &files, script)
}

/// The TypeScript SDK's remote transports (`tests/peers/ts-remote`, with `ws`): `editor.mjs`
/// (an editor over stdio, Streamable HTTP or WebSocket), `agent.mjs` (a keyword agent on
/// stdio) and `server.mjs` (`AcpServer` hosting it), as [`ts_agent`].
pub(crate) fn ts_remote(script: &str) -> Option<String> {
    static READY: Mutex<Option<Option<String>>> = Mutex::new(None);
    npm_peer(
        &READY,
        "ts-remote",
        &[
            "agent.mjs",
            "editor.mjs",
            "server.mjs",
            "reattach.mjs",
            "attach.mjs",
            "client.mjs",
        ],
        script,
    )
}

/// `node DIR/script` for the npm peer `name` (its `files` and lock file copied into
/// `target/peers/NAME`, `npm ci` run there once).
fn npm_peer(
    ready: &Mutex<Option<Option<String>>>,
    name: &str,
    files: &[&str],
    script: &str,
) -> Option<String> {
    let mut ready = ready.lock().unwrap_or_else(|e| e.into_inner());
    if ready.is_none() {
        let found = install_npm(name, files)
            .map_err(|why| missing("the TypeScript SDK's peers", &why))
            .ok();
        *ready = Some(found);
    }
    let dir = ready.clone().flatten()?;
    Some(format!("node {dir}/{script}"))
}

fn install_npm(name: &str, scripts: &[&str]) -> Result<String, String> {
    let node = std::process::Command::new("node")
        .arg("--version")
        .output()
        .map_err(|e| format!("no `node` ({e})"))?;
    let version = String::from_utf8_lossy(&node.stdout).trim().to_owned();
    let major: u32 = version
        .trim_start_matches('v')
        .split('.')
        .next()
        .and_then(|m| m.parse().ok())
        .unwrap_or(0);
    if major < 20 {
        return Err(format!("Node.js {version}; the SDK needs 20 or later"));
    }
    let source = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/peers")
        .join(name);
    let dir = peers_dir().join(name);
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let mut changed = false;
    for file in ["package.json", "package-lock.json"].iter().chain(scripts) {
        let text = std::fs::read(source.join(file)).map_err(|e| e.to_string())?;
        if std::fs::read(dir.join(file)).ok().as_ref() != Some(&text) {
            std::fs::write(dir.join(file), &text).map_err(|e| e.to_string())?;
            changed |= !file.ends_with(".mjs");
        }
    }
    if changed || !dir.join("node_modules").exists() {
        let output = std::process::Command::new("npm")
            .args(["ci", "--silent", "--no-audit", "--no-fund"])
            .current_dir(&dir)
            .output()
            .map_err(|e| format!("no `npm` ({e})"))?;
        if !output.status.success() {
            return Err(format!(
                "npm ci failed: {}",
                String::from_utf8_lossy(&output.stderr)
            ));
        }
    }
    Ok(dir.display().to_string())
}

/// The ACP v1 editor on the official Python SDK (`tests/peers/py-editor/editor.py`), its
/// package installed with pip into a venv in `target/peers/py-editor` on first use: the
/// command line that runs it. `None`, said on stderr, where Python 3.10+ with `venv` is not
/// there or PyPI cannot be reached.
pub(crate) fn py_editor() -> Option<String> {
    static READY: Mutex<Option<Option<String>>> = Mutex::new(None);
    let mut ready = READY.lock().unwrap_or_else(|e| e.into_inner());
    if ready.is_none() {
        let found = install_py_editor()
            .map_err(|why| missing("the Python SDK's editor", &why))
            .ok();
        *ready = Some(found);
    }
    ready.clone().flatten()
}

fn install_py_editor() -> Result<String, String> {
    // The venv's interpreter would run without `python3` on `PATH`; the promise is Python
    // 3.10+ on this machine, so that is checked first.
    let version = std::process::Command::new("python3")
        .args([
            "-c",
            "import sys, venv; print(sys.version_info[0], sys.version_info[1])",
        ])
        .output()
        .map_err(|e| format!("no `python3` ({e})"))?;
    let numbers: Vec<u32> = String::from_utf8_lossy(&version.stdout)
        .split_whitespace()
        .filter_map(|n| n.parse().ok())
        .collect();
    if !version.status.success() || numbers.len() != 2 || (numbers[0], numbers[1]) < (3, 10) {
        return Err(format!(
            "python3 {numbers:?} with `venv`; the SDK needs 3.10 or later ({})",
            String::from_utf8_lossy(&version.stderr).trim()
        ));
    }
    let source = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/peers/py-editor");
    let dir = peers_dir().join("py-editor");
    let python = dir.join("venv/bin/python");
    let requirements = std::fs::read(source.join("requirements.txt")).map_err(|e| e.to_string())?;
    let installed = dir.join("requirements.txt");
    if std::fs::read(&installed).ok().as_ref() != Some(&requirements) || !python.exists() {
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let run = |program: &std::path::Path, args: &[&str]| -> Result<(), String> {
            let output = std::process::Command::new(program)
                .args(args)
                .output()
                .map_err(|e| format!("no `{}` ({e})", program.display()))?;
            if output.status.success() {
                return Ok(());
            }
            Err(format!(
                "`{} {}` failed: {}",
                program.display(),
                args.join(" "),
                String::from_utf8_lossy(&output.stderr)
            ))
        };
        let venv = dir.join("venv");
        run("python3".as_ref(), &["-m", "venv", &venv.to_string_lossy()])?;
        let requirements_path = source.join("requirements.txt");
        run(
            &python,
            &[
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "-r",
                &requirements_path.to_string_lossy(),
            ],
        )?;
        std::fs::write(&installed, &requirements).map_err(|e| e.to_string())?;
    }
    Ok(format!(
        "{} {}",
        python.display(),
        source.join("editor.py").display()
    ))
}

/// Every peer of another language is here: each a test of its own, so that a missing one fails
/// CI by name (and says it skips elsewhere).
#[test]
fn the_typescript_sdk_peers_are_here() {
    if let Some(command) = ts_agent() {
        assert!(command.starts_with("node "), "{command}");
    }
}

#[test]
fn the_python_sdk_peer_is_here() {
    if let Some(command) = py_editor() {
        assert!(command.contains("venv/bin/python"), "{command}");
    }
}

/// What the two tests above do where Node.js or Python is missing: they fail under `CI` with
/// the reason, and say they skip elsewhere. Runs this test binary again, on a `PATH` without
/// either.
#[test]
fn a_missing_peer_fails_under_ci_and_skips_elsewhere() {
    let empty = std::env::temp_dir().join(format!("sacp-no-peers-{}", std::process::id()));
    std::fs::create_dir_all(&empty).expect("an empty directory");
    let exe = std::env::current_exe().expect("the test's own path");
    for (test, missing) in [
        ("peers::the_typescript_sdk_peers_are_here", "no `node`"),
        ("peers::the_python_sdk_peer_is_here", "no `python3`"),
    ] {
        for ci in [true, false] {
            let mut command = std::process::Command::new(&exe);
            command
                .args(["--exact", test, "--test-threads", "1", "--nocapture"])
                .env("PATH", &empty)
                .env_remove("CI");
            if ci {
                command.env("CI", "1");
            }
            let output = command.output().expect("the test binary runs again");
            let printed = format!(
                "{}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
            assert!(
                printed.contains("1 passed") || printed.contains("1 failed"),
                "{test} did not run:\n{printed}"
            );
            assert!(
                printed.contains(missing),
                "{test} does not say {missing:?}:\n{printed}"
            );
            if ci {
                assert!(
                    !output.status.success(),
                    "{test} passed under CI without its peer:\n{printed}"
                );
            } else {
                assert!(
                    output.status.success() && printed.contains("skipped"),
                    "{test} did not skip:\n{printed}"
                );
            }
        }
    }
    let _ = std::fs::remove_dir(&empty);
}
