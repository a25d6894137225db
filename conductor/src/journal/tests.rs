//! The journal's own tests: what is written is read back, closings, compression, migration,
//! claims and the fence.

use super::*;

#[tokio::test]
async fn what_is_recorded_is_read_back_in_order_and_a_closed_session_keeps_only_that() {
    let dir = std::env::temp_dir().join(format!("sacp-journal-unit-{}", std::process::id()));
    let path = dir.join("journal.db");
    let journal = Journal::open(path.to_str().unwrap(), Duration::from_secs(3600), "test")
        .await
        .unwrap();
    journal.record(Record::Began {
        id: Arc::from("s@0123456789ab"),
        epoch: 1,
        own: "s".into(),
        setup: r#"{"cwd":"/tmp","mcpServers":[]}"#.into(),
    });
    for seq in 0..3 {
        journal.record(Record::Entry {
            id: Arc::from("s@0123456789ab"),
            epoch: 1,
            seq,
            body: Body::Notification {
                method: Arc::from("session/update"),
                params: RawJson::to_raw(&serde_json::json!({ "n": seq })).unwrap(),
            },
        });
    }
    let kept = loop {
        match journal.kept("s@0123456789ab").await.unwrap() {
            Some(kept) if kept.entries.len() == 3 => break kept,
            _ => tokio::time::sleep(std::time::Duration::from_millis(10)).await,
        }
    };
    assert_eq!(kept.own, "s");
    assert_eq!(kept.setup["cwd"], "/tmp");
    assert_eq!(kept.next, 3);
    let ns: Vec<&Value> = kept
        .entries
        .iter()
        .map(|(_, e)| &e["params"]["n"])
        .collect();
    assert_eq!(ns, [0, 1, 2]);
    assert!(!kept.closed);
    journal.record(Record::Closed {
        id: Arc::from("s@0123456789ab"),
        epoch: 1,
        with_parent: false,
    });
    let closed = loop {
        let kept = journal.kept("s@0123456789ab").await.unwrap().unwrap();
        if kept.closed {
            break kept;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    };
    assert!(closed.entries.is_empty(), "a closed session's entries go");
    assert_eq!(closed.setup, serde_json::json!({}));
    assert!(journal.kept("nobody").await.unwrap().is_none());
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn closing_a_session_closes_its_subagents_at_any_depth_and_nothing_else() {
    let dir = std::env::temp_dir().join(format!("sacp-journal-tree-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let path = dir.join("journal.db");
    let journal = Journal::open(path.to_str().unwrap(), Duration::from_secs(3600), "test")
        .await
        .unwrap();
    // p has the subagent c, which has the subagent g; q has the subagent d.
    for (id, parent) in [
        ("p", None),
        ("c", Some("p")),
        ("g", Some("c")),
        ("q", None),
        ("d", Some("q")),
    ] {
        let mut setup = serde_json::json!({"cwd": "/tmp", "mcpServers": []});
        if let Some(parent) = parent {
            setup["parent"] = Value::from(parent);
        }
        journal.record(Record::Began {
            id: Arc::from(id),
            epoch: 1,
            own: id.into(),
            setup: setup.to_string(),
        });
        journal.record(Record::Entry {
            id: Arc::from(id),
            epoch: 1,
            seq: 0,
            body: Body::Prompt(RawJson::to_raw(&serde_json::json!({ "of": id })).unwrap()),
        });
    }
    journal.record(Record::Closed {
        id: Arc::from("p"),
        epoch: 1,
        with_parent: false,
    });
    let kept = |id: &'static str| {
        let journal = journal.clone();
        async move { journal.kept(id).await.unwrap().unwrap() }
    };
    let written = async {
        while !journal.kept("g").await.unwrap().is_some_and(|g| g.closed) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), written)
        .await
        .expect("the subagent of a subagent closed within 10 s");
    let p = kept("p").await;
    assert!(p.closed && !p.ended_with_parent() && p.entries.is_empty());
    for id in ["c", "g"] {
        let child = kept(id).await;
        assert!(child.ended_with_parent(), "{id}: {:?}", child.setup);
        assert!(child.entries.is_empty(), "{id}'s words go with its parent");
    }
    for id in ["q", "d"] {
        let other = kept(id).await;
        assert!(
            !other.closed && other.entries.len() == 1,
            "{id} is untouched"
        );
    }
    // The subagents are found through the index, not by reading every row.
    let conn = rusqlite::Connection::open(&path).unwrap();
    let plan: String = conn
        .query_row(
            "EXPLAIN QUERY PLAN SELECT id FROM sessions WHERE json_extract(setup, '$.parent') = 'p' AND closed = 0",
            [],
            |r| r.get(3),
        )
        .unwrap();
    assert!(plan.contains("sessions_by_parent"), "{plan}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn lines_are_stored_compressed_and_a_chunk_that_cannot_be_read_counts_as_lost() {
    let dir = std::env::temp_dir().join(format!("sacp-journal-lz4-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let path = dir.join("journal.db");
    let journal = Journal::open(path.to_str().unwrap(), Duration::from_secs(3600), "test")
        .await
        .unwrap();
    let id: Arc<str> = Arc::from("z@0123456789ab");
    journal.record(Record::Began {
        id: id.clone(),
        epoch: 1,
        own: "z".into(),
        setup: "{}".into(),
    });
    let text = "the same words again and again, ".repeat(8);
    for seq in 0..20 {
        journal.record(Record::Entry {
            id: id.clone(),
            epoch: 1,
            seq,
            body: Body::Notification {
                method: Arc::from("session/update"),
                params: RawJson::to_raw(&serde_json::json!({ "text": text })).unwrap(),
            },
        });
    }
    let kept = loop {
        match journal.kept(&id).await.unwrap() {
            Some(kept) if kept.next == 20 => break kept,
            _ => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    };
    assert_eq!(kept.entries.len(), 20);
    assert!(
        kept.entries
            .iter()
            .all(|(_, e)| e["params"]["text"] == text)
    );
    assert_eq!(kept.lost, 0);
    let conn = rusqlite::Connection::open(&path).unwrap();
    let (stored, plain): (i64, i64) = conn
        .query_row(
            "SELECT sum(length(lines)), count(*) FROM chunks WHERE typeof(lines) = 'blob'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert!(plain >= 1, "every chunk is a blob");
    assert!(
        (stored as usize) < 20 * text.len() / 5,
        "{stored} bytes stored for {} of text",
        20 * text.len()
    );
    // A chunk whose frame is damaged: its two entries are left out and counted as lost.
    conn.execute(
        "INSERT INTO chunks (session, first, last, lines, at, epoch) VALUES (?1, 20, 21, x'04224d18deadbeef', 0, 1)",
        rusqlite::params![&*id],
    )
    .unwrap();
    drop(conn);
    let kept = journal.kept(&id).await.unwrap().unwrap();
    assert_eq!(kept.entries.len(), 20);
    assert_eq!(kept.lost, 2);
    assert_eq!(kept.next, 22);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_journal_of_the_schema_before_is_migrated_and_keeps_what_it_had() {
    let dir = std::env::temp_dir().join(format!("sacp-journal-v2-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("journal.db");
    // Version 2: no times.
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        r#"CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
           INSERT INTO meta VALUES ('version', 2);
           CREATE TABLE sessions (id TEXT PRIMARY KEY, own TEXT NOT NULL,
               setup TEXT NOT NULL, closed INTEGER NOT NULL, lost INTEGER NOT NULL);
           CREATE TABLE chunks (session TEXT NOT NULL, first INTEGER NOT NULL,
               last INTEGER NOT NULL, lines TEXT NOT NULL, PRIMARY KEY (session, first))
               WITHOUT ROWID;
           INSERT INTO sessions VALUES ('s@0123456789ab', 's', '{"cwd":"/w"}', 0, 0);
           INSERT INTO chunks VALUES ('s@0123456789ab', 0, 0,
               'prompt {"prompt":[{"type":"text","text":"hi"}]}' || char(10));"#,
    )
    .unwrap();
    drop(conn);
    let journal = Journal::open(path.to_str().unwrap(), Duration::from_secs(3600), "test")
        .await
        .unwrap();
    let kept = journal.kept("s@0123456789ab").await.unwrap().unwrap();
    assert_eq!(kept.setup["cwd"], "/w");
    assert_eq!(kept.entries.len(), 1);
    assert_eq!(kept.entries[0].0, Kind::Prompt);
    assert_eq!(kept.next, 1);
    let conn = rusqlite::Connection::open(&path).unwrap();
    let version: i64 = conn
        .query_row("SELECT value FROM meta WHERE key = 'version'", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(version, 5);
    drop(conn);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A journal in a fresh directory of its own, as conductor `name`.
async fn fresh(dir: &str, name: &str) -> (PathBuf, Journal) {
    let dir = std::env::temp_dir().join(format!("sacp-journal-{dir}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let path = dir.join("journal.db");
    let journal = Journal::open(path.to_str().unwrap(), Duration::from_secs(3600), name)
        .await
        .unwrap();
    (path, journal)
}

fn update(id: &str, epoch: u64, seq: u64, text: &str) -> Record {
    Record::Entry {
        id: Arc::from(id),
        epoch,
        seq,
        body: Body::Notification {
            method: Arc::from("session/update"),
            params: RawJson::to_raw(&serde_json::json!({ "text": text })).unwrap(),
        },
    }
}

fn began(id: &str, epoch: u64) -> Record {
    Record::Began {
        id: Arc::from(id),
        epoch,
        own: id.into(),
        setup: r#"{"cwd":"/tmp","mcpServers":[]}"#.into(),
    }
}

#[tokio::test]
async fn a_session_is_held_by_one_conductor_and_taken_over_only_once_its_holder_is_gone() {
    let (path, a) = fresh("claims", "a").await;
    a.record(began("s", 1));
    a.record(update("s", 1, 0, "one"));
    a.sync().await;
    let b = Journal::open(path.to_str().unwrap(), Duration::from_secs(3600), "b")
        .await
        .unwrap();
    match b.claim("s", false).await.unwrap() {
        Claim::Held { by } => assert_eq!(by, "a"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        b.claim("nobody", false).await.unwrap(),
        Claim::Unknown
    ));
    // A's lease ends with it: B takes the session, under the next epoch, with what A wrote.
    drop(a);
    let Claim::Taken { kept, epoch } = b.claim("s", false).await.unwrap() else {
        panic!("the session of a conductor that is gone is taken over")
    };
    assert_eq!((epoch, kept.next, kept.lost), (2, 1, 0));
    assert_eq!(kept.entries[0].1["params"]["text"], "one");
    // Claimed again by its holder: the same epoch.
    let Claim::Taken { epoch, .. } = b.claim("s", false).await.unwrap() else {
        panic!("its holder claims it again")
    };
    assert_eq!(epoch, 2);
    // Released, it is anyone's: taken under the next epoch.
    b.record(Record::Released {
        id: Arc::from("s"),
        epoch: 2,
    });
    b.sync().await;
    let c = Journal::open(path.to_str().unwrap(), Duration::from_secs(3600), "c")
        .await
        .unwrap();
    let Claim::Taken { epoch, .. } = c.claim("s", false).await.unwrap() else {
        panic!("a released session is anyone's")
    };
    assert_eq!(epoch, 3);
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}

#[tokio::test]
async fn a_deposed_holders_records_are_refused_and_it_is_told() {
    let (path, a) = fresh("fence", "a").await;
    let mut deposed = a.deposed().unwrap();
    a.record(began("s", 1));
    a.record(update("s", 1, 0, "before"));
    a.sync().await;
    // Taken over behind A's back, as a conductor that found A's lease gone does it.
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute(
        "UPDATE sessions SET holder = 99, holder_name = 'b', epoch = 2 WHERE id = 's'",
        [],
    )
    .unwrap();
    // The store itself refuses a chunk of the older epoch, whoever writes it.
    let refused = conn.execute(
        "INSERT INTO chunks (session, first, last, lines, at, epoch) VALUES ('s', 1, 1, x'00', 0, 1)",
        [],
    );
    assert!(refused.is_err(), "{refused:?}");
    a.record(update("s", 1, 1, "after"));
    a.record(update("t", 1, 0, "another session"));
    a.sync().await;
    let told = tokio::time::timeout(Duration::from_secs(10), deposed.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!((told.id.as_str(), told.epoch), ("s", 1));
    assert_eq!(told.held_by.as_deref(), Some("b"));
    let kept = a.kept("s").await.unwrap().unwrap();
    assert_eq!(
        kept.entries.len(),
        1,
        "nothing of the deposed holder's after the takeover"
    );
    assert_eq!(kept.lost, 0);
    // The rest of the batch was written.
    assert_eq!(
        lines_of(&path, "t"),
        1,
        "another session's record in the same batch"
    );
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}

/// How many chunks of `session` the journal at `path` has.
fn lines_of(path: &Path, session: &str) -> i64 {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.query_row(
        "SELECT count(*) FROM chunks WHERE session = ?1",
        [session],
        |r| r.get(0),
    )
    .unwrap()
}

#[tokio::test]
async fn a_gap_in_a_sessions_numbers_is_counted_as_lost_and_a_chunk_written_twice_once() {
    let (path, a) = fresh("gaps", "a").await;
    a.record(began("s", 1));
    for seq in 0..3 {
        a.record(update("s", 1, seq, &format!("n{seq}")));
    }
    a.sync().await;
    // Numbers 3 and 4 never written; 5 and 6 written; then 6 and 7 (a write tried again).
    a.record(update("s", 1, 5, "n5"));
    a.record(update("s", 1, 6, "n6"));
    a.sync().await;
    a.record(update("s", 1, 6, "n6"));
    a.record(update("s", 1, 7, "n7"));
    a.sync().await;
    let kept = a.kept("s").await.unwrap().unwrap();
    let texts: Vec<&str> = kept
        .entries
        .iter()
        .map(|(_, e)| e["params"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts, ["n0", "n1", "n2", "n5", "n6", "n7"]);
    assert_eq!((kept.lost, kept.next), (2, 8));
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}
