//! The README's main job runs to the end and shows the chain at work.

use std::time::Duration;

#[test]
fn the_chain_demo_runs_the_whole_script() {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_chain-demo"))
        // Find the binaries `cargo test --workspace` built rather than build a second variant.
        .env(sacp_examples::bins::LIKE_TESTS_ENV, "1")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start chain-demo");
    // The demo has its own timeouts; this one only guards against a hang of the demo itself.
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while child.try_wait().expect("poll chain-demo").is_none() {
        assert!(std::time::Instant::now() < deadline, "chain-demo hangs");
        std::thread::sleep(Duration::from_millis(50));
    }
    let output = child.wait_with_output().expect("chain-demo output");
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
