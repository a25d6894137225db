//! The conductor under faults, bad peers and big messages: one test per way it used to fail.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;

use crate::common::*;

/// How long an editor that stops reading its stdout stays away (the behaviour under test):
/// long enough for every pipe and queue of the chain to fill, which takes milliseconds.
const EDITOR_STALL: Duration = Duration::from_secs(1);

/// Polls until no process started by `editor` is left, for up to `limit`.
async fn gone_within(editor: &Editor, limit: Duration) -> Vec<u32> {
    let start = Instant::now();
    loop {
        let left = processes_tagged(&editor.tag);
        if left.is_empty() || start.elapsed() > limit {
            return left;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn components_die_with_a_conductor_killed_with_sigkill() {
    let mut editor = Editor::start(conductor(), &flat_chain(2));
    let session = editor.open_session().await;
    // A prompt in flight: the agent waits, its stdin stays open.
    editor.start_waiting(&session).await;
    let before = processes_tagged(&editor.tag);
    assert_eq!(before.len(), 4, "conductor, 2 proxies, agent: {before:?}");
    editor.child.start_kill().unwrap();
    let left = gone_within(&editor, Duration::from_secs(5)).await;
    assert!(left.is_empty(), "left running after kill -9: {left:?}");
}

#[tokio::test]
async fn an_editor_that_never_reads_stderr_does_not_freeze_the_chain() {
    // Debug logs from the conductor and 20,000 lines from the agent, and nobody reads them.
    let mut editor =
        Editor::start_with(conductor(), &flat_chain(1), &[("RUST_LOG", "debug")], false);
    let session = editor.open_session().await;
    let done = editor.prompt(&session, "noise 20000").await;
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    let done = editor.prompt(&session, "stream 2000").await;
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    editor.close_and_expect_a_clean_exit().await;
}

/// Reads messages until the response to `id`; returns it and how many updates came after it
/// before the conductor's output ended.
async fn answer_and_what_follows(editor: &mut Editor, id: &Value) -> (Value, usize, usize) {
    let mut before = 0;
    let answer = loop {
        let message = editor.next_message().await.expect("the answer comes");
        if message.get("method").is_none() {
            assert_eq!(message["id"], *id, "{message}");
            break message;
        }
        before += 1;
    };
    let mut after = 0;
    while let Some(message) = editor.next_message().await {
        if message["method"] == "session/update" {
            after += 1;
        }
    }
    (answer, before, after)
}

#[tokio::test]
async fn a_slow_editor_still_gets_the_error_of_a_crashed_component_and_nothing_after_it() {
    let mut editor = Editor::start(conductor(), &flat_chain(3));
    let session = editor.open_session().await;
    // The agent streams 20,000 chunks and crashes; the editor reads nothing for a second, so
    // the conductor's output to it is blocked when the chain fails.
    let id = editor.send_prompt(&session, "crash 9 20000").await;
    tokio::time::sleep(EDITOR_STALL).await;
    let (answer, before, after) = answer_and_what_follows(&mut editor, &id).await;
    assert_eq!(
        answer["error"]["message"], "component 4 (\"test-agent\") exited with status 9",
        "{answer}"
    );
    assert_eq!(after, 0, "updates of the failed turn came after its error");
    assert!(before > 0, "the updates before the crash were delivered");
    let (code, _) = editor.exit().await;
    assert_eq!(code, Some(9));
    editor.assert_no_process_left().await;
}

#[tokio::test]
async fn the_last_words_of_a_crashing_agent_arrive_before_its_error() {
    let mut editor = Editor::start(conductor(), &flat_chain(1));
    let session = editor.open_session().await;
    let id = editor.send_prompt(&session, "crash 5").await;
    let (answer, before, _) = answer_and_what_follows(&mut editor, &id).await;
    assert_eq!(before, 1, "the `crashing` chunk: {:#?}", editor.transcript);
    assert_eq!(answer["error"]["data"]["exitCode"], 5, "{answer}");
    assert_eq!(editor.exit().await.0, Some(5));
}

#[tokio::test]
async fn requests_piped_in_before_stdin_closes_are_answered() {
    // `printf '<initialize>\n<session/new>\n' | conductor agent proxy agent`
    let mut editor = Editor::start(conductor(), &flat_chain(1));
    let init = editor
        .send_request("initialize", json!({"protocolVersion": 1}))
        .await;
    let new = editor
        .send_request("session/new", json!({"cwd": "/tmp", "mcpServers": []}))
        .await;
    editor.close_stdin();
    let answers = editor.until_responses(&[init, new]).await;
    assert_eq!(answers[0]["result"]["protocolVersion"], 1, "{answers:?}");
    assert_eq!(
        answers[1]["result"]["sessionId"], "session-1",
        "{answers:?}"
    );
    let (code, _) = editor.exit().await;
    assert_eq!(code, Some(0));
    editor.assert_no_process_left().await;
}

#[tokio::test]
async fn an_editor_that_reuses_an_id_in_flight_is_refused_and_the_first_request_survives() {
    let mut editor = Editor::start(conductor(), &flat_chain(1));
    let session = editor.open_session().await;
    let prompt = |text: &str| {
        json!({"jsonrpc": "2.0", "id": "same", "method": "session/prompt",
               "params": {"sessionId": session, "prompt": [{"type": "text", "text": text}]}})
    };
    editor.send_line(&prompt("wait").to_string()).await;
    // The agent says it waits; then the same id again.
    let waiting = editor.next_message().await.unwrap();
    assert_eq!(waiting["params"]["update"]["content"]["text"], "waiting");
    editor.send_line(&prompt("again").to_string()).await;
    let refused = editor.next_message().await.unwrap();
    assert_eq!(refused["id"], "same");
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    // `$/cancel_request` for the id reaches the first request, which answers.
    editor
        .notify("$/cancel_request", json!({"requestId": "same"}))
        .await;
    let cancelled = editor.next_message().await.unwrap();
    assert_eq!(cancelled["id"], "same");
    assert_eq!(cancelled["error"]["code"], -32800, "{cancelled}");
    let done = editor.prompt(&session, "still works").await;
    assert_eq!(done["result"]["stopReason"], "end_turn");
}

/// The resident memory (`VmRSS`) and its peak (`VmHWM`) of a process, in KiB.
fn rss_kib(pid: u32) -> (u64, u64) {
    use crate::processes::{peak_rss_kib, rss_kib};
    (rss_kib(pid).unwrap_or(0), peak_rss_kib(pid).unwrap_or(0))
}

#[tokio::test]
async fn a_huge_message_costs_at_most_three_times_its_size_and_the_memory_comes_back() {
    const SIZE: usize = 20 * 1024 * 1024;
    let mut editor = Editor::start(conductor(), &flat_chain(1));
    let session = editor.open_session().await;
    editor.prompt(&session, "warm up").await;
    let conductor_pid = editor.pid();
    let (start, _) = rss_kib(conductor_pid);
    let proxy_pid = process_named(&editor.tag, "passthrough-pro").expect("the proxy runs");
    let (proxy_start, _) = rss_kib(proxy_pid);
    // The test agent echoes the prompt's text: 20 MiB goes down, then 20 MiB comes back up.
    let text = "a".repeat(SIZE);
    let done = editor.prompt(&session, &text).await;
    assert_eq!(done["result"]["stopReason"], "end_turn");
    let echoed = editor
        .transcript
        .iter()
        .rev()
        .find(|l| l.contains("agent_message_chunk"))
        .map_or(0, String::len);
    assert!(echoed > SIZE, "the text came back");
    let (now, peak) = rss_kib(conductor_pid);
    let size_kib = (SIZE / 1024) as u64;
    assert!(
        peak <= start + 3 * size_kib,
        "conductor: peak {peak} KiB from {start} KiB for a {size_kib} KiB message"
    );
    assert!(
        now <= start + size_kib / 4,
        "conductor: {now} KiB kept after the message (from {start} KiB)"
    );
    // A proxy forwards it both ways too, within the same bound.
    let (_, proxy_peak) = rss_kib(proxy_pid);
    assert!(
        proxy_peak <= proxy_start + 3 * size_kib,
        "proxy: peak {proxy_peak} KiB from {proxy_start} KiB for a {size_kib} KiB message"
    );
}

#[tokio::test]
async fn a_later_initialize_cannot_switch_a_running_chain_into_proxy_mode() {
    let mut editor = Editor::start(conductor(), &flat_chain(1));
    let session = editor.open_session().await;
    let refused = editor
        .request(
            "initialize",
            json!({"protocolVersion": 1, "_meta": {"proxy": true}}),
        )
        .await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("cannot change its mode"),
        "{refused}"
    );
    let done = editor.prompt(&session, "still an agent").await;
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    editor.close_and_expect_a_clean_exit().await;
}

#[tokio::test]
async fn the_conductor_exits_with_the_status_of_an_agent_killed_by_a_signal() {
    let mut editor = Editor::start(conductor(), &flat_chain(1));
    let session = editor.open_session().await;
    editor.start_waiting(&session).await;
    let agent = process_named(&editor.tag, "test-agent").expect("the agent runs");
    std::process::Command::new("kill")
        .args(["-TERM", &agent.to_string()])
        .status()
        .unwrap();
    let (code, _) = editor.exit().await;
    assert_eq!(code, Some(128 + 15), "as the agent itself would");
}

#[tokio::test]
async fn a_component_run_by_an_interpreter_is_named_after_its_script() {
    let dir = std::env::temp_dir().join(format!("sacp-interpreter-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("my-agent.sh");
    std::fs::write(&script, format!("exec {} \"$@\"\n", quoted(&agent()))).unwrap();
    let args = vec![
        "agent".to_owned(),
        passthrough(),
        format!("sh {}", quoted(&script.to_string_lossy())),
    ];
    let mut editor = Editor::start(conductor(), &args);
    let session = editor.open_session().await;
    let done = editor.prompt(&session, "crash 4").await;
    assert_eq!(
        done["error"]["message"], "component 2 (\"my-agent.sh\") exited with status 4",
        "{done}"
    );
    assert_eq!(done["error"]["data"]["name"], "my-agent.sh");
    let _ = editor.exit().await;
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn a_flood_written_without_reading_answers_is_taken_in_and_answered() {
    // Hostile: 2,000 requests written in one go while the editor reads nothing; then it reads.
    let mut editor = Editor::start(conductor(), &flat_chain(2));
    let session = editor.open_session().await;
    let mut stdin = editor.take_stdin();
    let mut lines = Vec::new();
    for n in 0..2000 {
        let line = json!({"jsonrpc": "2.0", "id": format!("flood-{n}"), "method": "session/prompt",
            "params": {"sessionId": session, "prompt": [{"type": "text", "text": format!("n{n}")}]}});
        lines.extend_from_slice(line.to_string().as_bytes());
        lines.push(b'\n');
    }
    let writer = tokio::spawn(async move {
        stdin.write_all(&lines).await.unwrap();
        stdin
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    let ids: Vec<Value> = (0..2000).map(|n| json!(format!("flood-{n}"))).collect();
    let answers = editor.until_responses(&ids).await;
    assert!(
        answers
            .iter()
            .all(|a| a["result"]["stopReason"] == "end_turn")
    );
    drop(writer.await.unwrap());
    let (code, _) = editor.exit().await;
    assert_eq!(code, Some(0));
}

#[tokio::test]
async fn a_request_answered_by_the_conductor_at_the_eof_grace_is_not_answered_again() {
    // Found by fuzzing: two prompts on one session (the first still waits when the second
    // comes), a cancel, stdin closed. The conductor answers what is left after the EOF grace;
    // the agent's own late answer to the same request must not follow it.
    let args = ["agent", "--eof-grace", "300ms", &agent()].map(str::to_owned);
    let mut editor = Editor::start(conductor(), &args);
    let session = editor.open_session().await;
    let first = editor.start_waiting(&session).await;
    let second = editor.send_prompt(&session, "wait").await;
    editor
        .notify("session/cancel", json!({"sessionId": session}))
        .await;
    editor.close_stdin();
    let mut answers: Vec<Value> = Vec::new();
    while let Some(message) = editor.next_message().await {
        if message.get("method").is_none() {
            answers.push(message);
        }
    }
    for id in [&first, &second] {
        let of_id: Vec<&Value> = answers.iter().filter(|a| a["id"] == *id).collect();
        assert_eq!(of_id.len(), 1, "exactly one answer to {id}: {answers:#?}");
    }
    let (code, _) = editor.exit().await;
    assert_eq!(code, Some(0));
}

#[tokio::test]
async fn a_bad_second_initialize_gets_an_error_and_the_chain_goes_on() {
    // Also found by fuzzing: a second `initialize` the first proxy rightly refuses (its
    // version is no u16) ended the whole chain.
    let args = [
        "agent".to_owned(),
        passthrough(),
        example("prefix-proxy"),
        agent(),
    ];
    let mut editor = Editor::start(conductor(), &args);
    let session = editor.open_session().await;
    let refused = editor
        .request(
            "initialize",
            json!({"protocolVersion": 9007199254740993u64, "clientCapabilities": {}}),
        )
        .await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let answer = editor.prompt(&session, "still here").await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    assert_eq!(said(&editor), ["» still here"]);
    editor.close_and_expect_a_clean_exit().await;
}
