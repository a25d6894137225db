//! Sessions that outlive their connection (`conductor agent --listen`, the session layer), with
//! the TypeScript SDK 2.4's WebSocket and Streamable HTTP clients as editors: an editor cut in
//! the middle of a turn (its process killed, its socket destroyed), and a new connection that
//! takes the session back with `session/load` — the same agent process, the turn's output and
//! its end, the next prompt; a permission request that waits for the next editor, or for its
//! deadline; a detached session that ends after its timeout.

use std::process::Stdio;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

use crate::common::*;
use crate::peers::ts_remote;
use crate::remote::{Listening, TOKEN};

/// `conductor agent --listen 127.0.0.1:0 --listen-token-file … EXTRA… COMPONENTS…`.
pub(crate) async fn conductor_listening(extra: &[&str], components: &[String]) -> Listening {
    crate::across_machines::conductor_listening(extra, components).await
}

/// What `reattach.mjs` printed, a JSON value a line, once it exited (with its exit signal).
pub(crate) struct Run {
    pub(crate) lines: Vec<Value>,
    pub(crate) signal: Option<i32>,
}

/// Runs `reattach.mjs ARGS` with `env`, to its end.
pub(crate) async fn reattach(script: &str, args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut words = script.split_whitespace();
    let mut child = Command::new(words.next().unwrap())
        .args(words)
        .args(args)
        .env("ACP_TOKEN", TOKEN)
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut lines = Vec::new();
    while let Some(line) = within("reattach.mjs's output", out.next_line())
        .await
        .unwrap()
    {
        lines.push(serde_json::from_str(&line).unwrap_or(Value::String(line)));
    }
    let status = within("reattach.mjs's end", child.wait()).await.unwrap();
    Run {
        lines,
        signal: std::os::unix::process::ExitStatusExt::signal(&status),
    }
}

/// The test agents among the conductor's processes (their pids).
pub(crate) fn agents_of(conductor: &Listening) -> Vec<u32> {
    let mut pids: Vec<u32> = processes::process_tree(conductor.child.id().unwrap())
        .into_iter()
        .filter(|(_, name)| name.starts_with("test-agent"))
        .map(|(pid, _)| pid)
        .collect();
    pids.sort_unstable();
    pids
}

/// Starts a session whose editor vanishes during `prompt` (`env` says when): its id, and the
/// agent processes running then.
pub(crate) async fn cut_during(
    script: &str,
    profile: &str,
    url: &str,
    prompt: &str,
    env: &[(&str, &str)],
) -> String {
    let run = reattach(script, &["start", profile, url, prompt], env).await;
    assert_eq!(run.signal, Some(9), "the editor vanished: {:?}", run.lines);
    run.lines[0]["sessionId"]
        .as_str()
        .unwrap_or_else(|| panic!("no session: {:?}", run.lines))
        .to_owned()
}

fn url_for(server: &Listening, profile: &str) -> String {
    if profile == "ws" {
        server.ws()
    } else {
        server.url.clone()
    }
}

/// A `sleep 1500` turn cut 300 ms in; a new connection's `session/load` gets the turn's
/// output and its end, from the same agent process, and the next prompt works. Over
/// WebSocket and Streamable HTTP, with and without a proxy in the chain.
#[tokio::test]
async fn an_editor_cut_mid_turn_takes_its_session_back_on_a_new_connection() {
    let Some(script) = ts_remote("reattach.mjs") else {
        return;
    };
    for components in [vec![agent()], vec![passthrough(), agent()]] {
        let server = conductor_listening(&[], &components).await;
        for profile in ["ws", "http"] {
            let url = url_for(&server, profile);
            let session = cut_during(
                &script,
                profile,
                &url,
                "sleep 1500",
                &[("ACP_CUT_AFTER_MS", "300")],
            )
            .await;
            let before = agents_of(&server);
            let run = reattach(
                &script,
                &["load", profile, &url, &session, "stream 3"],
                &[("ACP_UNTIL", "turn_ended")],
            )
            .await;
            let what = format!(
                "{profile}, {} components: {:?}",
                components.len(),
                run.lines
            );
            eprintln!("taken back: {what}");
            // The replay (the prompt, and what the turn said if it ended already), the
            // answer, the turn's end; then the next turn.
            assert!(
                run.lines
                    .contains(&serde_json::json!({"user": "sleep 1500"})),
                "{what}"
            );
            assert!(
                run.lines
                    .contains(&serde_json::json!({"update": "slept 1500 ms"})),
                "{what}"
            );
            assert!(
                run.lines
                    .contains(&serde_json::json!({"turnEnded": "end_turn"})),
                "{what}"
            );
            assert!(
                run.lines.contains(&serde_json::json!({"loaded": true})),
                "{what}"
            );
            assert_eq!(
                run.lines.last(),
                Some(
                    &serde_json::json!({"answer": "end_turn", "said": ["chunk 1", "chunk 2", "chunk 3"]})
                ),
                "{what}"
            );
            // The session's agent is the one that ran before, and the new connection,
            // which only took a session back, started no chain of its own.
            let after = agents_of(&server);
            assert_eq!(before, after, "{what}: the agents before and after");
        }
    }
}

