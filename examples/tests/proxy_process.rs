//! The example components as the processes cargo built, over real pipes: the proxies driven by a
//! conductor stand-in that plays both the editor (plain messages) and the agent
//! (`_proxy/successor/*`), and the test agent driven line by line.

use std::process::Stdio;
use std::sync::{Arc, Mutex};

use sacp::jsonrpc::{ByteStream, Connection, Error, Methods, RawJson};
use sacp::protocol::envelope::{self, SUCCESSOR_NOTIFICATION, SUCCESSOR_REQUEST};
use serde_json::{Value, json};
use tokio::process::{Child, Command};

use sacp::testing::within;

fn raw(text: &str) -> RawJson {
    RawJson::from_string(text).unwrap()
}

/// What the editor side received, in order.
type Seen = Arc<Mutex<Vec<String>>>;

struct Running {
    child: Child,
    conductor: Connection,
    seen: Seen,
}

fn chunk(text: &str) -> String {
    format!(
        r#"{{"sessionId":"s1","update":{{"sessionUpdate":"agent_message_chunk","content":{{"type":"text","text":"{text}"}}}}}}"#
    )
}

/// Starts `binary` and plays its conductor: as the agent, it answers `initialize`, streams a
/// chunk per prompt block before answering a prompt, and answers `_ext/ping` with its params.
fn start(binary: &str, args: &[&str]) -> Running {
    let mut child = Command::new(binary)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start the proxy");
    let seen = Seen::default();
    let agent = |method: String, params: Option<RawJson>, conn: Connection| async move {
        match method.as_str() {
            "initialize" => RawJson::from_string(
                r#"{"protocolVersion":1,"agentCapabilities":{"loadSession":true}}"#,
            ),
            "session/prompt" => {
                let prompt: Value = params.unwrap().parse()?;
                for block in prompt["prompt"].as_array().unwrap() {
                    let update = chunk(block["text"].as_str().unwrap());
                    let wrapped = envelope::wrap("session/update", Some(&raw(&update)));
                    conn.notify_raw(SUCCESSOR_NOTIFICATION, Some(wrapped))
                        .await?;
                }
                RawJson::from_string(r#"{"stopReason":"end_turn"}"#)
            }
            "_ext/ping" => Ok(params.unwrap_or_else(RawJson::null)),
            other => Err(Error::method_not_found(other)),
        }
    };
    let router = Methods::new()
        .on_raw_request(SUCCESSOR_REQUEST, move |params, conn| {
            let inner = envelope::unwrap(params.as_ref());
            async move {
                let (method, params) = inner?;
                agent(method, params, conn).await
            }
        })
        .on_raw_request("_ext/ask", |params, _| async move {
            Ok(params.unwrap_or_else(RawJson::null))
        })
        .on_raw_notification("session/update", {
            let seen = seen.clone();
            move |params, _| {
                seen.lock()
                    .unwrap()
                    .push(params.map(|p| p.to_string()).unwrap_or_default());
                async { Ok(()) }
            }
        });
    let transport = ByteStream::new(child.stdout.take().unwrap(), child.stdin.take().unwrap());
    let conductor = Connection::builder().name(binary).spawn(transport, router);
    Running {
        child,
        conductor,
        seen,
    }
}

impl Running {
    async fn request(&self, method: &str, params: &str) -> Result<RawJson, Error> {
        within(
            method,
            self.conductor.request_raw(method, Some(raw(params))),
        )
        .await
    }

    /// Closes the proxy's stdin: it must exit successfully, promptly.
    async fn finish(mut self) {
        self.conductor.close();
        let status = within("the proxy to exit", self.child.wait())
            .await
            .unwrap();
        assert!(status.success(), "{status}");
    }
}

const OFFER: &str = r#"{"protocolVersion":1,"clientCapabilities":{},"_meta":{"proxy":true}}"#;

#[tokio::test]
async fn the_prefix_proxy_over_pipes() {
    let proxy = start(env!("CARGO_BIN_EXE_prefix-proxy"), &[">> "]);
    let err = proxy
        .request("initialize", r#"{"protocolVersion":1}"#)
        .await
        .unwrap_err();
    assert!(err.message.contains("proxy capability"), "{err}");

    let init: Value = proxy
        .request("initialize", OFFER)
        .await
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(
        init,
        json!({"protocolVersion":1,"agentCapabilities":{"loadSession":true},"_meta":{"proxy":true}})
    );

    let answer = proxy
        .request(
            "session/prompt",
            r#"{"sessionId":"s1","prompt":[{"type":"text","text":"one"},{"type":"text","text":"two"}]}"#,
        )
        .await
        .unwrap();
    assert_eq!(answer.as_str(), r#"{"stopReason":"end_turn"}"#);
    assert_eq!(
        *proxy.seen.lock().unwrap(),
        [chunk(">> one"), chunk(">> two")],
        "both chunks, changed, before the answer"
    );

    // What it does not handle passes through unchanged, both ways.
    let odd = r#"{"b" : [1.50, "\u00e9"], "a":{}}"#;
    assert_eq!(proxy.request("_ext/ping", odd).await.unwrap().as_str(), odd);
    let wrapped = envelope::wrap("_ext/ask", Some(&raw(odd)));
    let asked = within(
        "_ext/ask",
        proxy
            .conductor
            .request_raw(SUCCESSOR_REQUEST, Some(wrapped)),
    )
    .await
    .unwrap();
    assert_eq!(asked.as_str(), odd);
    proxy.finish().await;
}

#[tokio::test]
async fn the_pass_through_proxy_over_pipes() {
    let proxy = start(env!("CARGO_BIN_EXE_passthrough-proxy"), &[]);
    proxy.request("initialize", OFFER).await.unwrap();
    proxy
        .request(
            "session/prompt",
            r#"{"sessionId":"s1","prompt":[{"type":"text","text":"same"}]}"#,
        )
        .await
        .unwrap();
    assert_eq!(*proxy.seen.lock().unwrap(), [chunk("same")]);
    proxy.finish().await;
}

/// Writes `lines` to the test agent, then returns it with a reader of its output.
async fn test_agent_with(
    lines: &[Value],
) -> (
    Child,
    tokio::process::ChildStdin,
    tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
) {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let mut child = Command::new(env!("CARGO_BIN_EXE_test-agent"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start the test agent");
    let mut stdin = child.stdin.take().unwrap();
    for line in lines {
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
    }
    stdin.flush().await.unwrap();
    let out = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    (child, stdin, out)
}

fn rpc(id: u64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

#[tokio::test]
async fn an_agent_with_a_prompt_still_waiting_exits_within_a_second_of_stdin_closing() {
    let (mut child, stdin, mut out) = test_agent_with(&[
        rpc(1, "initialize", json!({"protocolVersion": 1})),
        rpc(2, "session/new", json!({"cwd": "/tmp", "mcpServers": []})),
        rpc(
            3,
            "session/prompt",
            json!({"sessionId": "session-1", "prompt": [{"type": "text", "text": "wait"}]}),
        ),
    ])
    .await;
    // Until the agent says it waits.
    loop {
        let line = within("the agent's output", out.next_line())
            .await
            .unwrap()
            .expect("the agent is running");
        if line.contains(r#""text":"waiting""#) {
            break;
        }
    }
    // The prompt waits for ever: only the end of stdin ends it (within the test's patience).
    drop(stdin);
    let status = within("the agent to exit", child.wait()).await.unwrap();
    assert!(status.success(), "{status}");
    // The cancelled prompt was answered on the way out.
    let mut rest = Vec::new();
    while let Some(line) = within("the rest", out.next_line()).await.unwrap() {
        rest.push(line);
    }
    assert!(
        rest.iter()
            .any(|l| l.contains(r#""id":3"#) && l.contains("-32800")),
        "{rest:?}"
    );
}

#[tokio::test]
async fn requests_piped_in_before_stdin_closes_are_still_answered() {
    // `printf '<initialize>\n' | test-agent`: the answer comes although stdin ended at once.
    let (mut child, stdin, mut out) =
        test_agent_with(&[rpc(1, "initialize", json!({"protocolVersion": 1}))]).await;
    drop(stdin);
    let line = within("the answer", out.next_line())
        .await
        .unwrap()
        .expect("an answer");
    let answer: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(answer["id"], 1, "{answer}");
    assert_eq!(answer["result"]["protocolVersion"], 1, "{answer}");
    assert!(within("the exit", child.wait()).await.unwrap().success());
}
