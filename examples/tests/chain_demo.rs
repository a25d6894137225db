//! The README's main job runs to the end and shows the chain at work.

use std::time::Duration;

#[test]
fn the_chain_demo_runs_the_whole_script() {
    // The binaries `cargo test --workspace` built (a cargo run with nothing to do, before the
    // guard below starts: on a machine busy with the suite it takes tens of seconds).
    let bins = sacp_examples::bins::built_like_tests().expect("build the binaries");
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_chain-demo"))
        .env(sacp_examples::bins::DIR_ENV, &bins)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start chain-demo");
    let pid = child.id();
    // Both pipes are read to the end while the demo runs (a demo that writes more than a pipe
    // holds must not stall on a reader that waits for its exit).
    let (done, output) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(child.wait_with_output());
    });
    // The demo has its own timeouts; this one only guards against a hang of the demo itself.
    let output = match output.recv_timeout(Duration::from_secs(120)) {
        Ok(output) => output.expect("chain-demo output"),
        Err(_) => {
            let _ = std::process::Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
            panic!("chain-demo hangs");
        }
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    for line in [
        "agent calls the tool sparkle.embody_sparkle",
        "agent thinks \"[sparkle] sparkle.embody_sparkle: You are Sparkle",
        "(through the conductor's stdio MCP bridge)",
        "agent says \"Hello! Who are you?\"",
        "agent calls the tool sparkle.save_insight",
        r#"agent says "sparkle.save_insight: {\"insights\":1} [over stdio; 0 progress]""#,
        r#"agent says "sparkle.list_insights: {\"insights\":[{\"topic\":\"chains\",\"insight\":\"proxies compose\""#,
        "agent asks permission to \"write a file\"; editor allows",
        "agent says \"permission: allow\"",
        "conductor exited: exit status: 0",
    ] {
        assert!(
            stdout.contains(line),
            "missing {line:?} in\n{stdout}\n{stderr}"
        );
    }
}
