//! The session journal's own ways (`conductor agent --listen`): where it is by default and
//! whose it is, what `session/close` and the retention delete, a session that no client took
//! back in time restored from it, and a journal whose last write was torn.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use sacp::jsonrpc::Message;
use serde_json::json;

use crate::across_machines::running;
use crate::common::*;
use crate::raw::{Raw, params_of, said};
use crate::remote::{Listening, TOKEN};
use crate::restart::{editor, prompt};

/// A fresh directory for one test.
pub(crate) fn fresh(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sacp-journal-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `conductor agent --listen … ARGS… AGENT` whose user's state directory is `state`.
async fn conductor_in(state: &Path, args: &[&str]) -> Listening {
    let token = state.with_extension("token");
    std::fs::write(&token, format!("{TOKEN}\n")).unwrap();
    let mut all = vec![
        "agent",
        "--listen",
        "127.0.0.1:0",
        "--listen-token-file",
        token.to_str().unwrap(),
    ];
    all.extend(args);
    let agent = agent();
    all.push(&agent);
    Listening::start_in(conductor(), &all, &[("XDG_STATE_HOME", state)]).await
}

pub(crate) async fn new_session(ed: &mut Raw) -> String {
    let new = json!({"cwd": "/tmp", "mcpServers": []});
    ed.request("session/new", new).await.unwrap()["sessionId"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// The permission bits of `path`.
fn mode(path: &Path) -> u32 {
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

/// What the journal at `db` has of `session`: its chunks' rows, and (closed, setup) of its
/// own row.
fn rows(db: &Path, session: &str) -> (i64, Option<(bool, String)>) {
    let conn =
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    conn.busy_timeout(Duration::from_secs(5)).unwrap();
    let chunks = conn
        .query_row(
            "SELECT count(*) FROM chunks WHERE session = ?1",
            [session],
            |r| r.get(0),
        )
        .unwrap();
    let row = conn
        .query_row(
            "SELECT closed, setup FROM sessions WHERE id = ?1",
            [session],
            |r| Ok((r.get::<_, i64>(0)? != 0, r.get::<_, String>(1)?)),
        )
        .ok();
    (chunks, row)
}

/// Moves what the journal wrote of `session` `secs` seconds into the past: a test told the
/// time rather than one that waits for it.
fn age(db: &Path, session: &str, secs: i64) {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.busy_timeout(Duration::from_secs(5)).unwrap();
    let sessions = conn
        .execute(
            "UPDATE sessions SET at = at - ?2 WHERE id = ?1",
            rusqlite::params![session, secs],
        )
        .unwrap();
    assert_eq!(sessions, 1, "{session} is in the journal");
    conn.execute(
        "UPDATE chunks SET at = at - ?2 WHERE session = ?1",
        rusqlite::params![session, secs],
    )
    .unwrap();
}

/// Waits until the journal names no conductor holding `session`: it ended here without
/// being closed (its detached timeout), and the next claim takes it.
async fn until_released(db: &Path, session: &str) {
    until("the session released in the journal", PATIENCE, || {
        let conn =
            rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
                .map_err(|_| "no journal yet")?;
        let _ = conn.busy_timeout(Duration::from_secs(5));
        let holder: Option<i64> = conn
            .query_row(
                "SELECT holder FROM sessions WHERE id = ?1",
                [session],
                |r| r.get(0),
            )
            .map_err(|_| "not in the journal")?;
        match holder {
            None => Ok(()),
            Some(_) => Err("still held"),
        }
    })
    .await;
}

/// Waits until `rows` of `session` satisfy `pred`.
pub(crate) async fn until_rows(
    what: &str,
    db: &Path,
    session: &str,
    pred: impl Fn(&(i64, Option<(bool, String)>)) -> bool,
) {
    until(what, PATIENCE, || {
        let now = rows(db, session);
        if pred(&now) {
            Ok(())
        } else {
            Err(format!("{now:?}"))
        }
    })
    .await;
}

/// The `agent_message_chunk` texts and user prompts of a replay, in order.
fn transcript(ed: &Raw) -> Vec<String> {
    ed.updates()
        .iter()
        .filter_map(|u| {
            let kind = u["update"]["sessionUpdate"].as_str()?;
            let text = u["update"]["content"]["text"].as_str()?;
            Some(format!("{kind}: {text}"))
        })
        .collect()
}

/// The lines of a turn "stream N" in a transcript.
fn turn(n: usize) -> Vec<String> {
    let mut lines = vec![format!("user_message_chunk: stream {n}")];
    lines.extend((1..=n).map(|i| format!("agent_message_chunk: chunk {i}")));
    lines
}

/// Loads `session` and waits for the end of its replayed last turn.
async fn load_replayed(ed: &mut Raw, session: &str) {
    let load = json!({"sessionId": session, "cwd": "/tmp", "mcpServers": []});
    ed.request("session/load", load).await.unwrap();
    ed.until(
        "the replayed turn's end",
        |m| matches!(m, Message::Notification(n) if n.method == "_sacp/turn_ended"),
    )
    .await;
}

/// The next turn of `session`, "stream N", works: N chunks, then its end.
pub(crate) async fn goes_on(ed: &mut Raw, session: &str, n: usize) {
    ed.clear();
    let text = format!("stream {n}");
    assert_eq!(prompt(ed, session, &text).await["stopReason"], "end_turn");
    let want: Vec<String> = (1..=n).map(|i| format!("chunk {i}")).collect();
    assert_eq!(
        ed.updates().iter().filter_map(said).collect::<Vec<_>>(),
        want
    );
}

#[tokio::test]
async fn the_default_journal_is_the_users_alone_and_a_closed_session_leaves_none_of_its_words() {
    let base = fresh("default");
    let state = base.join("state");
    let conductor = conductor_in(&state, &[]).await;
    let mut ed = editor(&conductor.ws()).await;
    let session = new_session(&mut ed).await;
    assert_eq!(
        prompt(&mut ed, &session, "stream 2").await["stopReason"],
        "end_turn"
    );
    let db = state.join("sacp").join("journal.db");
    until_rows("the turn in the journal", &db, &session, |(chunks, _)| {
        *chunks > 0
    })
    .await;
    assert_eq!(mode(&state.join("sacp")), 0o700);
    for file in ["journal.db", "journal.db-wal", "journal.db-shm"] {
        let path = state.join("sacp").join(file);
        assert_eq!(mode(&path), 0o600, "{file}");
        // The connection's bearer token is nowhere in it.
        let bytes = std::fs::read(&path).unwrap();
        assert!(
            !bytes.windows(TOKEN.len()).any(|w| w == TOKEN.as_bytes()),
            "{file} holds the token"
        );
    }
    // Nor in the session's entries, which are stored compressed: read back, they hold its
    // turn and not the token.
    let lines = crate::restart::sqlite_lines(&db, &session);
    assert!(lines.contains("chunk 2"), "{lines}");
    assert!(!lines.contains(TOKEN), "the entries hold the token");
    ed.request("session/close", json!({"sessionId": session}))
        .await
        .unwrap();
    until_rows(
        "the closed session's words deleted",
        &db,
        &session,
        |(chunks, row)| *chunks == 0 && row.as_ref().is_some_and(|(closed, _)| *closed),
    )
    .await;
    let (_, row) = rows(&db, &session);
    assert_eq!(row.unwrap().1, "{}", "what began it goes too");
    drop(ed);
    drop(conductor);
    // A conductor started again on the same journal does not bring it back.
    let conductor = conductor_in(&state, &[]).await;
    let mut ed = editor(&conductor.ws()).await;
    let load = json!({"sessionId": session, "cwd": "/tmp", "mcpServers": []});
    let refused = ed.request("session/load", load).await.unwrap_err();
    assert_eq!(refused["code"], -32002, "{refused}");
    assert_eq!(refused["data"]["ended"], "it was closed", "{refused}");
    drop(conductor);

    // Without one: nothing is written under the state directory.
    let bare = base.join("bare");
    let conductor = conductor_in(&bare, &["--no-journal"]).await;
    let mut ed = editor(&conductor.ws()).await;
    let session = new_session(&mut ed).await;
    assert_eq!(
        prompt(&mut ed, &session, "stream 1").await["stopReason"],
        "end_turn"
    );
    assert!(!bare.exists(), "--no-journal wrote {}", bare.display());
    drop(conductor);
    let _ = std::fs::remove_dir_all(&base);
}

#[tokio::test]
async fn a_session_no_client_took_back_in_time_is_restored_from_the_journal() {
    let base = fresh("idle");
    let db = base.join("journal.db");
    let args = [
        "--journal",
        db.to_str().unwrap(),
        "--detached-timeout",
        "1s",
    ];
    let conductor = crate::across_machines::conductor_listening(&args, &[agent()]).await;
    let mut ed = editor(&conductor.ws()).await;
    let session = new_session(&mut ed).await;
    assert_eq!(
        prompt(&mut ed, &session, "stream 2").await["stopReason"],
        "end_turn"
    );
    // The session ends a second after its client left, and its chain with it (no session
    // and no client left); its journal stays.
    let agents = crate::restart::agents_of(&conductor);
    assert_eq!(agents.len(), 1, "{agents:?}");
    drop(ed);
    until("the chain to end with its session", PATIENCE, || {
        if agents.iter().any(|p| running(*p)) {
            Err("still running")
        } else {
            Ok(())
        }
    })
    .await;
    let mut ed = editor(&conductor.ws()).await;
    load_replayed(&mut ed, &session).await;
    assert_eq!(transcript(&ed), turn(2));
    goes_on(&mut ed, &session, 1).await;
    drop(conductor);
    let _ = std::fs::remove_dir_all(&base);
}

#[tokio::test]
async fn sessions_past_the_retention_are_deleted_and_younger_ones_restored() {
    let base = fresh("retention");
    let db = base.join("journal.db");
    let mut first = crate::across_machines::conductor_listening(
        &["--journal", db.to_str().unwrap()],
        &[agent()],
    )
    .await;
    let mut ed = editor(&first.ws()).await;
    let old = new_session(&mut ed).await;
    assert_eq!(
        prompt(&mut ed, &old, "stream 1").await["stopReason"],
        "end_turn"
    );
    let young = new_session(&mut ed).await;
    assert_eq!(
        prompt(&mut ed, &young, "stream 2").await["stopReason"],
        "end_turn"
    );
    until_rows(
        "the young turn in the journal",
        &db,
        &young,
        |(chunks, _)| *chunks > 0,
    )
    .await;
    first.kill().await;
    drop(ed);
    // The old session was last written two hours ago, as the journal's times say: past a
    // retention of an hour when the next conductor starts; the young one well within it.
    age(&db, &old, 2 * 3600);

    let args = [
        "--journal",
        db.to_str().unwrap(),
        "--journal-retention",
        "1h",
    ];
    let second = crate::across_machines::conductor_listening(&args, &[agent()]).await;
    let mut ed = editor(&second.ws()).await;
    let load = |id: &str| json!({"sessionId": id, "cwd": "/tmp", "mcpServers": []});
    load_replayed(&mut ed, &young).await;
    assert_eq!(transcript(&ed), turn(2));
    let refused = ed.request("session/load", load(&old)).await.unwrap_err();
    assert_eq!(refused["code"], -32002, "{refused}");
    assert_eq!(rows(&db, &old), (0, None), "nothing of it is left");
    drop(second);
    let _ = std::fs::remove_dir_all(&base);
}

#[tokio::test]
async fn a_torn_last_write_restores_up_to_the_last_whole_one_and_says_so() {
    let base = fresh("torn");
    let db = base.join("journal.db");
    let args = ["--journal", db.to_str().unwrap()];
    let mut first = crate::across_machines::conductor_listening(&args, &[agent()]).await;
    let mut ed = editor(&first.ws()).await;
    let session = new_session(&mut ed).await;
    for n in 1..=3 {
        assert_eq!(
            prompt(&mut ed, &session, &format!("stream {n}")).await["stopReason"],
            "end_turn"
        );
        // Each turn written before the next begins: a write of its own.
        until_rows("the turn in the journal", &db, &session, |(chunks, _)| {
            *chunks >= n as i64
        })
        .await;
    }
    // Killed: the write-ahead log stays as it was, not checkpointed. Then its last frame is
    // cut short, as a writer killed mid-write (or a copy taken mid-write) leaves it.
    first.kill().await;
    drop(ed);
    let wal = base.join("journal.db-wal");
    let len = std::fs::metadata(&wal).unwrap().len();
    assert!(len > 32 + 4096, "a log with frames: {len}");
    let file = std::fs::OpenOptions::new().write(true).open(&wal).unwrap();
    file.set_len(len - 100).unwrap();
    drop(file);

    let second = crate::across_machines::conductor_listening(&args, &[agent()]).await;
    let mut ed = editor(&second.ws()).await;
    let load = json!({"sessionId": session, "cwd": "/tmp", "mcpServers": []});
    ed.request("session/load", load).await.unwrap();
    let notice = ed
        .until(
            "the notice that the journal was torn",
            |m| matches!(m, Message::Notification(n) if n.method == "_sacp/history_incomplete"),
        )
        .await;
    let Message::Notification(notice) = notice else {
        unreachable!()
    };
    assert_eq!(params_of(notice.params.as_ref())["torn"], true);
    // The first two turns whole; of the third, whose last write was torn, nothing — or, had
    // it been written in more than one write, what was whole, ended as interrupted.
    let lines = transcript(&ed);
    let mut whole = turn(1);
    whole.extend(turn(2));
    assert_eq!(
        lines[..whole.len().min(lines.len())],
        whole[..],
        "{lines:?}"
    );
    let rest = &lines[whole.len()..];
    if !rest.is_empty() {
        assert_eq!(
            rest.last().unwrap(),
            "agent_message_chunk: [sacp] This turn was interrupted: the conductor restarted before it ended.",
            "{lines:?}"
        );
    }
    goes_on(&mut ed, &session, 1).await;
    drop(second);
    let _ = std::fs::remove_dir_all(&base);
}

#[tokio::test]
async fn a_fork_is_journaled_from_its_birth_and_restored_after_a_restart() {
    let base = fresh("fork");
    let db = base.join("journal.db");
    let args = ["--journal", db.to_str().unwrap()];
    let mut first = crate::across_machines::conductor_listening(&args, &[agent()]).await;
    let mut ed = editor(&first.ws()).await;
    let parent = new_session(&mut ed).await;
    assert_eq!(
        prompt(&mut ed, &parent, "stream 2").await["stopReason"],
        "end_turn"
    );
    let fork = json!({"sessionId": parent, "cwd": "/tmp", "mcpServers": []});
    let forked = ed.request("session/fork", fork).await.unwrap()["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_ne!(forked, parent);
    ed.clear();
    assert_eq!(
        prompt(&mut ed, &forked, "stream 1").await["stopReason"],
        "end_turn"
    );
    until_rows(
        "the fork's turn in the journal",
        &db,
        &forked,
        |(chunks, row)| *chunks > 0 && row.is_some(),
    )
    .await;
    first.kill().await;
    drop(ed);

    // The agent of the new chain never saw either session: the fork comes back with its
    // history, and goes on.
    let second = crate::across_machines::conductor_listening(&args, &[agent()]).await;
    let mut ed = editor(&second.ws()).await;
    load_replayed(&mut ed, &forked).await;
    assert_eq!(transcript(&ed), turn(1));
    goes_on(&mut ed, &forked, 3).await;
    drop(second);
    let _ = std::fs::remove_dir_all(&base);
}

/// A subagent's session is journaled as its parent's child, in its parent's place: after a
/// restart it is restored like any session (its history is what it streamed), and it ends with
/// its parent — the child restored before the parent was closed ends with it, and the one
/// never restored is refused, once the parent was closed, as ended with it; the agent holds
/// no session of either after; and a conductor started after that refuses a third child from
/// what the journal says of its parent. (The new agent numbers its sessions afresh: the child
/// restored first gets the parent's old agent id, which the parent's restore must then not ask
/// for.)
#[tokio::test]
async fn subagents_sessions_come_back_after_a_restart_and_end_with_their_parent() {
    let base = fresh("subagents");
    let db = base.join("journal.db");
    let args = ["--journal", db.to_str().unwrap()];
    let (parent, children) = subagents_left_by_a_killed_conductor(&db, 3).await;
    let mut second = crate::across_machines::conductor_listening(&args, &[agent()]).await;
    let mut ed = editor(&second.ws()).await;
    let load = |id: &str| json!({"sessionId": id, "cwd": "/tmp", "mcpServers": []});
    ed.request("session/load", load(&children[0]))
        .await
        .unwrap();
    let replayed: Vec<String> = ed
        .updates()
        .iter()
        .filter(|u| u["sessionId"] == children[0].as_str())
        .filter_map(|u| said(u).map(str::to_owned))
        .collect();
    assert_eq!(replayed, ["child c1 working"]);
    load_replayed(&mut ed, &parent).await;
    ed.request("session/close", json!({"sessionId": parent}))
        .await
        .unwrap();
    // The new agent holds the restored child as a session of its own (it started no
    // subagent): it is closed there too, and the agent has no session left.
    within("the agent's sessions closed", async {
        loop {
            let listed = ed.request("session/list", json!({})).await.unwrap();
            if listed["sessions"].as_array().is_some_and(Vec::is_empty) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    // The children only the journal holds are closed there with their parent, before anyone
    // asks for them: their words deleted, their row saying why.
    for child in &children[1..] {
        until_closed_with_parent(&db, child).await;
    }
    for child in &children[..2] {
        refused_as_ended_with_parent(&mut ed, child).await;
        until_rows("the child closed in the journal", &db, child, |(_, row)| {
            row.as_ref().is_some_and(|(closed, _)| *closed)
        })
        .await;
    }

    // A conductor that never saw the parent closed learns it from the journal.
    until_rows(
        "the parent closed in the journal",
        &db,
        &parent,
        |(_, row)| row.as_ref().is_some_and(|(closed, _)| *closed),
    )
    .await;
    second.kill().await;
    drop(ed);
    // It says why each child ended: the one the second conductor had restored, and one it
    // never took back.
    let third = crate::across_machines::conductor_listening(&args, &[agent()]).await;
    let mut ed = editor(&third.ws()).await;
    for child in [&children[0], &children[2]] {
        refused_as_ended_with_parent(&mut ed, child).await;
    }
    drop(third);
    let _ = std::fs::remove_dir_all(&base);
}

/// A session that timed out detached while its chain lives on (another session keeps it) is
/// taken back from the journal, numbered on from where it was: after a restart its history is
/// every turn once.
#[tokio::test]
async fn a_session_timed_out_beside_a_live_one_is_taken_back_whole_after_a_restart() {
    let base = fresh("beside");
    let db = base.join("journal.db");
    let args = [
        "--journal",
        db.to_str().unwrap(),
        "--detached-timeout",
        "1s",
    ];
    let mut first = crate::across_machines::conductor_listening(&args, &[agent()]).await;
    let mut ed = editor(&first.ws()).await;
    let left = new_session(&mut ed).await;
    let kept = new_session(&mut ed).await;
    goes_on(&mut ed, &left, 2).await;
    ed.request("session/detach", json!({"sessionId": left}))
        .await
        .unwrap();
    // The detached timeout: the session ends (released in the journal), its chain (serving
    // `kept`) not.
    until_released(&db, &left).await;
    let agents = crate::restart::agents_of(&first);
    assert_eq!(agents.len(), 1, "the chain lives: {agents:?}");
    ed.clear();
    load_replayed(&mut ed, &left).await;
    assert_eq!(transcript(&ed), turn(2));
    goes_on(&mut ed, &left, 1).await;
    goes_on(&mut ed, &kept, 1).await;
    until_rows("the last turn in the journal", &db, &left, |(chunks, _)| {
        *chunks >= 2
    })
    .await;
    crate::restart::until_journaled(db.to_str().unwrap(), &left, "stream 1").await;
    first.kill().await;
    drop(ed);

    let second = crate::across_machines::conductor_listening(&args, &[agent()]).await;
    let mut ed = editor(&second.ws()).await;
    load_replayed(&mut ed, &left).await;
    let mut want = turn(2);
    want.extend(turn(1));
    assert_eq!(transcript(&ed), want);
    drop(second);
    let _ = std::fs::remove_dir_all(&base);
}

/// A session of the agent's own (its id not of the layer's shape) loaded through the chain by
/// one conductor, then by the next on the same journal: each load's replay is journaled
/// afresh, not on top of what the one before kept. Taken back from the journal after it timed
/// out, its history is every turn once.
#[tokio::test]
async fn an_agents_session_loaded_through_two_conductors_in_turn_is_journaled_once() {
    let base = fresh("afresh");
    let db = base.join("journal.db");
    let sessions = base.join("agent");
    std::fs::create_dir_all(&sessions).unwrap();
    // The agent keeps its sessions on disk, and loads them.
    let agents = [format!(
        "{} --sessions {}",
        quoted(&agent()),
        sessions.display()
    )];
    let args = [
        "--journal",
        db.to_str().unwrap(),
        "--detached-timeout",
        "1s",
    ];
    let spec = db.to_str().unwrap();
    // The agent's own id: a session it made under a conductor that keeps no journal.
    let own = {
        let first = crate::across_machines::conductor_listening(&[], &agents).await;
        let mut ed = editor(&first.ws()).await;
        let layered = new_session(&mut ed).await;
        goes_on(&mut ed, &layered, 2).await;
        drop(first);
        let (own, _) = layered.split_once('@').expect("the layer's id: OWN@TAG");
        own.to_owned()
    };
    // Through the chain: the agent replays the session before it answers.
    let load = json!({"sessionId": own, "cwd": "/tmp", "mcpServers": []});
    for (n, prompted) in [(1, "stream 1"), (3, "stream 3")] {
        let conductor = crate::across_machines::conductor_listening(&args, &agents).await;
        let mut ed = editor(&conductor.ws()).await;
        ed.request("session/load", load.clone()).await.unwrap();
        goes_on(&mut ed, &own, n).await;
        crate::restart::until_journaled(spec, &own, prompted).await;
        drop(ed);
        drop(conductor);
    }
    let want = [turn(2), turn(1), turn(3)].concat();
    // The second conductor's copy, read back: the agent's replay of the first two turns, then
    // the third; nothing of the first conductor's copy again.
    let lines = crate::restart::sqlite_lines(&db, &own);
    assert_eq!(lines.matches("\"text\":\"stream 2\"").count(), 1, "{lines}");
    assert_eq!(lines.matches("\"text\":\"stream 1\"").count(), 1, "{lines}");

    // Taken back from the journal: a conductor whose chain lives (another session keeps it)
    // but whose copy of the session timed out.
    let conductor = crate::across_machines::conductor_listening(&args, &agents).await;
    let mut ed = editor(&conductor.ws()).await;
    let kept = new_session(&mut ed).await;
    ed.clear();
    ed.request("session/load", load.clone()).await.unwrap();
    assert_eq!(transcript(&ed), want);
    goes_on(&mut ed, &own, 4).await;
    crate::restart::until_journaled(spec, &own, "stream 4").await;
    ed.request("session/detach", json!({"sessionId": own}))
        .await
        .unwrap();
    // Its detached timeout: the session ends here (released in the journal).
    until_released(&db, &own).await;
    ed.clear();
    load_replayed(&mut ed, &own).await;
    assert_eq!(transcript(&ed), [want, turn(4)].concat());
    goes_on(&mut ed, &kept, 1).await;
    drop(conductor);
    let _ = std::fs::remove_dir_all(&base);
}

/// A session with `n` subagents (`c1`, `c2`, … to the test agent, named as its chain by the
/// layer), journaled in `db` by a conductor then killed: the parent's id and the children's,
/// once each child's words, its parent and its `cwd` are in the journal.
pub(crate) async fn subagents_left_by_a_killed_conductor(
    db: &Path,
    n: usize,
) -> (String, Vec<String>) {
    let args = ["--journal", db.to_str().unwrap()];
    let mut first = crate::across_machines::conductor_listening(&args, &[agent()]).await;
    let mut ed = editor(&first.ws()).await;
    let parent = new_session(&mut ed).await;
    for i in 1..=n {
        let text = format!("subagent {i}");
        assert_eq!(
            prompt(&mut ed, &parent, &text).await["stopReason"],
            "end_turn"
        );
    }
    let (_, tag) = parent.split_once('@').expect("an id of the layer's");
    let children: Vec<String> = (1..=n).map(|i| format!("c{i}@{tag}")).collect();
    for child in &children {
        until_rows(
            "the child's words, and its parent, in the journal",
            db,
            child,
            |(chunks, row)| {
                *chunks > 0
                    && row.as_ref().is_some_and(|(closed, setup)| {
                        let setup: serde_json::Value = serde_json::from_str(setup).unwrap();
                        !closed && setup["parent"] == parent.as_str() && setup["cwd"] == "/tmp"
                    })
            },
        )
        .await;
    }
    first.kill().await;
    (parent, children)
}

/// Waits until the journal in `db` has `child` closed with the session it was a subagent of:
/// its words deleted, its row saying why.
pub(crate) async fn until_closed_with_parent(db: &Path, child: &str) {
    until_rows(
        "the child closed with its parent",
        db,
        child,
        |(chunks, row)| {
            *chunks == 0
                && row.as_ref().is_some_and(|(closed, setup)| {
                    let setup: serde_json::Value = serde_json::from_str(setup).unwrap();
                    *closed && setup["ended"] == "parent"
                })
        },
    )
    .await;
}

/// A load of `child` is refused as a session that ended with the one it was a subagent of.
pub(crate) async fn refused_as_ended_with_parent(ed: &mut Raw, child: &str) {
    let load = json!({"sessionId": child, "cwd": "/tmp", "mcpServers": []});
    let refused = ed.request("session/load", load).await.unwrap_err();
    assert_eq!(refused["code"], -32002, "{child}: {refused}");
    assert_eq!(
        refused["data"]["ended"], "the session it was a subagent of was closed",
        "{child}: {refused}"
    );
}
