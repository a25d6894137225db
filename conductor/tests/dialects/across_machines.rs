//! Chains across machines: the conductor serving its chain over ACP's remote transport
//! (`conductor agent --listen`), and reaching components that are servers (a URL in the
//! chain), with the TypeScript SDK 2.4's remote clients and `AcpServer` as peers. Every turn over
//! the network is compared with the same turn over stdio.

use std::process::Stdio;
use std::time::Duration;

use sacp::testing::{ScriptedEditor, within};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

use crate::common::*;
use crate::peers::ts_remote;
use crate::remote::{Listening, TOKEN, expected, remote, ts_editor};

/// A file holding [`TOKEN`], for `--listen-token-file`.
fn token_file() -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!(
        "sacp-listen-token-{}-{}",
        std::process::id(),
        uuid_like()
    ));
    std::fs::write(&path, format!("{TOKEN}\n")).unwrap();
    path
}

fn uuid_like() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// `conductor agent --listen 127.0.0.1:0 --listen-token-file … EXTRA… COMPONENTS…`, with
/// `--no-journal` unless EXTRA gives a `--journal`: a test never writes the journal in the
/// user's state directory, and a session layer's own behaviour is tested without one.
pub(crate) async fn conductor_listening(extra: &[&str], components: &[String]) -> Listening {
    conductor_listening_in(extra, components, &[]).await
}

/// [`conductor_listening`] with `env` besides.
pub(crate) async fn conductor_listening_in(
    extra: &[&str],
    components: &[String],
    env: &[(&str, &str)],
) -> Listening {
    let token = token_file();
    let mut args = vec![
        "agent",
        "--listen",
        "127.0.0.1:0",
        "--listen-token-file",
        token.to_str().unwrap(),
    ];
    if !extra.contains(&"--journal") {
        args.push("--no-journal");
    }
    args.extend(extra);
    args.extend(components.iter().map(String::as_str));
    let env: Vec<(&str, &std::path::Path)> = env
        .iter()
        .map(|(k, v)| (*k, std::path::Path::new(*v)))
        .collect();
    Listening::start_in(conductor(), &args, &env).await
}

/// The conductor's components now (its direct children).
fn components_of(conductor: &Listening) -> Vec<u32> {
    let mut pids = processes::children(conductor.child.id().unwrap());
    pids.sort_unstable();
    pids
}

/// Whether `pid` still runs (a zombie does not).
pub(crate) fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        !stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    })
}