/// An editor cut while the agent waits for its permission: the next editor that loads the
/// session is asked again, and its answer reaches the agent. With no one attaching, the
/// request gets a refusing editor's answer after its deadline, and the session goes on.
#[tokio::test]
async fn a_permission_request_waits_for_the_next_editor_or_its_deadline() {
    let Some(script) = ts_remote("reattach.mjs") else {
        return;
    };
    // The agent keeps its sessions in a directory too, where the test sees what it was told.
    let kept = std::env::temp_dir().join(format!("sacp-sessions-asks-{}", std::process::id()));
    let agent = format!("{} --sessions {}", quoted(&agent()), kept.display());
    let server = conductor_listening(
        &[
            "--editor-request-timeout",
            "3s",
            "--http-idle-timeout",
            "2s",
        ],
        &[passthrough(), agent],
    )
    .await;
    for profile in ["ws", "http"] {
        let url = url_for(&server, profile);
        // Taken up by the next editor.
        let session = cut_during(
            &script,
            profile,
            &url,
            "permission",
            &[("ACP_CUT_AT", "permission")],
        )
        .await;
        let run = reattach(
            &script,
            &["load", profile, &url, &session],
            &[("ACP_UNTIL", "turn_ended")],
        )
        .await;
        let what = format!("{profile}: {:?}", run.lines);
        assert!(
            run.lines
                .contains(&serde_json::json!({"permission": "write a file"})),
            "{what}"
        );
        assert!(
            run.lines
                .contains(&serde_json::json!({"update": "permission: allow"})),
            "{what}"
        );
        // Nobody comes: after its deadline the agent hears what a refusing editor says.
        let session = cut_during(
            &script,
            profile,
            &url,
            "permission",
            &[("ACP_CUT_AT", "permission")],
        )
        .await;
        let own = session
            .rsplit_once('@')
            .map_or(session.as_str(), |(own, _)| own);
        let file = kept.join(format!("{own}.jsonl"));
        until("the refusal to reach the agent", PATIENCE, || {
            let text = std::fs::read_to_string(&file).unwrap_or_default();
            if text.contains("permission: cancelled") {
                Ok(())
            } else {
                Err(text)
            }
        })
        .await;
        // The turn ended while nobody was there: its end is in the replay (over HTTP the
        // load's answer may come before the replay, which is on the session's own stream).
        let run = reattach(
            &script,
            &["load", profile, &url, &session, "stream 2"],
            &[("ACP_UNTIL", "turn_ended")],
        )
        .await;
        let what = format!("{profile}: {:?}", run.lines);
        assert!(
            run.lines
                .contains(&serde_json::json!({"update": "permission: cancelled"})),
            "{what}"
        );
        assert!(
            !run.lines.iter().any(|l| l.get("permission").is_some()),
            "asked again after its deadline: {what}"
        );
        assert_eq!(
            run.lines.last(),
            Some(&serde_json::json!({"answer": "end_turn", "said": ["chunk 1", "chunk 2"]})),
            "{what}"
        );
    }
    let _ = std::fs::remove_dir_all(&kept);
}

/// Waits until `pid` makes no system call for a quarter of a second: an agent with a turn
/// going on that waits for its output to be taken.
async fn held_back(pid: u32, what: impl Fn() -> String) {
    let mut last = processes::usage(pid).map(|(_, calls)| calls);
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
        let now = processes::usage(pid).map(|(_, calls)| calls);
        assert!(now.is_some(), "the agent is gone");
        if now == last {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the agent was never held back: {}",
            what()
        );
        last = now;
    }
}

