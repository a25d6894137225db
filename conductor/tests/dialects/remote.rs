//! ACP over the network with the official SDKs' remote transports as peers (see `sacp::remote`): the
//! TypeScript SDK 2.4's HTTP and WebSocket clients and its `AcpServer`, the official Rust
//! SDK's `agent-client-protocol-http` 5.0 client and server, each against ours — the test
//! agent served with `--listen`, and `sacp`'s `Remote` transport under a scripted editor. Every
//! turn over the network is compared with the same turn over stdio.

use std::process::Stdio;

use sacp::jsonrpc::ByteStream;
use sacp::remote::Remote;
use sacp::testing::{PATIENCE, ScriptedEditor, within};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::common::*;
use crate::peers::{peer, ts_remote};

/// The token every server of these tests requires.
pub(crate) const TOKEN: &str = "n3twork-t0ken";

/// A server process that printed its URL as its first line of stdout (killed when dropped).
pub(crate) struct Listening {
    pub(crate) child: Child,
    pub(crate) url: String,
    /// What it wrote on stderr (its last lines), echoed to the test's own output.
    pub(crate) log: Log,
}

/// A process's stderr as it comes: its last [`Log::KEPT`] lines.
#[derive(Debug, Clone, Default)]
pub(crate) struct Log(std::sync::Arc<std::sync::Mutex<std::collections::VecDeque<String>>>);

impl Log {
    const KEPT: usize = 20_000;

    /// Reads `stderr` into the log until it ends, echoing each line (shown with a failing
    /// test's output).
    fn read(&self, stderr: tokio::process::ChildStderr) {
        let log = self.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                eprintln!("{line}");
                let mut kept = log.0.lock().unwrap();
                if kept.len() == Self::KEPT {
                    kept.pop_front();
                }
                kept.push_back(line);
            }
        });
    }

    /// The lines that contain `text`.
    pub(crate) fn lines_with(&self, text: &str) -> Vec<String> {
        let kept = self.0.lock().unwrap();
        kept.iter().filter(|l| l.contains(text)).cloned().collect()
    }

    /// Waits until a line contains `text`; that line.
    pub(crate) async fn until(&self, text: &str) -> String {
        until(&format!("{text:?} in the log"), PATIENCE, || {
            self.lines_with(text).pop().ok_or("not yet")
        })
        .await
    }
}

impl Listening {
    pub(crate) async fn start(command: &str, args: &[&str]) -> Listening {
        Listening::start_in(command, args, &[]).await
    }

    /// `SIGKILL`, and waits for its end: no grace, nothing said.
    pub(crate) async fn kill(&mut self) {
        self.child.start_kill().unwrap();
        within("the server's end", self.child.wait()).await.unwrap();
    }

    /// [`Listening::start`] with `env` besides.
    pub(crate) async fn start_in(
        command: &str,
        args: &[&str],
        env: &[(&str, &std::path::Path)],
    ) -> Listening {
        let mut words = command.split_whitespace();
        let mut child = Command::new(words.next().unwrap())
            .args(words)
            .args(args)
            .envs(env.iter().copied())
            .env("ACP_TOKEN", TOKEN)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {command}: {e}"));
        let log = Log::default();
        log.read(child.stderr.take().unwrap());
        let stdout = child.stdout.take().unwrap();
        let mut lines = BufReader::new(stdout).lines();
        let url = within(&format!("{command}'s URL"), lines.next_line())
            .await
            .unwrap()
            .unwrap_or_else(|| panic!("{command} printed no URL"));
        // Its later output is not read; it must not block on it.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Listening { child, url, log }
    }

    /// The test agent listening, with `args` (and the token).
    async fn test_agent(args: &[&str]) -> Listening {
        let mut all = vec!["--listen", "127.0.0.1:0", "--token", TOKEN];
        all.extend(args);
        Listening::start(&agent(), &all).await
    }

    pub(crate) fn ws(&self) -> String {
        self.url.replacen("http", "ws", 1)
    }
}