#[tokio::test]
async fn the_typescript_editor_gets_the_same_chain_over_http_and_websocket_as_over_stdio() {
    let Some(editor) = ts_remote("editor.mjs") else {
        return;
    };
    let chain = [example("sparkle"), passthrough(), agent()];
    let mut stdio_args = vec!["stdio", conductor(), "agent"];
    stdio_args.extend(chain.iter().map(String::as_str));
    let stdio = ts_editor(&editor, &stdio_args).await;
    // Sparkle's embodiment turn came first (its thoughts), then the test agent's own turns.
    let first = stdio[0].as_array().unwrap();
    assert!(
        first.iter().any(|said| said
            .as_str()
            .is_some_and(|s| s.starts_with("thought: [sparkle]"))),
        "no embodiment turn in {first:?}"
    );
    assert_eq!(stdio[1..], expected()[1..], "over stdio");
    let server = conductor_listening(&[], &chain).await;
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

/// Two editors get a chain each; one vanishes in the middle of a turn: its session is
/// detached, not ended, and with `--detached-timeout 2s` its chain is gone (no process left)
/// within the timeout and the end's graces, while the connected editor's is untouched.
#[tokio::test]
async fn two_editors_get_two_chains_and_one_that_vanishes_leaves_nothing_behind() {
    let Some(editor) = ts_remote("editor.mjs") else {
        return;
    };
    let server =
        conductor_listening(&["--detached-timeout", "2s"], &[passthrough(), agent()]).await;
    assert!(
        components_of(&server).is_empty(),
        "no chain before an editor"
    );

    // Editor A, over Streamable HTTP: a session, left open.
    let a = ScriptedEditor::new().connect(remote(&server.url).await);
    within("A's initialize", a.initialize()).await.unwrap();
    let a_session = within("A's session", a.new_session()).await.unwrap();
    let chain_a = components_of(&server);
    assert_eq!(chain_a.len(), 2, "A's chain: a proxy and the agent");

    // Editor B, over WebSocket: the TypeScript editor, which vanishes (SIGKILL) mid-turn.
    let mut words = editor.split_whitespace();
    let mut b = Command::new(words.next().unwrap())
        .args(words)
        .args(["ws", &server.ws()])
        .env("ACP_TOKEN", TOKEN)
        .env("ACP_VANISH_AT", "waiting")
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut b_lines = BufReader::new(b.stdout.take().unwrap()).lines();
    // Its first turns complete (its own chain, beside A's) ...
    for _ in 0..3 {
        within("B's turns", b_lines.next_line())
            .await
            .unwrap()
            .unwrap();
    }
    let both = components_of(&server);
    assert_eq!(both.len(), 4, "two chains: {both:?}");
    let chain_b: Vec<u32> = both.into_iter().filter(|p| !chain_a.contains(p)).collect();
    // ... then it is killed in the middle of its `wait` turn.
    let status = within("B's end", b.wait()).await.unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(9),
        "B vanished"
    );
    let vanished = std::time::Instant::now();
    // Detached, not ended: the chain lives on through the timeout.
    assert!(
        chain_b.iter().all(|p| running(*p)),
        "B's chain ended at once"
    );
    until("B's chain gone", PATIENCE, || {
        let left: Vec<u32> = chain_b.iter().copied().filter(|p| running(*p)).collect();
        if left.is_empty() {
            Ok(())
        } else {
            Err(format!("{left:?} still run"))
        }
    })
    .await;
    eprintln!(
        "B's chain was gone {:?} after B vanished",
        vanished.elapsed()
    );
    assert!(
        vanished.elapsed() >= Duration::from_secs(2),
        "gone before the detached timeout"
    );
    assert!(chain_a.iter().all(|p| running(*p)), "A's chain lives on");

    // A goes on, and a new editor gets a chain of its own.
    let turn = within("A's turn", a_session.prompt("stream 3"))
        .await
        .unwrap();
    assert_eq!(turn.text(), "chunk 1chunk 2chunk 3");
    assert_eq!(ts_editor(&editor, &["http", &server.url]).await, expected());
    // That editor's chain ends once its session, detached when the connection closed, has
    // had nobody for the timeout.
    until("only A's chain left", PATIENCE, || {
        let left = components_of(&server);
        if left == chain_a {
            Ok(())
        } else {
            Err(format!("{left:?} run, A's chain is {chain_a:?}"))
        }
    })
    .await;
}

#[tokio::test]
async fn a_chain_reaches_its_agent_over_the_network_as_if_it_were_a_process() {
    let (Some(editor), Some(server_script), Some(ts_agent_script)) = (
        ts_remote("editor.mjs"),
        ts_remote("server.mjs"),
        ts_remote("agent.mjs"),
    ) else {
        return;
    };
    // The TypeScript SDK's `AcpServer` over TLS with a CA made here, and its agent on stdio:
    // the same turns through `conductor agent passthrough URL` as through `... COMMAND`.
    let (ca, cert, key) = tls::certificates();
    let far = Listening::start(
        &server_script,
        &[
            "--tls-cert",
            cert.to_str().unwrap(),
            "--tls-key",
            key.to_str().unwrap(),
        ],
    )
    .await;
    let wss = far.ws();
    assert!(wss.starts_with("wss://"), "{wss}");
    let bearer = format!("Authorization: Bearer {TOKEN}");
    let over_stdio = {
        let mut args = vec!["stdio", conductor(), "agent"];
        let p = passthrough();
        args.extend([p.as_str(), ts_agent_script.as_str()]);
        ts_editor(&editor, &args).await
    };
    let p = passthrough();
    let ca_path = ca.to_str().unwrap();
    for url in [wss.as_str(), far.url.as_str()] {
        let over_network = ts_editor(
            &editor,
            &[
                "stdio",
                conductor(),
                "agent",
                "--header",
                &bearer,
                "--ca-file",
                ca_path,
                &p,
                url,
            ],
        )
        .await;
        assert_eq!(over_network, over_stdio, "the agent at {url}");
    }

    // The far end is our own conductor serving the test agent over TLS (the same certificate):
    // equal to the test agent on stdio.
    let tls = [
        "--tls-cert",
        cert.to_str().unwrap(),
        "--tls-key",
        key.to_str().unwrap(),
    ];
    let ours = conductor_listening(&tls, &[agent()]).await;
    assert!(ours.url.starts_with("https://"), "{}", ours.url);
    for url in [ours.ws(), ours.url.clone()] {
        let over_network = ts_editor(
            &editor,
            &[
                "stdio",
                conductor(),
                "agent",
                "--header",
                &bearer,
                "--ca-file",
                ca_path,
                &p,
                &url,
            ],
        )
        .await;
        assert_eq!(over_network, expected(), "the agent at {url}");
    }
}

