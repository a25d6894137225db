//! WebAssembly components as chain members (`wasm:`, `wasm = …`): the example proxies built
//! for `wasm32-wasip2` give the TypeScript SDK's editor the turns of their native builds; each
//! component runs in a sandbox of its own, granted what its chain-file entry grants and nothing
//! else; one that computes without end, traps or outgrows its memory fails its chain, never
//! the conductor.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use sacp::jsonrpc::ByteStream;
use sacp::testing::{ScriptedEditor, within};
use serde_json::json;

use crate::across_machines::conductor_listening;
use crate::common::*;
use crate::peers::{missing, ts_remote};
use crate::remote::{remote, ts_editor};

/// The directory of the example components, built on first use (`None`, said, when the
/// `wasm32-wasip2` target is not installed; under `CI` that fails).
fn components() -> Option<PathBuf> {
    static BUILT: Mutex<Option<Option<PathBuf>>> = Mutex::new(None);
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    built
        .get_or_insert_with(|| {
            sacp_examples::bins::components()
                .map_err(|why| missing("WebAssembly components", &why))
                .ok()
        })
        .clone()
}

/// The chain word of the component `name` in `dir`.
fn wasm(dir: &Path, name: &str) -> String {
    format!("wasm:{}", dir.join(format!("{name}.wasm")).display())
}

#[tokio::test]
async fn the_prefix_proxy_and_sparkle_as_components_give_the_turns_of_their_native_builds() {
    let (Some(editor), Some(dir)) = (ts_remote("editor.mjs"), components()) else {
        return;
    };
    let agent = agent();
    let run = |proxy: String| {
        let editor = editor.clone();
        let agent = agent.clone();
        async move { ts_editor(&editor, &["stdio", conductor(), "agent", &proxy, &agent]).await }
    };
    let native = run(format!("{} '>> '", example("prefix-proxy"))).await;
    let component = run(format!("{} '>> '", wasm(&dir, "prefix-proxy"))).await;
    assert_eq!(component, native, "the prefix proxy");
    assert_eq!(
        native[0],
        json!([
            "stream 5",
            "end_turn",
            ">> chunk 1",
            ">> chunk 2",
            ">> chunk 3",
            ">> chunk 4",
            ">> chunk 5"
        ])
    );
    // Sparkle: its embodiment turn calls its MCP tool, bridged to the test agent's MCP client.
    let native = run(example("sparkle")).await;
    let component = run(wasm(&dir, "sparkle")).await;
    assert_eq!(component, native, "Sparkle");
    assert_eq!(native[0][2], "tool: sparkle.embody_sparkle", "{native:?}");
}

/// `conductor agent --chain FILE` (the file's text `chain`), with `sacp::testing`'s editor on
/// its stdio.
async fn chain_of(chain: &str, name: &str) -> (ScriptedEditor, tokio::process::Child, PathBuf) {
    let file = std::env::temp_dir().join(format!("wasm-{}-{name}.toml", std::process::id()));
    std::fs::write(&file, chain).unwrap();
    let trace = file.with_extension("jsonl");
    let mut child = tokio::process::Command::new(conductor())
        .args(["agent", "--chain"])
        .arg(&file)
        .arg("--trace")
        .arg(&trace)
        .env("SACP_PROBE_SECRET", "the conductor's")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the conductor starts");
    let editor = ScriptedEditor::new().connect(ByteStream::new(
        child.stdout.take().unwrap(),
        child.stdin.take().unwrap(),
    ));
    within("initialize", editor.initialize())
        .await
        .expect("the chain initializes");
    (editor, child, file)
}

/// What a prompt's turn said, as one string (its one message, or the error).
async fn said(session: &sacp::testing::Session, prompt: &str) -> String {
    match within(prompt, session.prompt(prompt)).await {
        Ok(turn) => turn.text(),
        Err(e) => format!("error: {e}"),
    }
}

