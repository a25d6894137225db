//! Sessions that survive a restart (`conductor agent --listen --journal FILE`): a conductor
//! killed with `SIGKILL` in the middle of a session's fourth turn, its children gone with it,
//! and a new conductor on the same journal that restores the session a reconnecting editor
//! loads — by each path in turn: an agent that resumes, one that only loads, one that does
//! neither (a new session created with the journal's history).

use std::time::Duration;

use sacp::jsonrpc::Message;
use serde_json::{Value, json};

use crate::across_machines::running;
use crate::common::*;
use crate::raw::{Raw, params_of, said};
use crate::remote::{Listening, remote};

/// The test agents among `conductor`'s processes.
pub(crate) fn agents_of(conductor: &Listening) -> Vec<u32> {
    processes::process_tree(conductor.child.id().unwrap())
        .into_iter()
        .filter(|(_, name)| name.starts_with("test-agent"))
        .map(|(pid, _)| pid)
        .collect()
}

pub(crate) async fn editor(url: &str) -> Raw {
    let mut editor = Raw::new("editor", remote(url).await);
    let init = json!({"protocolVersion": 1, "clientCapabilities": {}});
    editor.request("initialize", init).await.unwrap();
    editor
}

pub(crate) async fn prompt(editor: &mut Raw, session: &str, text: &str) -> Value {
    let params = json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]});
    editor.request("session/prompt", params).await.unwrap()
}

/// How many times `text` was a user's message in the agent's own records (every session file
/// in `dirs`).
pub(crate) fn prompted(dirs: &[&std::path::Path], text: &str) -> usize {
    dirs.iter()
        .flat_map(|dir| std::fs::read_dir(dir).into_iter().flatten().flatten())
        .filter_map(|file| std::fs::read_to_string(file.path()).ok())
        .flat_map(|t| t.lines().map(str::to_owned).collect::<Vec<_>>())
        .filter_map(|l| serde_json::from_str::<Value>(&l).ok())
        .filter(|u| u["sessionUpdate"] == "user_message_chunk" && u["content"]["text"] == text)
        .count()
}

/// The lines of `session`'s entries in the SQLite journal `db`, in order: each chunk's LZ4
/// frame (or, written by an older conductor, text) read back. Empty when it cannot be read.
pub(crate) fn sqlite_lines(db: &std::path::Path, session: &str) -> String {
    use std::io::Read as _;
    let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY;
    let Ok(conn) = rusqlite::Connection::open_with_flags(db, flags) else {
        return String::new();
    };
    let _ = conn.busy_timeout(Duration::from_secs(5));
    let Ok(mut rows) = conn.prepare("SELECT lines FROM chunks WHERE session = ?1 ORDER BY first")
    else {
        return String::new();
    };
    let chunks = rows.query_map([session], |row| {
        Ok(match row.get_ref(0)? {
            rusqlite::types::ValueRef::Blob(frame) => {
                let mut text = String::new();
                lz4_flex::frame::FrameDecoder::new(frame)
                    .read_to_string(&mut text)
                    .expect("a journal chunk is an LZ4 frame of text");
                text
            }
            other => other.as_str().unwrap_or_default().to_owned(),
        })
    });
    chunks
        .map(|chunks| chunks.flatten().collect())
        .unwrap_or_default()
}

/// Whether the journal `spec` (a SQLite file, or a `postgres://` URL) holds an entry of
/// `session` with `text` in it: written, not only on its way to the writer.
pub(crate) fn journaled(spec: &str, session: &str, text: &str) -> bool {
    let (spec, session, text) = (spec.to_owned(), session.to_owned(), text.to_owned());
    // A thread of its own: the PostgreSQL client runs a runtime, which a test's cannot hold.
    std::thread::spawn(move || {
        if spec.starts_with("postgres") {
            let Ok(mut client) = postgres::Client::connect(&spec, postgres::NoTls) else {
                return false;
            };
            let like = format!("%{text}%");
            client
                .query_one(
                    "SELECT count(*) FROM sacp_chunks WHERE session = $1 AND lines LIKE $2",
                    &[&session, &like],
                )
                .is_ok_and(|row| row.get::<_, i64>(0) > 0)
        } else {
            sqlite_lines(std::path::Path::new(&spec), &session).contains(&text)
        }
    })
    .join()
    .unwrap_or(false)
}