#[tokio::test]
async fn a_remote_agent_that_dies_mid_turn_fails_the_editors_request_naming_its_url() {
    let far = conductor_listening(&[], &[agent()]).await;
    let url = far.ws();
    let bearer = format!("Authorization: Bearer {TOKEN}");
    let trace = std::env::temp_dir().join(format!(
        "sacp-remote-trace-{}-{}.jsonl",
        std::process::id(),
        uuid_like()
    ));
    let mut editor = Editor::start(
        conductor(),
        &[
            "agent".to_owned(),
            "--trace".to_owned(),
            trace.to_string_lossy().into_owned(),
            "--header".to_owned(),
            bearer,
            passthrough(),
            url.clone(),
        ],
    );
    let session = editor.open_session().await;
    let waiting = editor.start_waiting(&session).await;
    // The far end is killed in the middle of the turn: its chain with it.
    let mut far = far;
    far.child.kill().await.unwrap();
    let answer = editor.until_response(&waiting).await;
    let error = &answer["error"];
    assert_eq!(error["code"], json!(-32603), "{answer}");
    let message = error["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("component 2") && message.contains(&url),
        "the error names the component and its URL: {message}"
    );
    assert!(!message.contains(TOKEN), "no secret in {message}");
    assert_eq!(error["data"]["url"], json!(url), "{answer}");
    let (code, _) = editor.exit().await;
    assert_ne!(code, Some(0), "the chain failed");
    editor.assert_no_process_left().await;
    // The trace names the remote hop: its transport and its URL.
    let text = std::fs::read_to_string(&trace).unwrap();
    let header: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    let remote = &header["components"][1];
    assert_eq!(remote["transport"], json!("websocket"), "{header}");
    assert_eq!(remote["url"], json!(url), "{header}");
    assert_eq!(remote["pid"], json!(null), "{header}");
    let _ = std::fs::remove_file(trace);
}

#[tokio::test]
async fn an_unreachable_or_refusing_component_is_an_error_naming_its_url() {
    // Nobody listens: the conductor says whom it could not reach, and exits non-zero.
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("ws://me:s3cret@{}/acp", free.local_addr().unwrap());
    drop(free);
    let mut editor = Editor::start(conductor(), &["agent".to_owned(), url]);
    let (code, _) = editor.exit().await;
    assert_eq!(code, Some(1));
    let stderr = editor.stderr();
    assert!(
        stderr.contains("cannot reach ws://127.0.0.1:") && !stderr.contains("s3cret"),
        "{stderr}"
    );

    // A server that refuses the token: the same, with the server's refusal.
    let far = conductor_listening(&[], &[agent()]).await;
    let mut editor = Editor::start(
        conductor(),
        &[
            "agent".to_owned(),
            "--header".to_owned(),
            "Authorization: Bearer wrong".to_owned(),
            far.ws(),
        ],
    );
    let (code, _) = editor.exit().await;
    assert_eq!(code, Some(1));
    let stderr = editor.stderr();
    assert!(
        stderr.contains("401") && stderr.contains(&far.ws()),
        "{stderr}"
    );
}

