//! The benchmarks' editor: writes requests on the agent's stdin and checks every update it
//! reads (lost, late, out of order).

use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::oneshot;

use crate::PATIENCE;

/// The editor: writes requests, and a reader task routes every line it reads.
#[derive(Clone)]
pub(crate) struct BenchEditor {
    inner: Arc<Mutex<State>>,
    stdin: Arc<tokio::sync::Mutex<ChildStdin>>,
    child: Arc<Mutex<Option<Child>>>,
    pid: u32,
}

#[derive(Default)]
struct State {
    next_id: u64,
    /// The result of each request in flight, by id.
    pending: HashMap<u64, oneshot::Sender<Box<RawValue>>>,
    sessions: HashMap<String, Session>,
    lost: u64,
    late: u64,
}

#[derive(Default)]
struct Session {
    /// A prompt is in flight on it.
    busy: bool,
    /// Updates received during the current prompt.
    received: u64,
    /// What the current prompt expects: `Some(n)` for `stream n`.
    expecting: Option<u64>,
}

#[derive(Deserialize)]
struct Line<'a> {
    id: Option<u64>,
    #[serde(borrow)]
    method: Option<&'a str>,
    #[serde(borrow)]
    params: Option<&'a RawValue>,
    result: Option<Box<RawValue>>,
    #[serde(borrow)]
    error: Option<&'a RawValue>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct UpdateParams {
    session_id: String,
    update: UpdateBody,
}

#[derive(Deserialize)]
struct UpdateBody {
    content: Content,
}

#[derive(Deserialize)]
struct Content {
    text: String,
}

impl BenchEditor {
    pub(crate) fn start(program: &Path, args: &[String], envs: &[(&str, &str)]) -> BenchEditor {
        let mut child = Command::new(program)
            .args(args)
            .envs(envs.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("start {}: {e}", program.display()));
        let pid = child.id().expect("a pid");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let inner = Arc::new(Mutex::new(State::default()));
        let state = inner.clone();
        tokio::spawn(async move {
            let mut reader = BufReader::with_capacity(64 * 1024, stdout);
            let mut line = Vec::new();
            loop {
                line.clear();
                match reader.read_until(b'\n', &mut line).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => on_line(&state, &line),
                }
            }
        });
        BenchEditor {
            inner,
            stdin: Arc::new(tokio::sync::Mutex::new(stdin)),
            child: Arc::new(Mutex::new(Some(child))),
            pid,
        }
    }

    /// Starts `program args` and initializes it.
    pub(crate) async fn initialized(program: &Path, args: &[String]) -> BenchEditor {
        BenchEditor::initialized_with(program, args, &[]).await
    }

    /// Starts `program args` with `envs` added to its environment, and initializes it.
    pub(crate) async fn initialized_with(
        program: &Path,
        args: &[String],
        envs: &[(&str, &str)],
    ) -> BenchEditor {
        let editor = BenchEditor::start(program, args, envs);
        editor
            .request(
                "initialize",
                r#"{"protocolVersion":1,"clientCapabilities":{}}"#.to_owned(),
            )
            .await;
        editor
    }

    pub(crate) fn pid(&self) -> u32 {
        self.pid
    }

    pub(crate) async fn request(&self, method: &str, params: String) -> Box<RawValue> {
        let (tx, rx) = oneshot::channel();
        let id = {
            let mut state = self.inner.lock().unwrap();
            state.next_id += 1;
            let id = state.next_id;
            state.pending.insert(id, tx);
            id
        };
        let line =
            format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{params}}}"#)
                + "\n";
        self.stdin
            .lock()
            .await
            .write_all(line.as_bytes())
            .await
            .expect("write to the agent");
        match tokio::time::timeout(PATIENCE, rx).await {
            Ok(Ok(result)) => result,
            Ok(Err(_)) => panic!("{method} failed (see the line above)"),
            Err(_) => panic!("{method} timed out"),
        }
    }

    pub(crate) async fn new_session(&self) -> String {
        let result = self
            .request(
                "session/new",
                r#"{"cwd":"/tmp","mcpServers":[]}"#.to_owned(),
            )
            .await;
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct New {
            session_id: String,
        }
        let new: New = serde_json::from_str(result.get()).expect("a session id");
        self.inner
            .lock()
            .unwrap()
            .sessions
            .insert(new.session_id.clone(), Session::default());
        new.session_id
    }

    pub(crate) async fn prompt(&self, session: &str, text: &str) {
        {
            let mut state = self.inner.lock().unwrap();
            let s = state.sessions.get_mut(session).expect("a known session");
            s.busy = true;
            s.received = 0;
            s.expecting = text.strip_prefix("stream ").and_then(|n| n.parse().ok());
        }
        let params =
            format!(r#"{{"sessionId":"{session}","prompt":[{{"type":"text","text":"{text}"}}]}}"#);
        self.request("session/prompt", params).await;
        let mut state = self.inner.lock().unwrap();
        let s = state.sessions.get_mut(session).expect("a known session");
        s.busy = false;
        let expected = s.expecting.unwrap_or(1);
        let missing = expected.saturating_sub(s.received);
        state.lost += missing;
    }

    pub(crate) fn losses(&self) -> (u64, u64) {
        let state = self.inner.lock().unwrap();
        (state.lost, state.late)
    }

    pub(crate) async fn close(self) {
        drop(self.stdin);
        let child = self.child.lock().unwrap().take();
        if let Some(mut child) = child {
            let _ = tokio::time::timeout(Duration::from_secs(5), child.wait()).await;
        }
    }
}

fn on_line(state: &Mutex<State>, line: &[u8]) {
    let parsed: Line<'_> = match serde_json::from_slice(line) {
        Ok(parsed) => parsed,
        Err(e) => panic!("unreadable line ({e}): {}", String::from_utf8_lossy(line)),
    };
    let mut state = state.lock().unwrap();
    match (parsed.method, parsed.id) {
        (Some("session/update"), None) => {
            let params = parsed.params.expect("update params");
            let update: UpdateParams = serde_json::from_str(params.get()).expect("an update");
            let Some(session) = state.sessions.get_mut(&update.session_id) else {
                panic!("an update for an unknown session");
            };
            if !session.busy {
                state.late += 1;
                return;
            }
            session.received += 1;
            let in_order = match session.expecting {
                // `ends_with`: a transforming proxy in the chain may prefix each chunk.
                Some(_) => update
                    .update
                    .content
                    .text
                    .ends_with(&format!("chunk {}", session.received)),
                None => session.received == 1,
            };
            if !in_order {
                state.late += 1;
            }
        }
        (None, Some(id)) => {
            let Some(waiting) = state.pending.remove(&id) else {
                panic!(
                    "a response to no request: {}",
                    String::from_utf8_lossy(line)
                );
            };
            match parsed.result {
                Some(result) => {
                    let _ = waiting.send(result);
                }
                None => {
                    eprintln!("error response: {}", parsed.error.map_or("?", |e| e.get()));
                    drop(waiting);
                }
            }
        }
        _ => panic!("unexpected message: {}", String::from_utf8_lossy(line)),
    }
}
