//! The editor stand-in: drives a program (the conductor, an agent) over its stdio as an editor
//! would, one JSON line at a time, and finds what it started in the process table.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::PATIENCE;

/// Peak resident memory (`VmHWM`) of each process started by the editor with `tag`, by
/// command name, in KiB.
pub fn peak_rss_kib(tag: &str) -> Vec<(String, u64)> {
    processes_tagged(tag)
        .into_iter()
        .filter_map(|pid| {
            let kib = crate::processes::peak_rss_kib(pid)?;
            Some((format!("{} ({pid})", crate::processes::name(pid)), kib))
        })
        .collect()
}

/// The first process started by the editor with `tag` whose name (`comm`) is `name`.
pub fn process_named(tag: &str, name: &str) -> Option<u32> {
    processes_tagged(tag)
        .into_iter()
        .find(|pid| crate::processes::name(*pid) == name)
}

/// A unique tag put in the environment of everything the test starts, to find leftovers.
fn new_tag() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(
        "{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// The processes (other than zombies) whose environment carries `SACP_TEST_TAG=tag`.
pub fn processes_tagged(tag: &str) -> Vec<u32> {
    let needle = format!("SACP_TEST_TAG={tag}");
    crate::processes::pids()
        .into_iter()
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|&b| b == 0).any(|var| var == needle.as_bytes()))
        })
        .collect()
}

/// An editor: talks newline-delimited JSON to the child's stdio, one line at a time, so it
/// sees exactly what arrived and in which order.
pub struct Editor {
    pub child: Child,
    stdin: Option<ChildStdin>,
    lines: Lines<BufReader<ChildStdout>>,
    next_id: i64,
    /// What the editor saw (requests it sent, what came back), without ids.
    pub transcript: Vec<String>,
    stderr: Arc<Mutex<String>>,
    stderr_done: Option<tokio::task::JoinHandle<()>>,
    pub tag: String,
    reads_stderr: bool,
    /// A file `fs/read_text_file` may read.
    pub file: Option<(PathBuf, String)>,
}

impl std::fmt::Debug for Editor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Editor")
            .field("pid", &self.child.id())
            .field("tag", &self.tag)
            .field("said", &self.transcript.len())
            .finish_non_exhaustive()
    }
}

impl Editor {
    /// Starts `program args` as the editor's agent.
    pub fn start(program: &str, args: &[String]) -> Editor {
        Editor::start_with(program, args, &[], true)
    }

    /// Starts `program args` with `env` added, reading its stderr or not (an editor that never
    /// reads it: the pipe fills up).
    pub fn start_with(
        program: &str,
        args: &[String],
        env: &[(&str, &str)],
        read_stderr: bool,
    ) -> Editor {
        Editor::start_in(program, args, env, read_stderr, None)
    }

    /// [`Editor::start_with`], in directory `dir` when given.
    pub fn start_in(
        program: &str,
        args: &[String],
        env: &[(&str, &str)],
        read_stderr: bool,
        dir: Option<&std::path::Path>,
    ) -> Editor {
        let tag = new_tag();
        let mut command = Command::new(program);
        if let Some(dir) = dir {
            command.current_dir(dir);
        }
        command
            .args(args)
            .envs(env.iter().copied())
            .env("SACP_TEST_TAG", &tag)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command
            .spawn()
            .unwrap_or_else(|e| panic!("start {program}: {e}"));
        let stdin = child.stdin.take();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let stderr = Arc::new(Mutex::new(String::new()));
        let mut pipe = child.stderr.take().unwrap();
        let sink = stderr.clone();
        let stderr_done = tokio::spawn(async move {
            if !read_stderr {
                // Hold the pipe open, read nothing.
                std::future::pending::<()>().await;
            }
            let mut buf = vec![0; 4096];
            while let Ok(n) = pipe.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        Editor {
            child,
            stdin,
            lines,
            next_id: 0,
            transcript: Vec::new(),
            stderr,
            stderr_done: Some(stderr_done),
            tag,
            reads_stderr: read_stderr,
            file: None,
        }
    }

    /// What the agent process wrote to stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    fn fail(&self, what: &str) -> ! {
        panic!(
            "{what}\n--- transcript ---\n{}\n--- stderr ---\n{}",
            self.transcript.join("\n"),
            self.stderr()
        )
    }

    /// Writes one raw line.
    pub async fn send_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        let write = async {
            stdin.write_all(line.as_bytes()).await?;
            stdin.write_all(b"\n").await?;
            stdin.flush().await
        };
        if let Err(e) = tokio::time::timeout(PATIENCE, write)
            .await
            .unwrap_or_else(|_| self.fail("timed out writing"))
        {
            self.fail(&format!("cannot write to the agent: {e}"));
        }
    }