#[tokio::test]
async fn each_component_sees_only_what_its_entry_grants() {
    let Some(dir) = components() else {
        return;
    };
    let scratch = tempdir("grants");
    for (who, secret) in [("a", "alpha"), ("b", "bravo")] {
        std::fs::create_dir_all(scratch.join(who)).unwrap();
        std::fs::write(scratch.join(who).join(format!("{who}.txt")), secret).unwrap();
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let probe = dir.join("probe-proxy.wasm");
    let chain = format!(
        r#"
[[component]]
wasm = "{probe}"
args = ["a"]
dirs = ["{a}:/data"]
env = {{ SACP_PROBE_SECRET = "a's own" }}

[[component]]
wasm = "{probe}"
args = ["b"]
dirs = ["{b}:/data:ro"]

[[component]]
wasm = "{probe}"
args = ["c"]
network = true

[[component]]
command = "{agent}"
"#,
        probe = probe.display(),
        a = scratch.join("a").display(),
        b = scratch.join("b").display(),
        agent = agent(),
    );
    let (editor, child, file) = chain_of(&chain, "grants").await;
    let session = within("session/new", editor.new_session()).await.unwrap();

    // Each sees its own directory at /data, and nothing of the other's.
    assert_eq!(
        said(&session, "probe a read /data/a.txt").await,
        "a read /data/a.txt: alpha"
    );
    assert_eq!(
        said(&session, "probe b read /data/b.txt").await,
        "b read /data/b.txt: bravo"
    );
    assert_eq!(
        said(&session, "probe a list /data").await,
        "a list /data: a.txt"
    );
    assert_eq!(
        said(&session, "probe b list /data").await,
        "b list /data: b.txt"
    );
    // Outside its grant (the other's file by its host path, the system's files): an error,
    // and the chain goes on.
    let outside = scratch.join("b").join("b.txt");
    for (probe, path) in [
        ("a", outside.display().to_string()),
        ("a", "/etc/hostname".to_owned()),
        ("c", "/data/a.txt".to_owned()),
    ] {
        let answer = said(&session, &format!("probe {probe} read {path}")).await;
        assert!(
            answer.starts_with(&format!("{probe} read {path}: error: ")),
            "{answer}"
        );
    }
    // Its environment is its entry's: nothing of the conductor's.
    assert_eq!(
        said(&session, "probe a env SACP_PROBE_SECRET").await,
        "a env SACP_PROBE_SECRET: a's own"
    );
    let b_env = said(&session, "probe b env SACP_PROBE_SECRET").await;
    assert!(
        b_env.starts_with("b env SACP_PROBE_SECRET: error: "),
        "{b_env}"
    );
    // No network unless granted.
    let denied = said(&session, &format!("probe a connect 127.0.0.1:{port}")).await;
    assert!(
        denied.starts_with(&format!("a connect 127.0.0.1:{port}: error: ")),
        "{denied}"
    );
    assert_eq!(
        said(&session, &format!("probe c connect 127.0.0.1:{port}")).await,
        format!("c connect 127.0.0.1:{port}: connected")
    );
    // The trace shows each as a WebAssembly component, with its grants.
    let trace = std::fs::read_to_string(file.with_extension("jsonl")).unwrap();
    let header: serde_json::Value = serde_json::from_str(trace.lines().next().unwrap()).unwrap();
    let grants: Vec<&serde_json::Value> = header["components"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["wasm"])
        .collect();
    assert_eq!(
        grants,
        [
            &json!(format!("{}:/data", scratch.join("a").display())),
            &json!(format!("{}:/data:ro", scratch.join("b").display())),
            &json!("network"),
            &serde_json::Value::Null,
        ],
        "{header}"
    );
    // And the agent behind them all still answers.
    let turn = within("stream 2", session.prompt("stream 2"))
        .await
        .unwrap();
    turn.assert_lines(["message: chunk 1", "message: chunk 2"]);
    drop(listener);
    end(editor, child).await;
    let _ = std::fs::remove_file(file.with_extension("jsonl"));
    let _ = std::fs::remove_file(file);
    let _ = std::fs::remove_dir_all(scratch);
}

async fn end(editor: ScriptedEditor, mut child: tokio::process::Child) {
    editor.connection().close();
    let status = within("the conductor's end", child.wait()).await.unwrap();
    assert!(status.success(), "{status}");
}

fn tempdir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wasm-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[tokio::test]
async fn a_component_that_spins_traps_or_outgrows_its_memory_fails_its_chain_not_the_conductor() {
    let Some(dir) = components() else {
        return;
    };
    let chain = format!(
        r#"
[[component]]
wasm = "{probe}"
args = ["p"]
memory = "32MiB"
busy_timeout = "1s"

[[component]]
command = "{agent}"
"#,
        probe = dir.join("probe-proxy.wasm").display(),
        agent = agent(),
    );
    let file = std::env::temp_dir().join(format!("wasm-{}-limits.toml", std::process::id()));
    std::fs::write(&file, chain).unwrap();
    let server = conductor_listening(&["--chain", file.to_str().unwrap()], &[]).await;
    for (probe, why) in [
        (
            "spin",
            "component 1 (\"probe-proxy\") was stopped: it computed for more than 1s without \
             waiting for input or output (its busy_timeout)",
        ),
        ("trap", "component 1 (\"probe-proxy\") trapped: "),
        (
            "grow 64",
            "component 1 (\"probe-proxy\") was stopped: it tried to grow its memory to ",
        ),
    ] {
        // Each on a connection of its own, whose chain it fails; the next one is served.
        let editor = ScriptedEditor::new().connect(remote(&server.url).await);
        within("initialize", editor.initialize()).await.unwrap();
        let session = within("session/new", editor.new_session()).await.unwrap();
        let fine = within("stream 1", session.prompt("stream 1"))
            .await
            .unwrap();
        fine.assert_lines(["message: chunk 1"]);
        let started = Instant::now();
        let failed = within(probe, session.prompt(format!("probe p {probe}")))
            .await
            .expect_err("the component's end fails the turn");
        let took = started.elapsed();
        assert!(failed.message.starts_with(why), "{probe}: {failed}");
        if probe == "spin" {
            // Its busy_timeout, and the epoch's tick to notice, with room for a busy machine.
            assert!(
                took >= Duration::from_secs(1) && took < Duration::from_secs(4),
                "{took:?}"
            );
        }
    }
    let _ = std::fs::remove_file(file);
}

#[tokio::test]
async fn a_file_that_is_no_component_fails_the_start_with_its_name_and_why() {
    let junk = std::env::temp_dir().join(format!("wasm-{}-junk.wasm", std::process::id()));
    std::fs::write(&junk, "not WebAssembly").unwrap();
    let missing = std::env::temp_dir().join(format!("wasm-{}-missing.wasm", std::process::id()));
    for (path, says) in [
        (
            &junk,
            "is not a WebAssembly component this conductor can run",
        ),
        (&missing, "cannot read"),
    ] {
        let run = tokio::process::Command::new(conductor())
            .args(["agent", &format!("wasm:{}", path.display()), &agent()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .kill_on_drop(true)
            .output();
        let output = within("the conductor's refusal", run).await.unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{stderr}");
        let name = path.file_stem().unwrap().to_string_lossy();
        assert!(
            stderr.contains(&format!("cannot start component 1 (\"{name}\""))
                && stderr.contains(says),
            "{stderr}"
        );
    }
    let _ = std::fs::remove_file(junk);
}