/// What the TypeScript SDK's editor (`editor.mjs`) printed: one line per prompt.
pub(crate) async fn ts_editor(editor: &str, args: &[&str]) -> Vec<Value> {
    let mut words = editor.split_whitespace();
    let run = Command::new(words.next().unwrap())
        .args(words)
        .args(args)
        .env("ACP_TOKEN", TOKEN)
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(PATIENCE, run)
        .await
        .expect("the TypeScript editor did not finish in time")
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the TypeScript editor {args:?} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The script of `editor.mjs`, run by `sacp::testing`'s scripted editor over `transport`: the
/// same lines.
async fn our_editor(transport: impl sacp::jsonrpc::Transport) -> Vec<Value> {
    let editor = ScriptedEditor::new()
        .file("/notes.txt", "a note from the editor")
        .connect(transport);
    within("initialize", editor.initialize()).await.unwrap();
    let session = within("session/new", editor.new_session()).await.unwrap();
    let mut lines = Vec::new();
    let said = |turn: &sacp::testing::TurnSeen| -> Vec<Value> {
        turn.lines()
            .iter()
            .filter_map(|l| l.strip_prefix("message: ").map(|t| json!(t)))
            .collect()
    };
    for text in ["stream 5", "permission", "read /notes.txt"] {
        let turn = within(text, session.prompt(text)).await.unwrap();
        let mut line = vec![json!(text), json!(turn.stop_reason())];
        line.extend(said(&turn));
        lines.push(Value::Array(line));
    }
    let waiting = session.prompt("wait");
    let cancel = async {
        session
            .until_update("the turn's start", |u| {
                sacp::testing::line(u) == "message: waiting"
            })
            .await;
        session.cancel().await.unwrap();
    };
    let (turn, ()) = within("the cancelled turn", async {
        tokio::join!(waiting, cancel)
    })
    .await;
    let turn = turn.unwrap();
    let mut line = vec![json!("wait"), json!(turn.stop_reason())];
    line.extend(said(&turn));
    lines.push(Value::Array(line));
    lines
}

/// The lines every agent of these tests gives the script.
pub(crate) fn expected() -> Vec<Value> {
    vec![
        json!([
            "stream 5", "end_turn", "chunk 1", "chunk 2", "chunk 3", "chunk 4", "chunk 5"
        ]),
        json!(["permission", "end_turn", "permission: allow"]),
        json!([
            "read /notes.txt",
            "end_turn",
            "read: a note from the editor"
        ]),
        json!(["wait", "cancelled", "waiting"]),
    ]
}

/// A transport to `url`, with the token.
pub(crate) async fn remote(url: &str) -> sacp::remote::RemoteTransport {
    let connecting = Remote::new(url)
        .header("Authorization", &format!("Bearer {TOKEN}"))
        .unwrap()
        .connect();
    within(&format!("a connection to {url}"), connecting)
        .await
        .unwrap()
}

/// A child's stdio as a transport (killed with the returned child).
fn stdio_of(
    command: &str,
) -> (
    Child,
    ByteStream<tokio::process::ChildStdout, tokio::process::ChildStdin>,
) {
    let mut words = command.split_whitespace();
    let mut child = Command::new(words.next().unwrap())
        .args(words)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let transport = ByteStream::new(child.stdout.take().unwrap(), child.stdin.take().unwrap());
    (child, transport)
}

#[tokio::test]
async fn the_typescript_sdks_editor_runs_the_same_turns_over_http_and_websocket_as_over_stdio() {
    let Some(editor) = ts_remote("editor.mjs") else {
        return;
    };
    let stdio = ts_editor(&editor, &["stdio", &agent()]).await;
    assert_eq!(stdio, expected());
    let server = Listening::test_agent(&[]).await;
    assert_eq!(
        ts_editor(&editor, &["http", &server.url]).await,
        stdio,
        "over HTTP"
    );
    assert_eq!(
        ts_editor(&editor, &["ws", &server.ws()]).await,
        stdio,
        "over WebSocket"
    );
}

#[tokio::test]
async fn our_client_runs_the_same_turns_with_the_typescript_sdks_server_as_over_stdio() {
    let (Some(agent_script), Some(server_script)) =
        (ts_remote("agent.mjs"), ts_remote("server.mjs"))
    else {
        return;
    };
    let (_agent, stdio) = stdio_of(&agent_script);
    let over_stdio = our_editor(stdio).await;
    assert_eq!(over_stdio, expected());
    let server = Listening::start(&server_script, &[]).await;
    assert_eq!(
        our_editor(remote(&server.url).await).await,
        over_stdio,
        "over HTTP"
    );
    assert_eq!(
        our_editor(remote(&server.ws()).await).await,
        over_stdio,
        "over WebSocket"
    );
}

#[tokio::test]
async fn the_official_rust_sdks_client_and_server_work_with_ours_both_ways() {
    let (Some(editor), Some(rust_http)) = (ts_remote("editor.mjs"), peer("rust-http")) else {
        return;
    };
    // Its client, on stdio to the TypeScript editor, reaching our server over each profile.
    let server = Listening::test_agent(&[]).await;
    for url in [server.url.clone(), server.ws()] {
        let lines = ts_editor(&editor, &["stdio", &rust_http, "connect", &url]).await;
        assert_eq!(lines, expected(), "its client over {url}");
    }
    // Its server, hosting a test agent process per connection, reached by our client.
    let (_agent, stdio) = stdio_of(&agent());
    let over_stdio = our_editor(stdio).await;
    let theirs = Listening::start(&rust_http, &["serve", "--", &agent()]).await;
    assert_eq!(
        our_editor(remote(&theirs.url).await).await,
        over_stdio,
        "over HTTP"
    );
    assert_eq!(
        our_editor(remote(&theirs.ws()).await).await,
        over_stdio,
        "over WebSocket"
    );
}

#[tokio::test]
async fn a_client_that_never_reads_its_stream_holds_the_agent_back_not_the_servers_memory() {
    // The client opens the connection, starts a session, and asks for 100,000 updates on a
    // session stream it never opens: the server queues what its budget allows, the agent
    // waits, and once the client has read nothing for the stall limit the connection closes.
    let server = Listening::test_agent(&["--stall-timeout", "3s"]).await;
    let pid = server.child.id().unwrap();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::new();
    let auth = format!("Bearer {TOKEN}");
    let post = |body: String, connection: Option<&str>, session: Option<&str>| {
        let mut request = http
            .post(&server.url)
            .header("authorization", &auth)
            .header("content-type", "application/json")
            .body(body);
        if let Some(c) = connection {
            request = request.header("acp-connection-id", c);
        }
        if let Some(s) = session {
            request = request.header("acp-session-id", s);
        }
        request.send()
    };
    let init = post(
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}"#.to_owned(),
        None,
        None,
    )
    .await
    .unwrap();
    assert_eq!(init.status(), 200);
    let connection = init.headers()["acp-connection-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let mut stream = http
        .get(&server.url)
        .header("authorization", &auth)
        .header("accept", "text/event-stream")
        .header("acp-connection-id", &connection)
        .send()
        .await
        .unwrap();
    let answered = post(
        r#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}"#.to_owned(),
        Some(&connection),
        None,
    )
    .await
    .unwrap();
    assert_eq!(answered.status(), 202);
    let mut text = String::new();
    while !text.contains("sessionId") {
        let chunk = within("session/new's answer", stream.chunk())
            .await
            .unwrap()
            .unwrap();
        text.push_str(&String::from_utf8_lossy(&chunk));
    }
    let prompt = r#"{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"session-1","prompt":[{"type":"text","text":"stream 100000 400"}]}}"#;
    let sent = post(prompt.to_owned(), Some(&connection), Some("session-1"))
        .await
        .unwrap();
    assert_eq!(sent.status(), 202);
    // The connection is closed for the stall: its stream ends.
    let ended = async { while let Ok(Some(_)) = stream.chunk().await {} };
    within("the stalled connection's end", ended).await;
    let peak = crate::processes::peak_rss_kib(pid).unwrap();
    eprintln!("a client that read nothing of 100,000 updates: the server peaked at {peak} KiB");
    assert!(peak < 64 * 1024, "the server peaked at {peak} KiB");
    // The connection is gone, and the server serves others.
    let gone = post(prompt.to_owned(), Some(&connection), Some("session-1"))
        .await
        .unwrap();
    assert_eq!(gone.status(), 404);
    let lines = our_editor(remote(&server.ws()).await).await;
    assert_eq!(lines, expected());
}

/// A waiting turn of a new session over `url`: the editor, its session, the pending turn.
async fn waiting_turn(
    url: &str,
) -> (
    ScriptedEditor,
    sacp::testing::Session,
    sacp::testing::PendingTurn,
) {
    let editor = ScriptedEditor::new().connect(remote(url).await);
    within("initialize", editor.initialize()).await.unwrap();
    let session = within("session/new", editor.new_session()).await.unwrap();
    let turn = session.prompt("wait");
    session
        .until_update("the turn's start", |u| {
            sacp::testing::line(u) == "message: waiting"
        })
        .await;
    (editor, session, turn)
}

#[tokio::test]
async fn a_server_that_dies_mid_turn_fails_it_by_name_and_a_client_that_leaves_frees_its_connection()
 {
    // Our client: the server killed during a turn fails the turn, the error naming the server.
    for websocket in [false, true] {
        let mut server = Listening::test_agent(&[]).await;
        let url = if websocket {
            server.ws()
        } else {
            server.url.clone()
        };
        let (_editor, _session, turn) = waiting_turn(&url).await;
        server.child.kill().await.unwrap();
        let error = within("the failed turn", turn).await.unwrap_err();
        let address = url.split("://").nth(1).unwrap();
        assert!(
            error.message.contains(address),
            "the error names the server ({address}): {error}"
        );
    }
    // Our server, one connection at a time: a client that leaves mid-turn frees its
    // connection for the next one (its agent ended, within the EOF grace).
    let server = Listening::test_agent(&["--max-connections", "1"]).await;
    for url in [server.url.clone(), server.ws()] {
        let (editor, _session, _turn) = waiting_turn(&url).await;
        editor.connection().close();
        within("the connection's end", editor.connection().closed())
            .await
            .ok();
        // The next client gets in, and runs its turns.
        let next = async {
            loop {
                let connected = Remote::new(&url)
                    .header("Authorization", &format!("Bearer {TOKEN}"))
                    .unwrap()
                    .connect()
                    .await;
                if let Ok(transport) = connected {
                    let editor = ScriptedEditor::new().connect(transport);
                    if editor.initialize().await.is_ok() {
                        return editor;
                    }
                }
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        };
        let editor = within("a connection after the one that left", next).await;
        editor.connection().close();
        within("its end", editor.connection().closed()).await.ok();
    }
}