    pub async fn notify(&mut self, method: &str, params: Value) {
        self.transcript.push(format!("notify {method} {params}"));
        let line = json!({"jsonrpc": "2.0", "method": method, "params": params}).to_string();
        self.send_line(&line).await;
    }

    /// Sends a request; returns its id.
    pub async fn send_request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = json!(format!("editor-{}", self.next_id));
        self.transcript.push(format!("request {method} {params}"));
        let line =
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string();
        self.send_line(&line).await;
        id
    }

    /// The next line the agent wrote, as it wrote it; `None` at the end of its output.
    pub async fn next_line(&mut self) -> Option<String> {
        match tokio::time::timeout(PATIENCE, self.lines.next_line()).await {
            Ok(Ok(line)) => line,
            Ok(Err(e)) => self.fail(&format!("cannot read from the agent: {e}")),
            Err(_) => self.fail("timed out waiting for a message"),
        }
    }

    /// The next message, or `None` at the end of the agent's output.
    pub async fn next_message(&mut self) -> Option<Value> {
        let line = self.next_line().await?;
        match serde_json::from_str(&line) {
            Ok(value) => Some(value),
            Err(e) => self.fail(&format!(
                "the agent wrote a line that is not JSON ({e}): {line}"
            )),
        }
    }

    /// Sends a request and handles everything that arrives until its response, which it
    /// returns (the whole message). Requests from the agent side are answered on the way.
    pub async fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.send_request(method, params).await;
        self.until_response(&id).await
    }

    /// Handles messages until every request of `ids` is answered; returns the responses, by
    /// id, in the order they came.
    pub async fn until_responses(&mut self, ids: &[Value]) -> Vec<Value> {
        let mut answered = Vec::new();
        while answered.len() < ids.len() {
            let Some(message) = self.next_message().await else {
                self.fail(&format!(
                    "the agent's output ended with {} of {} answers",
                    answered.len(),
                    ids.len()
                ))
            };
            if message.get("method").is_none() {
                if !ids.contains(&message["id"]) {
                    self.fail(&format!("a response to a request never sent: {message}"));
                }
                answered.push(message);
                continue;
            }
            self.handle(message).await;
        }
        answered
    }

    /// Takes the agent's stdin, for a test that writes from a task of its own.
    pub fn take_stdin(&mut self) -> ChildStdin {
        self.stdin.take().expect("stdin is open")
    }

    /// Handles messages until the response to `id`.
    pub async fn until_response(&mut self, id: &Value) -> Value {
        loop {
            let Some(message) = self.next_message().await else {
                self.fail(&format!(
                    "the agent's output ended before the response to {id}"
                ))
            };
            if message.get("method").is_none() {
                if message["id"] == *id {
                    let body = message.get("result").map_or_else(
                        || format!("error {}", message["error"]),
                        |r| format!("result {r}"),
                    );
                    self.transcript.push(format!("response {body}"));
                    return message;
                }
                self.fail(&format!("a response to a request never sent: {message}"));
            }
            self.handle(message).await;
        }
    }

    /// Records a notification, or answers a request from the agent side.
    pub async fn handle(&mut self, message: Value) {
        let method = message["method"].as_str().unwrap_or_default().to_owned();
        let params = message.get("params").cloned().unwrap_or(Value::Null);
        let Some(id) = message.get("id").cloned() else {
            self.transcript
                .push(format!("notification {method} {params}"));
            return;
        };
        self.transcript.push(format!("asked {method} {params}"));
        // The editor's MCP tool `steps` reports progress (RFD: `mcp/message` notifications
        // with the request's `requestId`, before the answer).
        if method == "mcp/message" && params["params"]["name"] == "steps" {
            for step in 1..=3 {
                let note = json!({"jsonrpc": "2.0", "method": "mcp/message", "params": {
                    "serverId": params["serverId"],
                    "requestId": params["requestId"],
                    "method": "notifications/progress",
                    "params": {
                        "progressToken": params["params"]["_meta"]["progressToken"],
                        "progress": step,
                        "total": 3
                    }
                }});
                self.send_line(&note.to_string()).await;
            }
        }
        let answer = match method.as_str() {
            "session/request_permission" => {
                json!({"result": {"outcome": {"outcome": "selected", "optionId": "allow"}}})
            }
            // A form: its `name` field filled.
            "elicitation/create" => {
                json!({"result": {"action": "accept", "content": {"name": "the editor"}}})
            }
            "fs/read_text_file" => match &self.file {
                Some((path, content)) if params["path"] == path.to_string_lossy().as_ref() => {
                    json!({"result": {"content": content}})
                }
                _ => json!({"error": {"code": -32602, "message": "no such file"}}),
            },
            // The editor's own MCP server, the RFD's way (`{"type": "acp", "serverId"}`): one
            // tool, `from_editor`.
            "mcp/message" => json!({"result": match params["method"].as_str() {
                Some("server/discover") => json!({"result": {
                    "resultType": "complete",
                    "supportedVersions": ["2026-07-28"],
                    "capabilities": {"tools": {}},
                    "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "edmcp", "version": "1"}}
                }}),
                Some("tools/list") => json!({"result": {"resultType": "complete", "tools": [
                    {"name": "from_editor", "inputSchema": {"type": "object"}}
                ]}}),
                Some("tools/call") => json!({"result": {"resultType": "complete", "content": [
                    {"type": "text", "text": format!("hello from the editor's {}", params["serverId"])}
                ]}}),
                _ => json!({"error": {"code": -32601, "message": "Method not found"}}),
            }}),
            _ => json!({"error": {"code": -32601, "message": "Method not found"}}),
        };
        let mut response = json!({"jsonrpc": "2.0", "id": id});
        response
            .as_object_mut()
            .unwrap()
            .extend(answer.as_object().unwrap().clone());
        self.send_line(&response.to_string()).await;
    }

    /// `initialize` then `session/new`; returns the session id.
    pub async fn open_session(&mut self) -> String {
        let init = self
            .request(
                "initialize",
                json!({"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": true}}}),
            )
            .await;
        if init.get("result").is_none() {
            self.fail(&format!("initialize failed: {init}"));
        }
        self.new_session().await
    }

    /// `initialize` asking for ACP v2 (the draft), which the answer must give; the answer.
    pub async fn initialize_v2(&mut self) -> Value {
        let init = self
            .request(
                "initialize",
                json!({"protocolVersion": 2, "info": {"name": "v2-editor", "version": "1.0.0"}}),
            )
            .await;
        if init["result"]["protocolVersion"] != 2 {
            self.fail(&format!("initialize did not give ACP v2: {init}"));
        }
        init
    }

    pub async fn new_session(&mut self) -> String {
        let session = self
            .request("session/new", json!({"cwd": "/tmp", "mcpServers": []}))
            .await;
        match session["result"]["sessionId"].as_str() {
            Some(id) => id.to_owned(),
            None => self.fail(&format!("session/new failed: {session}")),
        }
    }

    pub async fn prompt(&mut self, session: &str, text: &str) -> Value {
        self.request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]}),
        )
        .await
    }

    /// Sends a prompt without waiting for its answer; returns its id.
    pub async fn send_prompt(&mut self, session: &str, text: &str) -> Value {
        let params = json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]});
        self.send_request("session/prompt", params).await
    }

    /// Starts a `wait` prompt and returns its id once the agent says it is waiting.
    pub async fn start_waiting(&mut self, session: &str) -> Value {
        let id = self.send_prompt(session, "wait").await;
        let waiting = self.next_message().await;
        let text = waiting
            .as_ref()
            .map(|m| &m["params"]["update"]["content"]["text"]);
        if text != Some(&json!("waiting")) {
            self.fail(&format!(
                "expected the agent to say it waits, got {waiting:?}"
            ));
        }
        id
    }

    /// Closes stdin and checks the conductor's clean end: exit status 0 (within the tests'
    /// patience; how soon is no test's business on a shared machine), and no process left.
    pub async fn close_and_expect_a_clean_exit(&mut self) {
        self.close_stdin();
        let (code, took) = self.exit().await;
        if code != Some(0) {
            self.fail(&format!("exit status {code:?} after {took:?}"));
        }
        self.assert_no_process_left().await;
    }

    /// The process id of the editor's agent (the conductor).
    pub fn pid(&self) -> u32 {
        self.child.id().expect("the process runs")
    }

    /// Closes the agent's stdin.
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Waits for the agent process to exit; returns its status code and how long it took.
    pub async fn exit(&mut self) -> (Option<i32>, Duration) {
        let start = std::time::Instant::now();
        match tokio::time::timeout(PATIENCE, self.child.wait()).await {
            Ok(Ok(status)) => {
                let took = start.elapsed();
                if let Some(done) = self.stderr_done.take().filter(|_| self.reads_stderr) {
                    // Everything the process wrote to stderr, once nothing holds the pipe.
                    let _ = tokio::time::timeout(PATIENCE, done).await;
                }
                (status.code(), took)
            }
            Ok(Err(e)) => self.fail(&format!("cannot wait for the agent: {e}")),
            Err(_) => self.fail("the agent process did not exit"),
        }
    }

    /// Fails unless no process started by this editor is left.
    pub async fn assert_no_process_left(&self) {
        // A process that was just killed may take a moment to leave the process table.
        let mut left = processes_tagged(&self.tag);
        for _ in 0..20 {
            if left.is_empty() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
            left = processes_tagged(&self.tag);
        }
        self.fail(&format!("processes left behind: {left:?}"));
    }
}