/// Waits until the journal `spec` holds `text` of `session` (see [`journaled`]).
pub(crate) async fn until_journaled(spec: &str, session: &str, text: &str) {
    until(&format!("{text:?} in the journal"), PATIENCE, || {
        if journaled(spec, session, text) {
            Ok(())
        } else {
            Err("not yet")
        }
    })
    .await;
}

#[tokio::test]
async fn a_session_killed_mid_turn_is_restored_by_a_new_conductor_on_its_journal() {
    for offers in ["resume,load", "load", "none"] {
        let base = std::env::temp_dir().join(format!(
            "sacp-restart-{}-{}",
            std::process::id(),
            offers.replace(',', "-")
        ));
        let _ = std::fs::remove_dir_all(&base);
        let journal = base.join("journal.db");
        let (before, after) = (base.join("agent-before"), base.join("agent-after"));
        std::fs::create_dir_all(&before).unwrap();
        std::fs::create_dir_all(&after).unwrap();
        // An agent that does neither has lost its own copy: it starts from an empty directory.
        let agent_dir = |restarted: bool| {
            if restarted && offers == "none" {
                &after
            } else {
                &before
            }
        };
        let agent = |restarted: bool| {
            format!(
                "{} --sessions {} --offers {offers}",
                quoted(&agent()),
                agent_dir(restarted).display()
            )
        };
        let trace = base.join("trace.jsonl");
        let args = [
            "--journal",
            journal.to_str().unwrap(),
            "--trace",
            trace.to_str().unwrap(),
        ];
        let mut first = crate::across_machines::conductor_listening(&args, &[agent(false)]).await;
        let mut ed = editor(&first.ws()).await;
        let new = json!({"cwd": "/tmp", "mcpServers": []});
        let session = ed.request("session/new", new).await.unwrap()["sessionId"]
            .as_str()
            .unwrap()
            .to_owned();
        for _ in 0..3 {
            assert_eq!(
                prompt(&mut ed, &session, "stream 3").await["stopReason"],
                "end_turn"
            );
        }
        let params =
            json!({"sessionId": session, "prompt": [{"type": "text", "text": "sleep 30000"}]});
        ed.ask("session/prompt", params).await;
        until("the fourth prompt to reach the agent", PATIENCE, || {
            if prompted(&[&before], "sleep 30000") == 1 {
                Ok(())
            } else {
                Err("not yet")
            }
        })
        .await;
        // And to the journal, with everything before it (the writer writes in order).
        until_journaled(journal.to_str().unwrap(), &session, "sleep 30000").await;
        let agents = agents_of(&first);
        assert_eq!(agents.len(), 1, "{agents:?}");
        // SIGKILL: no grace, nothing said; its children go with it (their parent-death signal).
        first.kill().await;
        until("the agent to go with its conductor", PATIENCE, || {
            if agents.iter().any(|p| running(*p)) {
                Err("still running")
            } else {
                Ok(())
            }
        })
        .await;
        drop(ed);

        let second = crate::across_machines::conductor_listening(&args, &[agent(true)]).await;
        let mut ed = editor(&second.ws()).await;
        let load = json!({"sessionId": session, "cwd": "/tmp", "mcpServers": []});
        let id = ed.ask("session/load", load).await;
        let loaded = ed.answer_to(&id).await;
        assert!(loaded.is_ok(), "{offers}: {loaded:?}");
        // The replay: three turns, the fourth shown interrupted.
        let ended = ed
            .until("the interrupted turn's end", |m| {
                matches!(m, Message::Notification(n) if n.method == "_sacp/turn_ended"
                    && params_of(n.params.as_ref())["stopReason"] == "cancelled")
            })
            .await;
        drop(ended);
        let mut lines: Vec<String> = ed
            .updates()
            .iter()
            .filter_map(|u| {
                let kind = u["update"]["sessionUpdate"].as_str()?;
                let text = u["update"]["content"]["text"].as_str()?;
                Some(format!("{kind}: {text}"))
            })
            .collect();
        let mut want = Vec::new();
        for _ in 0..3 {
            want.push("user_message_chunk: stream 3".to_owned());
            for n in 1..=3 {
                want.push(format!("agent_message_chunk: chunk {n}"));
            }
        }
        want.push("user_message_chunk: sleep 30000".to_owned());
        want.push(format!(
            "agent_message_chunk: {}",
            "[sacp] This turn was interrupted: the conductor restarted before it ended."
        ));
        lines.retain(|l| !l.is_empty());
        assert_eq!(lines, want, "{offers}");
        ed.clear();
        let next = prompt(&mut ed, &session, "stream 2").await;
        assert_eq!(next["stopReason"], "end_turn", "{offers}");
        let updates = ed.updates();
        let texts: Vec<&str> = updates.iter().filter_map(said).collect();
        assert_eq!(texts, ["chunk 1", "chunk 2"], "{offers}");
        // The trace says which path ran.
        let want = match offers {
            "resume,load" => "restored by session/resume",
            "load" => "restored by session/load",
            _ => "restored with its history",
        };
        until("the restore in a trace", PATIENCE, || {
            let found = std::fs::read_dir(&base)
                .unwrap()
                .flatten()
                .filter_map(|f| std::fs::read_to_string(f.path()).ok())
                .any(|t| {
                    t.lines()
                        .any(|l| l.contains(r#""type":"session""#) && l.contains(want))
                });
            if found {
                Ok(())
            } else {
                Err(format!("no {want:?} yet"))
            }
        })
        .await;
        // No prompt ran twice.
        assert_eq!(prompted(&[&before, &after], "sleep 30000"), 1, "{offers}");
        assert_eq!(prompted(&[&before, &after], "stream 2"), 1, "{offers}");
        drop(second);
        tokio::time::sleep(Duration::from_millis(10)).await;
        let _ = std::fs::remove_dir_all(&base);
    }
}

/// The PostgreSQL database the shared journal's tests use (`SACP_TEST_POSTGRES`, which
/// `.ci/run` sets once it started the server); `None` (and a message) where there is none.
pub(crate) fn postgres() -> Option<String> {
    match std::env::var("SACP_TEST_POSTGRES") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            crate::peers::missing(
                "PostgreSQL",
                "SACP_TEST_POSTGRES does not name a database (.ci/run starts one and sets it)",
            );
            None
        }
    }
}

