//! `--trace FILE`: trace format 2 (see `conductor/docs/conductor.md`, "Traces, and the live viewer").

use serde_json::Value;

use crate::common::*;

#[tokio::test]
async fn the_trace_has_a_line_per_message_per_hop() {
    let dir = std::env::temp_dir().join(format!("sacp-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // And once with direct writes (`SACP_TRACE_DIRECT=1`: around the page cache where the
    // temporary directory's file system allows it, through the cache elsewhere).
    for (payloads, direct) in [(false, false), (true, false), (false, true)] {
        let file = dir.join(format!("trace-{payloads}-{direct}.jsonl"));
        let mut args = vec![
            "agent".to_owned(),
            "--trace".to_owned(),
            file.to_string_lossy().into_owned(),
        ];
        if payloads {
            args.push("--trace-payloads".to_owned());
        }
        args.extend([passthrough(), agent()]);
        let env: &[(&str, &str)] = if direct {
            &[("SACP_TRACE_DIRECT", "1")]
        } else {
            &[]
        };
        let mut editor = Editor::start_with(conductor(), &args, env, true);
        let session = editor.open_session().await;
        editor.prompt(&session, "stream 3").await;
        editor.close_stdin();
        assert_eq!(editor.exit().await.0, Some(0), "{}", editor.stderr());

        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&file).unwrap().permissions().mode();
            assert_eq!(
                mode & 0o777,
                0o600,
                "the trace holds prompts: its owner's only"
            );
        }
        let text = std::fs::read_to_string(&file).unwrap();
        let records: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        // Every line in order, with its times.
        for (seq, r) in records.iter().enumerate() {
            assert_eq!(r["seq"], seq as u64, "{r}");
            for key in ["t", "type"] {
                assert!(r.get(key).is_some(), "{key} missing in {r}");
            }
        }
        // Every line is what `conductor/trace.schema.json` describes: its type's required
        // fields, and no field the schema does not name.
        for r in &records {
            conforms(r);
        }
        // The chain first, then the components' start.
        let chain = &records[0];
        assert_eq!(
            (chain["type"].as_str(), chain["v"].as_u64()),
            (Some("chain"), Some(2))
        );
        assert_eq!(chain["components"][0]["name"], "passthrough-proxy");
        assert_eq!(chain["components"][1]["name"], "test-agent");
        assert!(chain["components"][1]["pid"].as_u64().is_some());
        assert_eq!(records.iter().filter(|r| r["type"] == "spawn").count(), 2);
        let messages: Vec<&Value> = records.iter().filter(|r| r["type"] == "message").collect();
        // initialize, session/new and the prompt cross 2 hops each way (4 messages each); each
        // of the 3 updates crosses 2 hops.
        assert_eq!(messages.len(), 3 * 4 + 3 * 2, "{text}");
        for r in &messages {
            for key in [
                "from",
                "to",
                "hop",
                "direction",
                "kind",
                "method",
                "size",
                "flow",
            ] {
                assert!(r.get(key).is_some(), "{key} missing in {r}");
            }
            assert_eq!(r.get("payload").is_some(), payloads, "{r}");
        }
        let first = messages[0];
        assert_eq!(first["from"], "editor");
        assert_eq!(first["to"], "1:passthrough-proxy");
        assert_eq!(first["direction"], "down");
        assert_eq!(first["method"], "initialize");
        // The real method, and the envelope it travelled in.
        let update = messages
            .iter()
            .find(|r| r["from"] == "2:test-agent" && r["kind"] == "notification")
            .unwrap();
        assert_eq!(update["to"], "1:passthrough-proxy");
        assert_eq!(update["method"], "session/update");
        assert_eq!(update["via"], "_proxy/successor/notification");
        assert_eq!(update["session"], session.as_str());
        assert_eq!(update["direction"], "up");
        // Its other hop is the same flow.
        let hops: Vec<&&Value> = messages
            .iter()
            .filter(|r| r["flow"] == update["flow"])
            .collect();
        assert_eq!(hops.len(), 2, "{hops:?}");
        assert_eq!(hops[1]["to"], "editor");
        let answer = messages.iter().rev().find(|r| r["to"] == "editor").unwrap();
        assert_eq!(answer["kind"], "response");
        assert_eq!(answer["method"], "session/prompt");
        // Every request has its response on its hop, with the same pair and flow.
        for request in messages.iter().filter(|r| r["kind"] == "request") {
            let response = messages
                .iter()
                .find(|r| r["kind"] == "response" && r["pair"] == request["pair"])
                .unwrap_or_else(|| panic!("no response paired with {request}"));
            assert_eq!(response["flow"], request["flow"]);
            assert_eq!(response["hop"], request["hop"]);
        }
        // The prompt's two hops are one flow.
        let prompts: Vec<&&Value> = messages
            .iter()
            .filter(|r| r["method"] == "session/prompt" && r["kind"] == "request")
            .collect();
        assert_eq!(prompts[0]["flow"], prompts[1]["flow"]);
        // Both components exited, at the end, not crashed.
        let exits: Vec<&Value> = records.iter().filter(|r| r["type"] == "exit").collect();
        assert_eq!(exits.len(), 2, "{text}");
        assert!(exits.iter().all(|e| e["crash"] == false), "{exits:?}");

        // `conductor trace summarise`.
        let summary = summarise(&file);
        assert!(summary.contains("1. passthrough-proxy"), "{summary}");
        assert!(summary.contains("18 messages"), "{summary}");
        assert!(
            summary.contains("editor → 1:passthrough-proxy: 3 request"),
            "{summary}"
        );
        assert!(summary.contains("slowest requests:"), "{summary}");
        assert!(summary.contains("session/prompt"), "{summary}");
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// What `conductor trace summarise FILE` prints.
/// A trace into a named pipe (a live reader such as `jq`): the lines stream through it, and
/// the pipe keeps its mode (only a regular file is made its owner's).
#[tokio::test]
async fn a_trace_into_a_pipe_streams_and_leaves_the_pipes_mode_alone() {
    use std::os::unix::fs::PermissionsExt;
    let dir = std::env::temp_dir().join(format!("sacp-trace-pipe-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pipe = dir.join("trace.pipe");
    let made = std::process::Command::new("mkfifo")
        .arg("-m")
        .arg("644")
        .arg(&pipe)
        .status()
        .expect("mkfifo runs");
    assert!(made.success(), "mkfifo {}", pipe.display());
    // The reader opens the pipe first: the conductor's open waits for one.
    let (read_tx, read_rx) = std::sync::mpsc::channel();
    let reader_path = pipe.clone();
    std::thread::spawn(move || {
        let _ = read_tx.send(std::fs::read_to_string(&reader_path));
    });
    let mut editor = Editor::start(conductor(), &traced_chain(&pipe));
    let session = editor.open_session().await;
    editor.prompt(&session, "stream 3").await;
    editor.close_stdin();
    assert_eq!(editor.exit().await.0, Some(0), "{}", editor.stderr());
    let text = read_rx
        .recv_timeout(PATIENCE)
        .expect("the pipe's reader got to the end")
        .expect("the pipe reads");
    let records: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records[0]["type"], "chain", "{text}");
    let updates = records
        .iter()
        .filter(|r| r["method"] == "session/update" && r["hop"] == 1)
        .count();
    assert_eq!(updates, 3, "{text}");
    let mode = std::fs::metadata(&pipe).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o644, "the pipe's mode was changed");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A trace into a pipe nobody reads (a `jq` that hangs, a full disk): the chain does not wait
/// for it. The turn completes with the pipe full, and the trace, once read, says where lines
/// were dropped and how many.
#[tokio::test]
async fn a_trace_nobody_reads_drops_lines_and_says_so_and_the_chain_goes_on() {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = std::env::temp_dir().join(format!("sacp-trace-stalled-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pipe = dir.join("trace.pipe");
    let made = std::process::Command::new("mkfifo")
        .arg(&pipe)
        .status()
        .expect("mkfifo runs");
    assert!(made.success(), "mkfifo {}", pipe.display());
    // A reader that never reads (until the turn is done): opened without waiting for a writer.
    let stalled = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&pipe)
        .expect("open the pipe's read end");
    let mut editor = Editor::start(conductor(), &traced_chain(&pipe));
    let session = editor.open_session().await;
    // Two lines an update (one a hop): far more than the pipe, the writer's buffer and the
    // queue to it hold. Without dropping, the loop would wait for the reader for good.
    let id = editor.send_prompt(&session, "stream 20000").await;
    expect_stream(&mut editor, &id, 20000, "").await;
    // Now read it all, and let the chain end.
    let reader = std::thread::spawn(move || {
        use std::io::Read;
        let mut stalled = stalled;
        let mut text = Vec::new();
        let mut chunk = vec![0; 64 * 1024];
        loop {
            match stalled.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => text.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                Err(e) => panic!("read the pipe: {e}"),
            }
        }
        String::from_utf8(text).expect("the trace is UTF-8")
    });
    editor.close_stdin();
    assert_eq!(editor.exit().await.0, Some(0), "{}", editor.stderr());
    let text = reader.join().expect("the reader");
    let records: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    for (seq, r) in records.iter().enumerate() {
        assert_eq!(
            r["seq"], seq as u64,
            "the file's lines are numbered without gaps"
        );
        conforms(r);
    }
    let dropped: u64 = records
        .iter()
        .filter(|r| r["type"] == "dropped")
        .map(|r| r["lines"].as_u64().expect("a count"))
        .sum();
    let hop_lines = records
        .iter()
        .filter(|r| r["method"] == "session/update")
        .count() as u64;
    assert!(dropped > 0, "the file says lines were dropped");
    // Every update's two hop lines are in the file or counted as dropped.
    assert!(
        hop_lines + dropped >= 2 * 20000,
        "{hop_lines} update lines written, {dropped} dropped"
    );
    // The summary says so too.
    let copy = dir.join("trace.jsonl");
    std::fs::write(&copy, &text).unwrap();
    let summary = summarise(&copy);
    assert!(
        summary.contains(&format!("{dropped} lines dropped")),
        "{summary}"
    );
    assert!(
        editor.stderr().contains("lines were dropped"),
        "the log says so: {}",
        editor.stderr()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `conductor agent --trace FILE passthrough-proxy test-agent`'s arguments.
fn traced_chain(file: &std::path::Path) -> Vec<String> {
    vec![
        "agent".to_owned(),
        "--trace".to_owned(),
        file.to_string_lossy().into_owned(),
        passthrough(),
        agent(),
    ]
}

fn summarise(file: &std::path::Path) -> String {
    let out = std::process::Command::new(conductor())
        .args(["trace", "summarise"])
        .arg(file)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Checks `record` against `conductor/trace.schema.json`: the branch of its `type`, its
/// required fields, and only the fields the schema names.
pub(crate) fn conforms(record: &Value) {
    static SCHEMA: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    let schema = SCHEMA.get_or_init(|| {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/trace.schema.json");
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    });
    let kind = &record["type"];
    let branch = schema["oneOf"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| &b["properties"]["type"]["const"] == kind)
        .unwrap_or_else(|| panic!("the schema has no type {kind}"));
    for required in schema["required"]
        .as_array()
        .unwrap()
        .iter()
        .chain(branch["required"].as_array().unwrap())
    {
        let key = required.as_str().unwrap();
        assert!(record.get(key).is_some(), "{key} missing in {record}");
    }
    for key in record.as_object().unwrap().keys() {
        assert!(
            schema["properties"].get(key).is_some() || branch["properties"].get(key).is_some(),
            "{key} is not in the schema: {record}"
        );
    }
}

#[tokio::test]
async fn a_crash_and_its_stderr_are_in_the_trace() {
    let file = std::env::temp_dir().join(format!("sacp-trace-crash-{}.jsonl", std::process::id()));
    let mut editor = Editor::start(conductor(), &traced_chain(&file));
    let session = editor.open_session().await;
    editor.prompt(&session, "crash 3").await;
    editor.exit().await;
    let text = std::fs::read_to_string(&file).unwrap();
    let records: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let exit = records
        .iter()
        .find(|r| r["type"] == "exit" && r["component"] == 2)
        .unwrap_or_else(|| panic!("no exit of the agent: {text}"));
    assert_eq!(exit["status"], "exited with status 3");
    assert_eq!(exit["code"], 3);
    assert_eq!(exit["crash"], true);
    assert!(
        records.iter().any(|r| r["type"] == "stderr"
            && r["component"] == 2
            && r["line"].as_str().unwrap().contains("crashing on purpose")),
        "{text}"
    );
    let summary = summarise(&file);
    assert!(
        summary.contains("2 (test-agent) exited with status 3 — crashed"),
        "{summary}"
    );
    let _ = std::fs::remove_file(file);
}