/// Reads the answer to `id`, checking that the `count` updates before it are the test agent's
/// `chunk 1` … `chunk N` (padded with dots or not) behind `prefix`, in order.
pub async fn expect_stream(editor: &mut Editor, id: &Value, count: u32, prefix: &str) {
    let mut seen = 0u32;
    loop {
        let message = editor
            .next_message()
            .await
            .expect("the chain is still running");
        if message.get("method").is_none() {
            assert_eq!(message["id"], *id);
            assert_eq!(message["result"]["stopReason"], "end_turn", "{message}");
            break;
        }
        assert_eq!(message["method"], "session/update", "{message}");
        seen += 1;
        let text = message["params"]["update"]["content"]["text"]
            .as_str()
            .unwrap_or_default();
        let expected = format!("{prefix}chunk {seen}");
        assert!(
            text == expected || text.starts_with(&format!("{expected}.")),
            "update {seen} is out of order or untransformed: {text}"
        );
    }
    assert_eq!(seen, count, "updates lost");
}

/// The same script, for comparing chains: initialize, a session, an echo, a stream, a
/// permission request and a file read.
pub async fn standard_script(editor: &mut Editor) -> Vec<String> {
    editor.file = Some((
        PathBuf::from("/workspace/notes.txt"),
        "hello from the editor".to_owned(),
    ));
    let session = editor.open_session().await;
    editor.prompt(&session, "hello, agent").await;
    editor.prompt(&session, "stream 5").await;
    editor.prompt(&session, "permission").await;
    editor.prompt(&session, "read /workspace/notes.txt").await;
    editor
        .request("_sacp_test/unknown", json!({"x": [1, 2.50]}))
        .await;
    editor.notify("_sacp_test/notice", json!({"y": null})).await;
    let second = editor.new_session().await;
    editor.prompt(&second, "second session").await;
    editor.transcript.clone()
}

