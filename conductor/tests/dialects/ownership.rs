//! One conductor holds a session at a time, across conductors sharing a journal (SQLite on one
//! machine, PostgreSQL across machines): a load at a conductor that does not hold a live
//! session is refused with where it lives; a conductor deposed behind its back (its lease lost,
//! the session taken over) has its writes refused by the store and its clients told; the
//! writer tries again on a new connection after the server dropped it; and a conductor killed
//! at any point of a long stream leaves a journal whose restore is a whole prefix of what its
//! client saw, losing at most what reached it in the last write's window.

use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sacp::jsonrpc::{
    Id, Inbound, Message, MessageReader as _, MessageWriter as _, RawJson, Request, Transport as _,
};
use serde_json::{Value, json};

use crate::common::*;
use crate::raw::{Raw, params_of, said};
use crate::remote::{Listening, remote};
use crate::restart::{
    Relay, conductor_on, editor, lost_in, postgres, prompt, prompted, until_journaled,
};

/// A fresh directory for one test, with the test agent's session directories `agents`.
fn fresh(name: &str, agents: &[&str]) -> (PathBuf, Vec<PathBuf>) {
    let base = std::env::temp_dir().join(format!("sacp-own-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    let dirs: Vec<PathBuf> = agents.iter().map(|a| base.join(a)).collect();
    for dir in &dirs {
        std::fs::create_dir_all(dir).unwrap();
    }
    (base, dirs)
}

/// The test agent keeping its sessions (and so the prompts it got) in `dir`.
fn agent_in(dir: &std::path::Path) -> String {
    format!("{} --sessions {}", quoted(&agent()), dir.display())
}

/// A conductor named `instance` on the journal `spec` with the agent of `dir`.
async fn conductor_named(spec: &str, instance: &str, dir: &std::path::Path) -> Listening {
    let args = ["--journal", spec, "--instance", instance];
    conductor_on("127.0.0.1:0", &args, &[agent_in(dir)]).await
}

async fn new_session(ed: &mut Raw) -> String {
    let new = json!({"cwd": "/tmp", "mcpServers": []});
    ed.request("session/new", new).await.unwrap()["sessionId"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Asserts that `refused` is the `-32002` naming `session` and the conductor `by`.
fn held_by(refused: Result<Value, Value>, session: &str, by: &str) {
    let e = refused.expect_err("refused");
    assert_eq!(e["code"], -32002, "{e}");
    assert_eq!(e["data"]["sessionId"], session, "{e}");
    assert_eq!(e["data"]["heldBy"], by, "{e}");
    let message = e["message"].as_str().unwrap();
    assert!(message.contains(session) && message.contains(by), "{e}");
}

/// Conductor A holds a live session; a client that reaches B directly and loads, resumes or
/// attaches it is refused with where it lives; A alone ever runs its prompts.
async fn a_live_session_is_refused_where_it_is_not_held(spec: &str, base: &str) {
    let (base, dirs) = fresh(base, &["a", "b"]);
    let a = conductor_named(spec, "c1", &dirs[0]).await;
    let b = conductor_named(spec, "c2", &dirs[1]).await;
    let mut at_a = editor(&a.ws()).await;
    let session = new_session(&mut at_a).await;
    assert_eq!(
        prompt(&mut at_a, &session, "stream 2").await["stopReason"],
        "end_turn"
    );
    until_journaled(spec, &session, "turn_ended").await;

    let mut at_b = editor(&b.ws()).await;
    let load = json!({"sessionId": session, "cwd": "/tmp", "mcpServers": []});
    held_by(
        at_b.request("session/load", load.clone()).await,
        &session,
        "c1",
    );
    held_by(at_b.request("session/resume", load).await, &session, "c1");
    let attach = json!({"sessionId": session, "role": "controller"});
    held_by(at_b.request("session/attach", attach).await, &session, "c1");
    held_by(
        at_b.request("session/delete", json!({"sessionId": session}))
            .await,
        &session,
        "c1",
    );
    let params = json!({"sessionId": session, "prompt": [{"type": "text", "text": "stream 9"}]});
    assert!(at_b.request("session/prompt", params).await.is_err());

    assert_eq!(
        prompt(&mut at_a, &session, "stream 1").await["stopReason"],
        "end_turn"
    );
    let [at_a_dir, at_b_dir] = [&dirs[0], &dirs[1]].map(PathBuf::as_path);
    assert_eq!(prompted(&[at_a_dir], "stream 2"), 1);
    assert_eq!(prompted(&[at_a_dir], "stream 1"), 1);
    for text in ["stream 1", "stream 2", "stream 9"] {
        assert_eq!(prompted(&[at_b_dir], text), 0, "{text} reached B's agent");
    }
    drop((a, b));
    let _ = std::fs::remove_dir_all(&base);
}

/// Two conductors of one machine sharing one SQLite file (the default journal is one per
/// user).
#[tokio::test]
async fn a_live_session_is_refused_where_it_is_not_held_with_a_shared_sqlite_journal() {
    let (base, _) = fresh("held-sqlite", &[]);
    let db = base.join("journal.db");
    a_live_session_is_refused_where_it_is_not_held(db.to_str().unwrap(), "held-sqlite-agents")
        .await;
    let _ = std::fs::remove_dir_all(&base);
}

#[tokio::test]
async fn a_live_session_is_refused_where_it_is_not_held_with_a_shared_postgres_journal() {
    let Some(pg) = postgres() else {
        return;
    };
    a_live_session_is_refused_where_it_is_not_held(&pg, "held-pg").await;
}

/// Fencing, forced: conductor A's lease is lost (its database connections cut, as when its
/// network is), B takes the session over and runs a turn; the connection back, A runs a turn
/// of its own: the store refuses A's records of it, A's client is told where the session lives
/// and A ends it; a third conductor's replay has every record of A's before the takeover and
/// of B's, and no gap.
#[tokio::test]
async fn a_deposed_conductors_records_are_refused_and_its_clients_told() {
    let Some(pg) = postgres() else {
        return;
    };
    let (base, dirs) = fresh("fence", &["a", "b", "c"]);
    let (head, rest) = pg.split_once('@').expect("a URL with user@host");
    let (host_port, db) = rest.split_once('/').expect("a URL with a database");
    let to: std::net::SocketAddr = tokio::net::lookup_host(host_port)
        .await
        .unwrap()
        .next()
        .unwrap();
    let relay = Relay::start(to).await;
    let through = format!("{head}@{}/{db}", relay.addr);
    let a = conductor_named(&through, "fence-a", &dirs[0]).await;
    let mut b = conductor_named(&pg, "fence-b", &dirs[1]).await;
    let mut at_a = editor(&a.ws()).await;
    let session = new_session(&mut at_a).await;
    assert_eq!(
        prompt(&mut at_a, &session, "stream 2").await["stopReason"],
        "end_turn"
    );
    until_journaled(&pg, &session, "turn_ended").await;

    // A's lease goes with its connections (the database sees them close).
    relay.cut();
    until("A's lease to end", PATIENCE, || {
        match backends(&pg, "sacp-lease fence-a") {
            0 => Ok(()),
            _ => Err("not yet"),
        }
    })
    .await;
    let mut at_b = editor(&b.ws()).await;
    let load = json!({"sessionId": session, "cwd": "/tmp", "mcpServers": []});
    let loaded = at_b.request("session/load", load.clone()).await;
    assert!(loaded.is_ok(), "B takes the session over: {loaded:?}");
    at_b.clear();
    assert_eq!(
        prompt(&mut at_b, &session, "stream 3").await["stopReason"],
        "end_turn"
    );
    until_journaled(&pg, &session, "stream 3").await;

    // A, its connection back, still thinks it holds the session: its turn runs at its agent,
    // and its records are refused.
    relay.mend();
    assert_eq!(
        prompt(&mut at_a, &session, "stream 1").await["stopReason"],
        "end_turn"
    );
    let moved = at_a
        .until(
            "the notice that the session moved",
            |m| matches!(m, Message::Notification(n) if n.method == "_sacp/session_moved"),
        )
        .await;
    let Message::Notification(moved) = moved else {
        unreachable!()
    };
    let moved = params_of(moved.params.as_ref());
    assert_eq!(moved, json!({"sessionId": session, "heldBy": "fence-b"}));
    // A ends the session: a load there is told where it is.
    held_by(
        at_a.request("session/load", load.clone()).await,
        &session,
        "fence-b",
    );
    assert!(
        !a.log
            .lines_with("refused this conductor's records of a session")
            .is_empty()
    );
    assert_eq!(lost_in(&pg, &session), 0, "refused, not lost");

    // B goes; C takes the session over: A's turn before the takeover and B's, nothing of A's
    // after, no notice of a gap.
    b.kill().await;
    let c = conductor_named(&pg, "fence-c", &dirs[2]).await;
    let mut at_c = editor(&c.ws()).await;
    // The answer comes after the replay.
    assert!(at_c.request("session/load", load).await.is_ok());
    let texts: Vec<String> = at_c
        .updates()
        .iter()
        .filter_map(|u| u["update"]["content"]["text"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(
        texts,
        [
            "stream 2", "chunk 1", "chunk 2", "stream 3", "chunk 1", "chunk 2", "chunk 3"
        ]
    );
    assert!(
        !at_c.received("_sacp/history_incomplete"),
        "no record of the winner's was lost"
    );
    drop((a, c));
    let _ = std::fs::remove_dir_all(&base);
}

/// The database drops the conductor's connections while it is idle (what a restart of the
/// server does): the next turns' records are written on a new connection, tried again at once
/// (said in the log), and nothing is counted lost.
#[tokio::test]
async fn records_are_written_on_a_new_connection_after_the_database_dropped_the_old() {
    let Some(pg) = postgres() else {
        return;
    };
    let (base, dirs) = fresh("dropped", &["a"]);
    let name = format!("dropped-{}", std::process::id());
    let a = conductor_named(&pg, &name, &dirs[0]).await;
    let mut ed = editor(&a.ws()).await;
    let session = new_session(&mut ed).await;
    assert_eq!(
        prompt(&mut ed, &session, "stream 2").await["stopReason"],
        "end_turn"
    );
    until_journaled(&pg, &session, "turn_ended").await;
    let dropped = terminate(&pg, &format!("sacp-journal {name}"));
    assert!(dropped >= 1, "the writer's connection was there to drop");
    for n in 1..=3 {
        let text = format!("stream {n}");
        assert_eq!(
            prompt(&mut ed, &session, &text).await["stopReason"],
            "end_turn"
        );
    }
    until_journaled(&pg, &session, "stream 3").await;
    until_journaled(&pg, &session, "chunk 3").await;
    a.log.until("trying again on a new connection").await;
    assert!(a.log.lines_with("the journal could not write").is_empty());
    assert_eq!(lost_in(&pg, &session), 0);
    drop(a);
    let _ = std::fs::remove_dir_all(&base);
}

/// Terminates the backends of the PostgreSQL `pg` whose application is `application`: how
/// many.
fn terminate(pg: &str, application: &str) -> i64 {
    on_postgres(
        pg,
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1",
        application,
    )
}

/// How many backends of the PostgreSQL `pg` serve `application`.
fn backends(pg: &str, application: &str) -> i64 {
    on_postgres(
        pg,
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1",
        application,
    )
}

/// The count `query` (of one text parameter, `arg`) gives on the PostgreSQL `pg`.
fn on_postgres(pg: &str, query: &'static str, arg: &str) -> i64 {
    let (pg, arg) = (pg.to_owned(), arg.to_owned());
    // A thread of its own: the PostgreSQL client runs a runtime, which a test's cannot hold.
    std::thread::spawn(move || {
        let mut client = postgres::Client::connect(&pg, postgres::NoTls).unwrap();
        client.query_one(query, &[&arg]).unwrap().get(0)
    })
    .join()
    .unwrap()
}

/// How many times each store is killed in the middle of a stream.
const KILLS: usize = 20;

/// A 10,000-update turn, its conductor killed with `SIGKILL` once its client received a random
/// number of the updates, [`KILLS`] times: each restore is a whole prefix of the turn, in
/// order, then the interrupted notice; what was lost (received, not journaled) reached the
/// client after the last write the conductor began and finished, and at most the gather
/// window and two writes (as long as the conductor's log says they took) before the kill.
async fn killed_anywhere_in_a_stream(
    store: &str,
    spec: &str,
    fresh_journal: impl Fn(usize) -> String,
) {
    let seed = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    eprintln!("seed {seed}");
    let mut rng = seed | 1;
    let mut windows = Vec::new();
    for run in 0..KILLS {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let at = 1 + (rng % 9_999) as usize;
        let journal = fresh_journal(run);
        let journal = if journal.is_empty() {
            spec.to_owned()
        } else {
            journal
        };
        if let Some(window) = kill_at(&journal, at).await {
            windows.push(window);
        }
    }
    windows.sort_unstable();
    let ms: Vec<String> = windows
        .iter()
        .map(|w| format!("{:.1}", w.as_secs_f64() * 1000.0))
        .collect();
    eprintln!(
        "{store}: {} of {KILLS} kills lost updates the client had; the oldest of them reached it this many ms before the kill: {}",
        windows.len(),
        ms.join(", ")
    );
}

/// One run of [`killed_anywhere_in_a_stream`], killed at the `at`-th update: how long before
/// the kill the oldest update lost reached the client, if one was.
async fn kill_at(journal: &str, at: usize) -> Option<Duration> {
    let args = ["--journal", journal];
    let mut conductor = crate::across_machines::conductor_listening_in(
        &args,
        &[agent()],
        &[("RUST_LOG", "warn,sacp_conductor::journal=debug")],
    )
    .await;
    let (mut reader, mut writer) = remote(&conductor.ws()).await.split();
    let mut next = 0;
    let mut send = |method: &str, params: Value| {
        next += 1;
        Message::Request(Request {
            id: Id::Number(next),
            method: method.to_owned(),
            params: Some(RawJson::to_raw(&params).unwrap()),
        })
    };
    let init = send(
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {}}),
    );
    let new = send("session/new", json!({"cwd": "/tmp", "mcpServers": []}));
    writer.write(&mut vec![init, new]).await.unwrap();
    let session = loop {
        let inbound = within("session/new's answer", reader.read()).await.unwrap();
        if let Some(Inbound::Message(Message::Response(r))) = inbound
            && r.id == Id::Number(2)
        {
            let answer: Value = r.into_result().unwrap().parse().unwrap();
            break answer["sessionId"].as_str().unwrap().to_owned();
        }
    };
    let stream =
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "stream 10000"}]});
    writer
        .write(&mut vec![send("session/prompt", stream)])
        .await
        .unwrap();
    // When each chunk reached the client, by its number.
    let mut received: Vec<SystemTime> = Vec::with_capacity(at);
    while received.len() < at {
        let inbound = within("the stream", reader.read()).await.unwrap();
        if let Some(Inbound::Message(Message::Notification(n))) = inbound
            && n.method == "session/update"
            && said(&params_of(n.params.as_ref())).is_some_and(|t| t.starts_with("chunk "))
        {
            received.push(SystemTime::now());
        }
    }
    let killed = SystemTime::now();
    conductor.kill().await;
    let log = conductor.log.clone();

    let second = crate::across_machines::conductor_listening(&args, &[agent()]).await;
    let mut ed = editor(&second.ws()).await;
    let load = json!({"sessionId": session, "cwd": "/tmp", "mcpServers": []});
    // The answer comes after the replay. Killed within the first write's window, the journal
    // has nothing of the session yet: it is not there at all (an empty prefix).
    let loaded = ed.request("session/load", load).await;
    if let Err(e) = &loaded {
        assert_eq!(e["code"], -32002, "{e}");
        assert!(e["data"].get("heldBy").is_none(), "{e}");
    }
    let mut texts: Vec<String> = ed
        .updates()
        .iter()
        .filter_map(|u| said(u).map(str::to_owned))
        .collect();
    // Killed mid-turn, the turn ends interrupted; killed after the turn ended (its client
    // behind), it is all there.
    let ended = texts.len() == 10_000 && ed.received("_sacp/turn_ended");
    if loaded.is_ok() && !ended {
        let interrupted = texts.pop().expect("the interrupted notice");
        assert!(interrupted.contains("interrupted"), "{interrupted}");
    }
    let chunks = texts;
    let kept = chunks.len();
    let whole: Vec<String> = (1..=kept).map(|i| format!("chunk {i}")).collect();
    assert!(
        chunks == whole.as_slice(),
        "the restore is not a whole prefix of the turn"
    );
    drop(second);
    if kept >= received.len() {
        return None;
    }
    // The first update lost (received, not journaled), and the conductor's account of its
    // writes: it reached the client after the last write that finished had closed its batch.
    let lost_at = received[kept];
    let window = killed.duration_since(lost_at).unwrap_or_default();
    let writes = Writes::read(&log.lines_with("sacp_conductor::journal"));
    let us = |t: SystemTime| t.duration_since(UNIX_EPOCH).unwrap().as_micros() as u64;
    if let Some(closed) = writes.last_closed {
        // A millisecond for two clocks read at different moments of one machine.
        assert!(
            us(lost_at) + 1_000 >= closed,
            "an update that reached the client {} µs before the last write closed its batch was lost",
            closed - us(lost_at)
        );
    }
    let in_progress = writes.started.map_or(0, |s| us(killed).saturating_sub(s));
    let write = writes.longest.max(in_progress);
    let bound = Duration::from_millis(50) + Duration::from_micros(2 * write) + SLACK;
    eprintln!(
        "killed at update {at}: {kept} kept, {} lost ({window:?} before the kill; bound {bound:?})",
        received.len() - kept
    );
    assert!(
        window <= bound,
        "the oldest update lost reached the client {window:?} before the kill, past {bound:?}"
    );
    Some(window)
}