/// A conductor listening on `addr` with `args` and `components` (and the tests' token).
pub(crate) async fn conductor_on(addr: &str, args: &[&str], components: &[String]) -> Listening {
    let token = std::env::temp_dir().join(format!("sacp-restart-token-{}", std::process::id()));
    std::fs::write(&token, format!("{}\n", crate::remote::TOKEN)).unwrap();
    let mut all = vec![
        "agent",
        "--listen",
        addr,
        "--listen-token-file",
        token.to_str().unwrap(),
    ];
    all.extend(args);
    all.extend(components.iter().map(String::as_str));
    Listening::start(conductor(), &all).await
}

/// An editor through `url` with `jar` (the load balancer's cookie), initialized.
pub(crate) async fn editor_with(url: &str, jar: &sacp::remote::CookieJar) -> Raw {
    let connecting = sacp::remote::Remote::new(url)
        .header("Authorization", &format!("Bearer {}", crate::remote::TOKEN))
        .unwrap()
        .cookie_jar(jar.clone())
        .connect();
    let transport = within("a connection through HAProxy", connecting)
        .await
        .unwrap();
    let mut editor = Raw::new("editor", transport);
    let init = json!({"protocolVersion": 1, "clientCapabilities": {}});
    editor.request("initialize", init).await.unwrap();
    editor
}