/// HAProxy running `deploy/haproxy.cfg` in front of `conductors`, on a free port (killed when
/// dropped); `None`, said, where HAProxy is not installed (under `CI` that fails).
pub(crate) async fn haproxy(
    conductors: [&Listening; 2],
) -> Option<(tokio::process::Child, String)> {
    let Some(haproxy) = [
        "/usr/sbin/haproxy",
        "/usr/bin/haproxy",
        "/usr/local/sbin/haproxy",
    ]
    .into_iter()
    .find(|p| std::path::Path::new(p).exists()) else {
        crate::peers::missing(
            "HAProxy",
            "it is not installed (Debian: apt-get install haproxy)",
        );
        return None;
    };
    let config = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/haproxy.cfg");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let address = |l: &Listening| {
        l.url
            .trim_start_matches("http://")
            .trim_end_matches("/acp")
            .to_owned()
    };
    let mut child = Command::new(haproxy)
        .args(["-db", "-f"])
        .arg(&config)
        .env("ACP_LISTEN", format!("127.0.0.1:{port}"))
        .env("ACP_CONDUCTOR_1", address(conductors[0]))
        .env("ACP_CONDUCTOR_2", address(conductors[1]))
        .stdout(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    // Serving once it accepts connections.
    let url = format!("http://127.0.0.1:{port}/acp");
    until("HAProxy listens", PATIENCE, || {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("HAProxy ended at its start: {status}");
        }
        std::net::TcpStream::connect(("127.0.0.1", port)).map(drop)
    })
    .await;
    Some((child, url))
}

#[tokio::test]
async fn behind_haproxy_every_request_of_a_connection_reaches_the_same_conductor() {
    let Some(editor) = ts_remote("editor.mjs") else {
        return;
    };
    // Two conductors sharing a token, each tracing its connections into a directory of its own.
    let dirs: Vec<std::path::PathBuf> = (0..2)
        .map(|i| {
            let dir = std::env::temp_dir().join(format!(
                "sacp-lb-{}-{}-{i}",
                std::process::id(),
                uuid_like()
            ));
            std::fs::create_dir_all(&dir).unwrap();
            dir
        })
        .collect();
    let mut conductors = Vec::new();
    for dir in &dirs {
        let trace = dir.join("trace.jsonl");
        conductors.push(
            conductor_listening(
                &["--trace", trace.to_str().unwrap()],
                &[passthrough(), agent()],
            )
            .await,
        );
    }
    let Some((_haproxy, url)) = haproxy([&conductors[0], &conductors[1]]).await else {
        return;
    };
    let ws = url.replacen("http", "ws", 1);
    // Several connections in a row, over both profiles: each completes its turns, which it
    // could not if one of its requests reached the other conductor (it knows no such
    // connection); and each connection is traced by exactly one of them, in full.
    let connections = |dir: &std::path::Path| -> Vec<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|name| name.starts_with("trace.") && name != "trace.jsonl")
            .collect()
    };
    for (round, target) in [&url, &ws, &url, &ws].into_iter().enumerate() {
        let profile = if target.starts_with("ws") {
            "ws"
        } else {
            "http"
        };
        assert_eq!(
            ts_editor(&editor, &[profile, target]).await,
            expected(),
            "connection {round} over {profile} through HAProxy"
        );
        let seen: usize = dirs.iter().map(|d| connections(d).len()).sum();
        assert_eq!(seen, round + 1, "one chain per connection so far");
    }
    // Round robin spread the connections; every request of each stayed on its conductor.
    for (dir, conductor) in dirs.iter().zip(&conductors) {
        let traced = connections(dir);
        assert!(
            !traced.is_empty(),
            "conductor {} served no connection",
            conductor.url
        );
        for name in traced {
            // The last editor may be gone a moment before its chain has ended and written the
            // last lines (up to `FLUSH_EVERY` old): the file is whole by then.
            let trace = until(
                &format!("{name}: every prompt of the connection"),
                Duration::from_secs(5),
                || {
                    let trace = std::fs::read_to_string(dir.join(&name)).unwrap();
                    let prompts = trace
                        .lines()
                        .filter(|l| {
                            l.contains(r#""from":"editor""#)
                                && l.contains(r#""method":"session/prompt""#)
                        })
                        .count();
                    if prompts == 4 {
                        Ok(trace)
                    } else {
                        Err(format!("{prompts} of 4 prompts traced"))
                    }
                },
            )
            .await;
            // The file names its connection, as its first line does.
            let header: serde_json::Value =
                serde_json::from_str(trace.lines().next().unwrap()).unwrap();
            let id = header["connection"].as_str().unwrap_or_default();
            assert!(
                !id.is_empty() && name == format!("trace.{id}.jsonl"),
                "{name}: {header}"
            );
        }
    }
    for dir in dirs {
        let _ = std::fs::remove_dir_all(dir);
    }
}