/// What the bound allows beyond the gather window and two writes: the writer waking for the
/// first record of a batch, and its sleep running over.
const SLACK: Duration = Duration::from_millis(25);

/// A conductor's journal writes, from its debug log.
#[derive(Debug, Default)]
struct Writes {
    /// The longest write, in µs (from its batch's close to its commit).
    longest: u64,
    /// When the last batch that was written was closed (µs since the epoch).
    last_closed: Option<u64>,
    /// When a batch that was never written was closed (a write the kill cut).
    started: Option<u64>,
}

impl Writes {
    fn read(lines: &[String]) -> Writes {
        let field = |line: &str, name: &str| -> Option<u64> {
            let at = line.find(&format!("{name}="))? + name.len() + 1;
            line[at..]
                .split(|c: char| !c.is_ascii_digit())
                .next()?
                .parse()
                .ok()
        };
        let mut writes = Writes::default();
        let mut open: Option<u64> = None;
        for line in lines {
            if line.contains("the journal writes a batch") {
                open = field(line, "drained_at_us");
            } else if line.contains("the journal wrote a batch") {
                writes.longest = writes.longest.max(field(line, "took_us").unwrap_or(0));
                writes.last_closed = open.take().or(writes.last_closed);
            }
        }
        writes.started = open;
        writes
    }
}

#[tokio::test]
async fn a_conductor_killed_anywhere_in_a_stream_leaves_a_whole_prefix_in_sqlite() {
    let (base, _) = fresh("kills-sqlite", &[]);
    let dir = base.clone();
    killed_anywhere_in_a_stream("SQLite", "", |run| {
        let db = dir.join(format!("journal-{run}.db"));
        db.to_string_lossy().into_owned()
    })
    .await;
    let _ = std::fs::remove_dir_all(&base);
}

#[tokio::test]
async fn a_conductor_killed_anywhere_in_a_stream_leaves_a_whole_prefix_in_postgres() {
    let Some(pg) = postgres() else {
        return;
    };
    killed_anywhere_in_a_stream("PostgreSQL", &pg, |_| String::new()).await;
}