/// What the conductor may take, streaming 200 MB to nobody: its session's record (32 MiB by
/// default) and what it takes anyway, with room to spare.
const RSS_BOUND_KIB: u64 = 96 * 1024;

/// A detached session streaming 200,000 updates of 1 KB to nobody: the conductor's memory
/// stays under [`RSS_BOUND_KIB`], the agent is held back (not failed), and the editor that
/// loads the session afterwards gets every update, in order, none twice.
#[tokio::test]
async fn a_detached_session_streaming_to_nobody_holds_its_agent_back_and_loses_nothing() {
    let Some(script) = ts_remote("reattach.mjs") else {
        return;
    };
    let server = conductor_listening(&[], &[agent()]).await;
    let url = server.ws();
    let session = cut_during(
        &script,
        "ws",
        &url,
        "stream 200000 1024",
        &[("ACP_CUT_AFTER_MS", "0")],
    )
    .await;
    let conductor = server.child.id().unwrap();
    let agent = agents_of(&server)[0];
    held_back(agent, || {
        format!(
            "the conductor holds {:?} KiB",
            processes::rss_kib(conductor)
        )
    })
    .await;
    let held = processes::peak_rss_kib(conductor).unwrap();
    eprintln!("a detached session streaming to nobody: the conductor peaked at {held} KiB");
    assert!(held < RSS_BOUND_KIB, "the conductor took {held} KiB");
    let run = reattach(
        &script,
        &["load", "ws", &url, &session],
        &[("ACP_UNTIL", "turn_ended"), ("ACP_CHECK_STREAM", "1")],
    )
    .await;
    assert_eq!(
        run.lines.last(),
        Some(&serde_json::json!({"chunks": 200_000, "wrong": []})),
        "{:?}",
        &run.lines[run.lines.len().saturating_sub(3)..]
    );
    let peak = processes::peak_rss_kib(conductor).unwrap();
    eprintln!("and at {peak} KiB once a client took the rest");
    assert!(peak < RSS_BOUND_KIB, "the conductor took {peak} KiB");
}

