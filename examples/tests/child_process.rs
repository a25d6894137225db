//! The JSON-RPC core over real pipes to a child process: the `jsonrpc-demo` binary that cargo
//! built for this test, run as `jsonrpc-demo agent`.

use std::process::Stdio;
use std::sync::Arc;

use sacp::jsonrpc::{ByteStream, Connection, Methods};
use sacp_examples::demo::{self, Confirm, Confirmed, Prompt, Shout, Transcript};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};
use tokio::task::JoinSet;

use sacp::testing::within;

fn spawn_agent() -> Child {
    Command::new(env!("CARGO_BIN_EXE_jsonrpc-demo"))
        .arg("agent")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start jsonrpc-demo agent")
}

fn connect(child: &mut Child, handler: Methods) -> Connection {
    let transport = ByteStream::new(child.stdout.take().unwrap(), child.stdin.take().unwrap());
    Connection::builder()
        .name("demo agent")
        .spawn(transport, handler)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_response_notifications_and_concurrency_both_ways_over_pipes() {
    let mut child = spawn_agent();
    let transcript: Transcript = Arc::default();
    let agent = connect(&mut child, demo::client(transcript.clone(), true));

    // One request: the agent's handler asks us back before answering.
    let done = within(
        "a prompt",
        agent.request(Prompt {
            text: "one two three".into(),
        }),
    )
    .await
    .unwrap();
    assert_eq!((done.stop_reason.as_str(), done.chunks), ("end_turn", 3));
    assert_eq!(
        demo::take(&transcript),
        [
            "agent asks: May I echo 3 words?",
            "chunk: one",
            "chunk: two",
            "chunk: three"
        ]
    );

    // A notification each way.
    within("the shout", agent.notify(Shout { text: "hey".into() }))
        .await
        .unwrap();
    within(
        "a request after the shout",
        agent.request(Prompt {
            text: String::new(),
        }),
    )
    .await
    .unwrap();
    assert!(demo::take(&transcript).contains(&"chunk: HEY".to_owned()));

    // 64 prompts in flight at once; each makes the agent send us a request while we wait.
    let mut set = JoinSet::new();
    for i in 0..64u32 {
        let agent = agent.clone();
        let text = (0..=i % 7)
            .map(|w| format!("p{i}w{w}"))
            .collect::<Vec<_>>()
            .join(" ");
        set.spawn(async move { (i, agent.request(Prompt { text }).await) });
    }
    let mut answered = 0;
    while let Some(joined) = within("64 concurrent prompts", set.join_next()).await {
        let (i, result) = joined.unwrap();
        assert_eq!(result.unwrap().chunks, i % 7 + 1);
        answered += 1;
    }
    assert_eq!(answered, 64);
    let lines = demo::take(&transcript);
    assert_eq!(
        lines.iter().filter(|l| l.starts_with("agent asks")).count(),
        64
    );
    assert_eq!(
        lines.iter().filter(|l| l.starts_with("chunk")).count(),
        (0..64).map(|i| i % 7 + 1).sum::<u32>() as usize
    );

    // Closing our side ends the child cleanly.
    agent.close();
    within("the connection to end", agent.closed())
        .await
        .unwrap();
    let status = within("the child to exit", child.wait()).await.unwrap();
    assert!(status.success(), "{status}");
}

#[tokio::test]
async fn a_child_that_dies_fails_the_pending_requests_promptly() {
    let mut child = spawn_agent();
    // A client that never answers the agent's question, so the prompt stays pending.
    let asked = Arc::new(tokio::sync::Notify::new());
    let notify = asked.clone();
    let handler = Methods::new().on_request(move |_: Confirm, _cx| {
        let asked = notify.clone();
        async move {
            asked.notify_one();
            std::future::pending::<()>().await;
            Ok(Confirmed { approved: true })
        }
    });
    let agent = connect(&mut child, handler);
    let pending: Vec<_> = (0..5)
        .map(|_| agent.request(Prompt { text: "x".into() }))
        .collect();
    within("the agent's question", asked.notified()).await;

    child.start_kill().unwrap();
    for p in pending {
        let err = within("the pending prompt", p).await.unwrap_err();
        assert!(err.is_peer_closed(), "{err}");
        assert!(
            err.message.contains("demo agent"),
            "the error names the peer: {err}"
        );
    }
    within("the child to be reaped", child.wait())
        .await
        .unwrap();
}

#[tokio::test]
async fn garbage_on_the_pipe_is_answered_and_the_child_keeps_serving() {
    let mut child = spawn_agent();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut next = async || -> serde_json::Value {
        let line = within("a line from the child", lines.next_line())
            .await
            .unwrap()
            .unwrap();
        serde_json::from_str(&line).unwrap()
    };
    stdin.write_all(b"this is not json\n").await.unwrap();
    let answer = next().await;
    assert_eq!(
        (answer["id"].clone(), answer["error"]["code"].clone()),
        (serde_json::Value::Null, serde_json::json!(-32700))
    );
    stdin
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"nope\"}\n")
        .await
        .unwrap();
    assert_eq!(next().await["error"]["code"], -32601);
    stdin
        .write_all(
            b"{\"jsonrpc\":\"2.0\",\"method\":\"demo/shout\",\"params\":{\"text\":\"ok\"}}\n",
        )
        .await
        .unwrap();
    assert_eq!(
        next().await,
        serde_json::json!({"jsonrpc":"2.0","method":"demo/chunk","params":{"text":"OK"}})
    );
    drop(stdin);
    assert!(
        within("the child to exit", child.wait())
            .await
            .unwrap()
            .success()
    );
}

#[tokio::test]
async fn the_demo_runs_to_completion() {
    let out = within(
        "the demo",
        Command::new(env!("CARGO_BIN_EXE_jsonrpc-demo"))
            .kill_on_drop(true)
            .output(),
    )
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for expected in [
        "== in-process, over the channel transport ==",
        "== to a child process, over its stdin/stdout ==",
        "client <- chunk: NOTIFICATIONS GO BOTH WAYS",
        "(child exited: exit status: 0)",
    ] {
        assert!(
            stdout.contains(expected),
            "missing {expected:?} in:\n{stdout}"
        );
    }
    assert_eq!(
        stdout.matches("stop_reason=end_turn chunks=4").count(),
        4,
        "{stdout}"
    );
}