/// Two conductors behind HAProxy (`deploy/haproxy.cfg`) sharing a PostgreSQL journal: the
/// one holding a session is killed in the middle of a turn; the editor connects again with its
/// cookie, HAProxy sends it to the other, whose `session/load` restores the session (its
/// agent never saw it: resume and load fail, the history path runs) with the same history; the
/// next prompt works, nothing ran twice. Then the killed one comes back and takes new
/// sessions.
#[tokio::test]
async fn a_session_of_a_killed_conductor_is_restored_by_the_other_from_a_shared_postgres_journal() {
    let Some(pg) = postgres() else {
        return;
    };
    let base = std::env::temp_dir().join(format!("sacp-pg-restart-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    let dirs = [base.join("agent-1"), base.join("agent-2")];
    let agent_of = |i: usize| {
        std::fs::create_dir_all(&dirs[i]).unwrap();
        format!("{} --sessions {}", quoted(&agent()), dirs[i].display())
    };
    let free = || {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .unwrap()
            .port();
        format!("127.0.0.1:{port}")
    };
    let addrs = [free(), free()];
    // Named as HAProxy names them (their affinity cookies).
    let names = ["c1", "c2"];
    let args = |i: usize| ["--journal", pg.as_str(), "--instance", names[i]];
    let mut conductors = [
        conductor_on(&addrs[0], &args(0), &[agent_of(0)]).await,
        conductor_on(&addrs[1], &args(1), &[agent_of(1)]).await,
    ];
    let Some((_haproxy, url)) =
        crate::across_machines::haproxy([&conductors[0], &conductors[1]]).await
    else {
        return;
    };
    let url = url.replacen("http", "ws", 1);
    let jar = sacp::remote::CookieJar::new();
    let mut ed = editor_with(&url, &jar).await;
    let home = usize::from(jar.get("SACP_INSTANCE").as_deref() == Some("c2"));
    let new = json!({"cwd": "/tmp", "mcpServers": []});
    let session = ed.request("session/new", new).await.unwrap()["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    for _ in 0..2 {
        assert_eq!(
            prompt(&mut ed, &session, "stream 3").await["stopReason"],
            "end_turn"
        );
    }
    let params = json!({"sessionId": session, "prompt": [{"type": "text", "text": "sleep 30000"}]});
    ed.ask("session/prompt", params).await;
    until("the third prompt to reach the agent", PATIENCE, || {
        if prompted(&[&dirs[home]], "sleep 30000") == 1 {
            Ok(())
        } else {
            Err("not yet")
        }
    })
    .await;
    until_journaled(&pg, &session, "sleep 30000").await;
    conductors[home].kill().await;
    let killed = std::time::Instant::now();
    drop(ed);

    // The same cookie: HAProxy sends the connection to the other conductor, which takes the
    // session over at once (the lease of a killed conductor ends with its process).
    let mut ed = editor_with(&url, &jar).await;
    let load = json!({"sessionId": session, "cwd": "/tmp", "mcpServers": []});
    let id = ed.ask("session/load", load.clone()).await;
    let loaded = ed.answer_to(&id).await;
    assert!(loaded.is_ok(), "{loaded:?}");
    let restored = killed.elapsed();
    eprintln!("restored {restored:?} after the kill");
    assert!(
        restored < Duration::from_secs(11),
        "the worst case stated for a lease to end is 11 s; restored after {restored:?}"
    );
    ed.until("the interrupted turn's end", |m| {
        matches!(m, Message::Notification(n) if n.method == "_sacp/turn_ended"
            && params_of(n.params.as_ref())["stopReason"] == "cancelled")
    })
    .await;
    let texts: Vec<String> = ed
        .updates()
        .iter()
        .filter_map(|u| u["update"]["content"]["text"].as_str().map(str::to_owned))
        .collect();
    let mut want = Vec::new();
    for _ in 0..2 {
        want.push("stream 3".to_owned());
        want.extend((1..=3).map(|n| format!("chunk {n}")));
    }
    want.push("sleep 30000".to_owned());
    want.push("[sacp] This turn was interrupted: the conductor restarted before it ended.".into());
    assert_eq!(texts, want);
    ed.clear();
    let next = prompt(&mut ed, &session, "stream 2").await;
    assert_eq!(next["stopReason"], "end_turn");
    let updates = ed.updates();
    assert_eq!(
        updates.iter().filter_map(said).collect::<Vec<_>>(),
        ["chunk 1", "chunk 2"]
    );
    let [one, two] = &dirs;
    assert_eq!(prompted(&[one, two], "sleep 30000"), 1);
    assert_eq!(prompted(&[one, two], "stream 2"), 1);

    // The killed conductor comes back on its address (a new holder, under its old name): it
    // does not take the session back while the other holds it, and says where it lives; a
    // client that sets its affinity cookie to that name is sent there.
    conductors[home] = conductor_on(&addrs[home], &args(home), &[agent_of(home)]).await;
    let holder = names[1 - home];
    let mut direct = editor(&conductors[home].ws()).await;
    let refused = direct
        .request("session/load", load.clone())
        .await
        .expect_err("held by the other");
    assert_eq!(refused["code"], -32002, "{refused}");
    assert_eq!(refused["data"]["heldBy"], holder, "{refused}");
    let sent = sacp::remote::CookieJar::new();
    sent.set("SACP_INSTANCE", holder);
    let mut there = editor_with(&url, &sent).await;
    let taken = there.request("session/load", load).await;
    assert!(taken.is_ok(), "{taken:?}");
    assert_eq!(prompted(&[&dirs[home]], "stream 2"), 0);
    let back = if home == 0 { "c1" } else { "c2" };
    let mut served = false;
    for _ in 0..50 {
        let jar = sacp::remote::CookieJar::new();
        let mut ed = editor_with(&url, &jar).await;
        if jar.get("SACP_INSTANCE").as_deref() == Some(back) {
            let new = json!({"cwd": "/tmp", "mcpServers": []});
            let created = ed.request("session/new", new).await.unwrap();
            assert!(created["sessionId"].is_string(), "{created}");
            served = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(
        served,
        "the conductor that came back was never given a connection"
    );
    let _ = std::fs::remove_dir_all(&base);
}

/// A journal's PostgreSQL that cannot be reached at start: a clear error (without the
/// password) and exit status 1.
#[tokio::test]
async fn an_unreachable_postgres_journal_is_a_clear_error_at_start() {
    let token = std::env::temp_dir().join(format!("sacp-pg-token-{}", std::process::id()));
    std::fs::write(&token, "t0ken\n").unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let out = tokio::process::Command::new(conductor())
        .args(["agent", "--listen", "127.0.0.1:0", "--listen-token-file"])
        .arg(&token)
        .arg("--journal")
        .arg(format!("postgres://sacp:s3cret@127.0.0.1:{port}/sacp"))
        .arg(agent())
        .stdin(std::process::Stdio::null())
        .output();
    let out = within("the conductor's end", out).await.unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("cannot reach the journal's PostgreSQL at postgres://sacp@127.0.0.1:"),
        "{stderr}"
    );
    assert!(!stderr.contains("s3cret"), "{stderr}");
}

/// A TCP relay to `to` on a free port of loopback, which the test can cut (every connection
/// closed, none accepted) and mend.
pub(crate) struct Relay {
    pub(crate) addr: std::net::SocketAddr,
    open: std::sync::Arc<std::sync::atomic::AtomicBool>,
    cut: tokio::sync::watch::Sender<u64>,
}

impl Relay {
    pub(crate) async fn start(to: std::net::SocketAddr) -> Relay {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let open = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
        let (cut, cuts) = tokio::sync::watch::channel(0u64);
        let accepting = open.clone();
        tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                if !accepting.load(std::sync::atomic::Ordering::SeqCst) {
                    continue;
                }
                let mut cuts = cuts.clone();
                // Only cuts from now on end it.
                cuts.borrow_and_update();
                tokio::spawn(async move {
                    let Ok(mut server) = tokio::net::TcpStream::connect(to).await else {
                        return;
                    };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
                        _ = cuts.changed() => {}
                    }
                });
            }
        });
        Relay { addr, open, cut }
    }

    pub(crate) fn cut(&self) {
        self.open.store(false, std::sync::atomic::Ordering::SeqCst);
        self.cut.send_modify(|n| *n += 1);
    }

    pub(crate) fn mend(&self) {
        self.open.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

/// The PostgreSQL journal lost while the conductor runs (its connection cut, no new one taken):
/// the session goes on (fail-open); the writer tries again for a while, then counts what it
/// could not write, and once the database is back the store has the count within a second,
/// before any new turn; a restore says how many records of the session the journal lost
/// (`_sacp/history_incomplete`); and the turns after the outage are journaled.
#[tokio::test]
async fn a_postgres_journal_lost_while_running_keeps_the_sessions_going_and_says_what_it_lost() {
    let Some(pg) = postgres() else {
        return;
    };
    // The same database through a relay the test cuts.
    let (head, rest) = pg.split_once('@').expect("a URL with user@host");
    let (host_port, db) = rest.split_once('/').expect("a URL with a database");
    let to: std::net::SocketAddr = tokio::net::lookup_host(host_port)
        .await
        .unwrap()
        .next()
        .unwrap();
    let relay = Relay::start(to).await;
    let through = format!("{head}@{}/{db}", relay.addr);
    let mut first =
        crate::across_machines::conductor_listening(&["--journal", &through], &[agent()]).await;
    let mut ed = editor(&first.ws()).await;
    let new = json!({"cwd": "/tmp", "mcpServers": []});
    let session = ed.request("session/new", new).await.unwrap()["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        prompt(&mut ed, &session, "stream 2").await["stopReason"],
        "end_turn"
    );
    until_journaled(&pg, &session, "turn_ended").await;
    relay.cut();
    ed.clear();
    assert_eq!(
        prompt(&mut ed, &session, "stream 3").await["stopReason"],
        "end_turn"
    );
    let updates = ed.updates();
    assert_eq!(
        updates.iter().filter_map(said).collect::<Vec<_>>(),
        ["chunk 1", "chunk 2", "chunk 3"],
        "the session goes on without its journal"
    );
    // The writer tried again on new connections, then gave up on the batch.
    first.log.until("the journal could not write").await;
    assert!(
        !first
            .log
            .lines_with("trying again on a new connection")
            .is_empty(),
        "the writer tried again before it counted anything lost"
    );
    relay.mend();
    let mended = std::time::Instant::now();
    // Counted in the store as soon as it takes writes again, with nothing else written.
    let lost = until("the losses in the store", PATIENCE, || {
        match lost_in(&pg, &session) {
            n if n > 0 => Ok(n),
            _ => Err("not yet"),
        }
    })
    .await;
    let counted = mended.elapsed();
    eprintln!("the losses were in the store {counted:?} after the database came back");
    assert!(
        counted < Duration::from_secs(5),
        "counted {counted:?} after the database came back, past the stated second (and slack)"
    );
    assert_eq!(
        prompt(&mut ed, &session, "stream 1").await["stopReason"],
        "end_turn"
    );
    // Written once the database is back.
    until_journaled(&pg, &session, "stream 1").await;
    first.kill().await;

    let second = crate::across_machines::conductor_listening(&["--journal", &pg], &[agent()]).await;
    let mut ed = editor(&second.ws()).await;
    let load = json!({"sessionId": session, "cwd": "/tmp", "mcpServers": []});
    let id = ed.ask("session/load", load).await;
    assert!(ed.answer_to(&id).await.is_ok());
    let notice = ed
        .until(
            "the notice of lost records",
            |m| matches!(m, Message::Notification(n) if n.method == "_sacp/history_incomplete"),
        )
        .await;
    let Message::Notification(notice) = notice else {
        unreachable!()
    };
    let told = params_of(notice.params.as_ref())["lost"].as_u64().unwrap();
    // The second turn's prompt, three chunks and end, at least, were not written.
    assert!(told >= 5 && lost >= 5, "{told} told, {lost} counted");
}

/// The records of `session` the PostgreSQL journal `pg` counts as lost.
pub(crate) fn lost_in(pg: &str, session: &str) -> i64 {
    let (pg, session) = (pg.to_owned(), session.to_owned());
    std::thread::spawn(move || {
        let mut client = postgres::Client::connect(&pg, postgres::NoTls).ok()?;
        let row = client
            .query_opt("SELECT lost FROM sacp_sessions WHERE id = $1", &[&session])
            .ok()??;
        Some(row.get::<_, i64>(0))
    })
    .join()
    .ok()
    .flatten()
    .unwrap_or(0)
}