/// A TCP forwarder in front of a server whose connections can all be cut at once (both
/// sockets dropped, as a restarting proxy or a dropped network does).
pub(crate) struct Cutter {
    pub(crate) url: String,
    live: std::sync::Arc<std::sync::Mutex<Vec<tokio::task::AbortHandle>>>,
    pub(crate) cuts: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl Cutter {
    pub(crate) async fn before(url: &str) -> Cutter {
        let (scheme, rest) = url.split_once("://").unwrap();
        let target = rest.split('/').next().unwrap().to_owned();
        let path = rest[target.len()..].to_owned();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let ours = listener.local_addr().unwrap();
        let live = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let tasks = live.clone();
        tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                let target = target.clone();
                let task = tokio::spawn(async move {
                    if let Ok(mut server) = tokio::net::TcpStream::connect(&target).await {
                        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                    }
                });
                tasks.lock().unwrap().push(task.abort_handle());
            }
        });
        Cutter {
            url: format!("{scheme}://{ours}{path}"),
            live,
            cuts: std::sync::Arc::default(),
        }
    }

    /// Cuts every connection open now.
    pub(crate) fn cut(&self) {
        for task in self.live.lock().unwrap().drain(..) {
            task.abort();
        }
        self.cuts.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Streamable HTTP: the SSE stream is cut in the middle of a 10,000-update turn (every TCP
/// connection of the client dropped); `sacp`'s HTTP client resumes it with `Last-Event-ID`
/// and the editor sees every update once, in order.
#[tokio::test]
async fn a_cut_sse_stream_resumes_where_it_broke_and_nothing_comes_twice() {
    let server = conductor_listening(&[], &[passthrough(), agent()]).await;
    let cutter = Cutter::before(&server.url).await;
    let editor =
        sacp::testing::ScriptedEditor::new().connect(crate::remote::remote(&cutter.url).await);
    within("initialize", editor.initialize()).await.unwrap();
    let session = within("session/new", editor.new_session()).await.unwrap();
    let turn = session.prompt("stream 10000");
    let cut = async {
        for at in [2_000, 6_000] {
            let line = format!("message: chunk {at}");
            session
                .until_update(&line, |u| sacp::testing::line(u) == line)
                .await;
            cutter.cut();
        }
    };
    let (turn, ()) = within("the cut turn", async { tokio::join!(turn, cut) }).await;
    let turn = turn.expect("the turn survives its stream's cuts");
    let expected: Vec<String> = (1..=10_000)
        .map(|i| format!("message: chunk {i}"))
        .collect();
    let lines = turn.lines();
    assert_eq!(lines.len(), expected.len(), "every update once");
    assert!(lines == expected, "in order");
    assert_eq!(cutter.cuts.load(std::sync::atomic::Ordering::Relaxed), 2);
    // The connection goes on.
    let next = within("the next turn", session.prompt("stream 3"))
        .await
        .unwrap();
    assert_eq!(next.text(), "chunk 1chunk 2chunk 3");
}

/// `sacp`'s Streamable HTTP client on `url` with `jar` (the load balancer's cookie in it).
pub(crate) async fn through(
    url: &str,
    jar: &sacp::remote::CookieJar,
) -> sacp::testing::ScriptedEditor {
    let remote = sacp::remote::Remote::new(url)
        .header("Authorization", &format!("Bearer {TOKEN}"))
        .unwrap()
        .cookie_jar(jar.clone())
        .connect();
    let transport = within(&format!("a connection to {url}"), remote)
        .await
        .unwrap();
    let editor = sacp::testing::ScriptedEditor::new().connect(transport);
    within("initialize", editor.initialize()).await.unwrap();
    editor
}

/// The instance HAProxy's affinity cookie names.
fn instance(jar: &sacp::remote::CookieJar) -> String {
    jar.get("SACP_INSTANCE").expect("HAProxy's cookie")
}

/// Two conductors behind HAProxy (`deploy/haproxy.cfg`), each with a live `session-1` of its
/// agent: an editor whose connection ended in the middle of a turn connects again with its
/// cookie and takes its session back; without the cookie, on the other conductor, it gets
/// `-32002` naming its session — never the other conductor's `session-1`.
#[tokio::test]
async fn behind_haproxy_a_session_is_taken_back_with_the_cookie_and_named_without_it() {
    let conductors = [
        conductor_listening(&[], &[passthrough(), agent()]).await,
        conductor_listening(&[], &[passthrough(), agent()]).await,
    ];
    let Some((_haproxy, url)) =
        crate::across_machines::haproxy([&conductors[0], &conductors[1]]).await
    else {
        return;
    };
    // An editor starts a turn that waits, then its connection ends.
    let jar = sacp::remote::CookieJar::new();
    let editor = through(&url, &jar).await;
    let home = instance(&jar);
    let session = within("session/new", editor.new_session()).await.unwrap();
    let id = session.id().0.to_string();
    let waiting = session.prompt("wait");
    session
        .until_update("waiting", |u| sacp::testing::line(u) == "message: waiting")
        .await;
    editor.connection().close();
    drop(waiting);
    // Another editor, on the other conductor, gets a session of its own there: its agent
    // numbers its sessions as the first one's does.
    let mut other = None;
    for _ in 0..4 {
        let jar = sacp::remote::CookieJar::new();
        let editor = through(&url, &jar).await;
        if instance(&jar) != home {
            let session = within("session/new", editor.new_session()).await.unwrap();
            other = Some((editor, jar, session));
            break;
        }
    }
    let (_other, other_jar, other_session) = other.expect("round robin reaches both");
    let own = |id: &str| id.split('@').next().unwrap_or_default().to_owned();
    assert_eq!(
        own(&other_session.id().0),
        own(&id),
        "both agents numbered alike"
    );
    assert_ne!(other_session.id().0.to_string(), id);

    // With the cookie: the same conductor, the session, the turn still waiting.
    let back = through(&url, &jar).await;
    assert_eq!(instance(&jar), home);
    let taken = within("session/load", back.load_session(id.clone()))
        .await
        .unwrap();
    // The replay (over HTTP it may come after the load's answer: another stream).
    taken
        .until_update("the replayed `waiting`", |u| {
            sacp::testing::line(u) == "message: waiting"
        })
        .await;
    within("the cancel", taken.cancel()).await.unwrap();
    let next = within("the next turn", taken.prompt("stream 2"))
        .await
        .unwrap();
    assert_eq!(next.text(), "chunk 1chunk 2");

    // Without it (on the other conductor): the named error, not that conductor's session.
    let stranger = through(&url, &other_jar).await;
    assert_ne!(instance(&other_jar), home);
    let refused = within(
        "session/load elsewhere",
        stranger
            .connection()
            .request(sacp::acp::LoadSessionRequest::new(
                Vec::new(),
                "/",
                sacp::acp::SessionId::from(id.clone()),
            )),
    )
    .await
    .expect_err("another conductor's session");
    assert_eq!(refused.code, -32002, "{refused:?}");
    assert_eq!(refused.data, Some(serde_json::json!({"sessionId": id})));
    assert!(refused.message.contains(&id), "{}", refused.message);
}

/// The chain's trace shows who held its session: the connection that created it attached,
/// then detached when it left; the one that loaded it attached, then detached.
#[tokio::test]
async fn the_trace_shows_each_connection_attaching_to_the_session_and_leaving_it() {
    let dir = std::env::temp_dir().join(format!("sacp-sessions-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("trace.jsonl");
    let server = conductor_listening(&["--trace", trace.to_str().unwrap()], &[agent()]).await;
    let jar = sacp::remote::CookieJar::new();
    let first = through(&server.ws(), &jar).await;
    let session = within("session/new", first.new_session()).await.unwrap();
    let id = session.id().0.to_string();
    first.connection().close();
    let second = through(&server.ws(), &jar).await;
    within("session/load", second.load_session(id.clone()))
        .await
        .unwrap();
    second.connection().close();
    let events = until("the session's four events in a trace", PATIENCE, || {
        let files: Vec<std::path::PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .collect();
        let events: Vec<Value> = files
            .iter()
            .filter_map(|f| std::fs::read_to_string(f).ok())
            .flat_map(|text| {
                text.lines()
                    .filter(|l| l.contains(r#""type":"session""#))
                    .map(|l| serde_json::from_str(l).unwrap())
                    .collect::<Vec<Value>>()
            })
            .collect();
        if events.len() == 4 {
            Ok(events)
        } else {
            Err(format!("{events:?}"))
        }
    })
    .await;
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["attached", "detached", "attached", "detached"],
        "{events:?}"
    );
    assert!(
        events.iter().all(|e| e["session"] == id.as_str()),
        "{events:?}"
    );
    assert_eq!(events[0]["connection"], events[1]["connection"]);
    assert_eq!(events[2]["connection"], events[3]["connection"]);
    assert_ne!(events[0]["connection"], events[2]["connection"]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A session whose chain ended (its agent crashed) is named as ended on a later
/// `session/load`: `-32002` saying why, not "not held here" as for a stranger's id.
#[tokio::test]
async fn a_session_whose_chain_ended_is_refused_as_ended_on_load() {
    let server = conductor_listening(&[], &[agent()]).await;
    let jar = sacp::remote::CookieJar::new();
    let editor = through(&server.ws(), &jar).await;
    let session = within("session/new", editor.new_session()).await.unwrap();
    let id = session.id().0.to_string();
    let crashed = within("the crashing turn", session.prompt("crash 3")).await;
    assert!(crashed.is_err(), "a turn whose agent exited fails");

    let back = through(&server.ws(), &jar).await;
    let refused = within(
        "session/load of the ended session",
        back.connection()
            .request(sacp::acp::LoadSessionRequest::new(
                Vec::new(),
                "/",
                sacp::acp::SessionId::from(id.clone()),
            )),
    )
    .await
    .expect_err("the session ended with its chain");
    assert_eq!(refused.code, -32002, "{refused:?}");
    assert_eq!(
        refused.data,
        Some(serde_json::json!({"sessionId": id, "ended": "its chain ended"}))
    );
    assert!(
        refused.message.contains(&id) && refused.message.contains("ended"),
        "{}",
        refused.message
    );
}

/// Closes the session `id` with `session/close`, which must succeed.
pub(crate) async fn close(editor: &sacp::testing::ScriptedEditor, id: &str) {
    let params = sacp::jsonrpc::RawJson::to_raw(&serde_json::json!({"sessionId": id}));
    within(
        "session/close",
        editor
            .connection()
            .request_raw("session/close", Some(params.unwrap())),
    )
    .await
    .unwrap_or_else(|e| panic!("the session {id} closes: {e:?}"));
}

/// A `session/load` of `id` on a new connection through `jar`: the refusal it gets.
async fn refused_load(server: &Listening, jar: &sacp::remote::CookieJar, id: &str) -> sacp::Error {
    let back = through(&server.ws(), jar).await;
    within(
        "session/load of an ended session",
        back.connection()
            .request(sacp::acp::LoadSessionRequest::new(
                Vec::new(),
                "/",
                sacp::acp::SessionId::from(id.to_owned()),
            )),
    )
    .await
    .expect_err("the session ended")
}

/// The two other ends of a session, each named on a later `session/load` with why once its
/// chain is gone: closed by a client (`session/close`), and left without a client past
/// `--detached-timeout`, after which the chain, with no session and no client left, ends.
/// While the chain lives, a load of the closed session is the agent's to answer (an agent
/// that saves its sessions may take it back).
#[tokio::test]
async fn closed_and_timed_out_sessions_are_refused_as_ended_on_load() {
    let server = conductor_listening(&["--detached-timeout", "1s"], &[agent()]).await;
    let jar = sacp::remote::CookieJar::new();
    let editor = through(&server.ws(), &jar).await;
    let closed = within("session/new", editor.new_session()).await.unwrap();
    let closed_id = closed.id().0.to_string();
    let left = within("session/new", editor.new_session()).await.unwrap();
    let left_id = left.id().0.to_string();
    let agents = processes::children(server.child.id().unwrap());
    assert_eq!(agents.len(), 1, "one chain, its agent: {agents:?}");
    close(&editor, &closed_id).await;
    let asked = refused_load(&server, &jar, &closed_id).await;
    assert!(
        asked.code == -32602 && asked.message.contains("the test agent has no session"),
        "the agent answers while its chain lives: {asked:?}"
    );

    // The editor leaves; its other session waits for a client the timeout long, then ends,
    // and its chain with it. (Each later connection's `initialize` starts a chain of its own.)
    editor.connection().close();
    drop(left);
    drop(editor);
    until("the detached session's chain gone", PATIENCE, || {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", agents[0]));
        match stat {
            Ok(stat)
                if !stat
                    .rsplit(')')
                    .next()
                    .unwrap_or("")
                    .trim_start()
                    .starts_with('Z') =>
            {
                Err("the agent still runs".to_owned())
            }
            _ => Ok(()),
        }
    })
    .await;
    for (id, why) in [
        (
            &left_id,
            "no client took it back within the detached timeout",
        ),
        (&closed_id, "it was closed"),
    ] {
        let refused = refused_load(&server, &jar, id).await;
        assert_eq!(refused.code, -32002, "{refused:?}");
        assert_eq!(
            refused.data,
            Some(serde_json::json!({"sessionId": id, "ended": why}))
        );
    }
}

/// A subagent's session ends with the session it runs in: once the parent is closed, the
/// child is named as ended, and why, like any session that ended here (the layer keeps no
/// subagent alive for the detached timeout after its parent).
#[tokio::test]
async fn a_closed_sessions_subagents_end_with_it() {
    let server = conductor_listening(&[], &[agent()]).await;
    let jar = sacp::remote::CookieJar::new();
    let editor = through(&server.ws(), &jar).await;
    let parent = within("session/new", editor.new_session()).await.unwrap();
    let parent_id = parent.id().0.to_string();
    within(
        "the subagent's start",
        parent.prompt("subagent helper").into_future(),
    )
    .await
    .unwrap();
    // The test agent calls its first subagent `c1`; the layer names it as its parent's chain.
    let (_, tag) = parent_id.split_once('@').expect("an id of the layer's");
    let child_id = format!("c1@{tag}");
    let ask_child = || {
        let params = serde_json::json!({"sessionId": child_id, "modeId": "x"});
        editor.connection().request_raw(
            "session/set_mode",
            Some(sacp::jsonrpc::RawJson::to_raw(&params).unwrap()),
        )
    };
    // The child is held while its parent is: a request about it reaches the agent.
    let held = within("session/set_mode of the child", ask_child()).await;
    assert!(
        held.as_ref().err().is_none_or(|e| e.code != -32002),
        "the child is held: {held:?}"
    );
    close(&editor, &parent_id).await;
    let gone = within("session/set_mode of the child", ask_child())
        .await
        .expect_err("the child ended with its parent");
    assert_eq!(gone.code, -32002, "{gone:?}");
    assert_eq!(
        gone.data,
        Some(serde_json::json!({
            "sessionId": child_id,
            "ended": "the session it was a subagent of was closed",
        }))
    );
}