/// What the agent said (its message chunks) during the last prompt.
pub fn said(editor: &Editor) -> Vec<String> {
    let start = editor
        .transcript
        .iter()
        .rposition(|l| l.starts_with("request session/prompt"))
        .unwrap_or(0);
    editor.transcript[start..]
        .iter()
        .filter_map(|l| l.strip_prefix("notification session/update "))
        .filter_map(|update| {
            let update: serde_json::Value = serde_json::from_str(update).unwrap();
            (update["update"]["sessionUpdate"] == "agent_message_chunk").then(|| {
                update["update"]["content"]["text"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned()
            })
        })
        .collect()
}

/// `line` with every UUID replaced by `<id N>`, N in order of first appearance: the message
/// ids an ACP v2 turn makes are random, the rest of a line is not.
pub fn without_uuids(line: &str) -> String {
    let is_uuid = |s: &[u8]| {
        s.len() == 36
            && s.iter().enumerate().all(|(i, b)| match i {
                8 | 13 | 18 | 23 => *b == b'-',
                _ => b.is_ascii_hexdigit(),
            })
    };
    let (bytes, mut out, mut seen, mut i) = (line.as_bytes(), String::new(), Vec::new(), 0);
    while i < bytes.len() {
        if i + 36 <= bytes.len() && is_uuid(&bytes[i..i + 36]) {
            let uuid = &line[i..i + 36];
            let n = seen.iter().position(|u| u == uuid).unwrap_or_else(|| {
                seen.push(uuid.to_owned());
                seen.len() - 1
            });
            out.push_str(&format!("<id {n}>"));
            i += 36;
        } else {
            let c = line[i..].chars().next().unwrap_or_default();
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}
