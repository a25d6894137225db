//! The session journal: what the editor side of each session saw, kept in a store as the
//! session goes, so that a conductor that restarts (or another one sharing the store) can
//! restore a session a client asks for with `session/load`.
//!
//! For each session: how it began (the editor's id, the agent's id, the `cwd` and MCP servers
//! it was created with, the agent's answer), then its entries in order — the updates, the
//! prompts, each turn's end. The session layer hands records to [`Journal::record`], which
//! never waits: a bounded queue ([`QUEUE`]) feeds a writer thread that writes them in
//! batches, one transaction each. When the writer falls behind and the queue is full, the
//! record is not written and the session is marked as having lost that many records (a
//! warning says so, and a restore tells the client its history is incomplete): the chain is
//! never held back by the journal, and no record is lost silently.
//!
//! Two stores behind one seam ([`Writes`], and a reader each): SQLite ([`sqlite`]: `rusqlite`
//! with its bundled library, WAL mode), one file a journal, for one conductor; PostgreSQL
//! ([`pg`]: the `postgres` client), `--journal postgres://…`, for conductors that share their
//! sessions. A write that fails (the server gone) is not retried: its records are counted as
//! lost for their sessions, the conductor says so, and the sessions go on (fail-open).

mod pg;
mod sqlite;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use std::time::Duration;

use sacp::jsonrpc::RawJson;
use serde_json::Value;

use crate::lock::lock;

/// How many records may wait for the writer.
pub(crate) const QUEUE: usize = 16 * 1024;

/// How long the writer gathers records into one transaction. Each transaction rewrites the
/// pages its sessions' rows touch, so fewer and larger ones cost the machine less: measured
/// with the chain bench (N = 3 over `--listen`, 64 prompts in flight on 64 sessions, SQLite
/// journal / none, five runs each), 5 ms kept 0.83x of the prompts per second, 50 ms 0.88x to
/// 0.92x. What a conductor killed outright loses is what came in its last 50 ms, at most: a turn
/// that ended then is restored as interrupted.
const GATHER: std::time::Duration = std::time::Duration::from_millis(50);

/// One thing to write.
#[derive(Debug)]
pub(crate) enum Record {
    /// A session began (or was restored under a new agent id): its editor id, the agent's
    /// id, and `{cwd, mcpServers, answer}`.
    Began {
        id: Arc<str>,
        own: String,
        setup: String,
    },
    /// The session's entry number `seq`.
    Entry { id: Arc<str>, seq: u64, body: Body },
    /// The session was closed (`with_parent`: because the session it was a subagent of was):
    /// its entries are deleted, and it is not restored again. Its subagents' sessions, at any
    /// depth, are closed with it (see [`subagents_of`]).
    Closed { id: Arc<str>, with_parent: bool },
    /// The session's entries start again from number 0 — it is loaded through its chain, and
    /// the agent's replay is its history now: what the journal kept of it before goes (its
    /// entries, its count of lost records).
    Afresh { id: Arc<str> },
}

/// An entry as the session layer hands it over: the message's own bytes, shared, not
/// copied — the writer thread, not the routing one, makes the journal's line of it.
#[derive(Debug)]
pub(crate) enum Body {
    /// A notification about the session (`session/update`, mostly).
    Notification { method: Arc<str>, params: RawJson },
    /// A client's prompt: its params.
    Prompt(RawJson),
    /// A turn's end: the answer (written `{"result"}`) or the error (`{"error"}`).
    TurnEnded(Result<RawJson, sacp::jsonrpc::Error>),
}

impl Body {
    fn kind(&self) -> Kind {
        match self {
            Body::Notification { .. } => Kind::Notification,
            Body::Prompt(_) => Kind::Prompt,
            Body::TurnEnded(_) => Kind::TurnEnded,
        }
    }

    /// Appends the entry's JSON: `{method, params}` for a notification.
    fn write_to(&self, out: &mut String) {
        match self {
            Body::Notification { method, params } => {
                out.push_str("{\"method\":");
                if method.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
                    out.push('"');
                    out.push_str(method);
                    out.push('"');
                } else {
                    out.push_str(&Value::String(method.to_string()).to_string());
                }
                out.push_str(",\"params\":");
                out.push_str(params.as_str());
                out.push('}');
            }
            Body::Prompt(params) => out.push_str(params.as_str()),
            Body::TurnEnded(Ok(answer)) => {
                out.push_str("{\"result\":");
                out.push_str(answer.as_str());
                out.push('}');
            }
            Body::TurnEnded(Err(e)) => {
                out.push_str(&serde_json::json!({ "error": e }).to_string());
            }
        }
    }
}

/// What an entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A notification about the session (`session/update`, mostly): `{method, params}`.
    Notification,
    /// A client's prompt: its params.
    Prompt,
    /// A turn's end: `{"result"}` or `{"error"}`.
    TurnEnded,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Notification => "notification",
            Kind::Prompt => "prompt",
            Kind::TurnEnded => "turn_ended",
        }
    }

    fn parse(name: &str) -> Option<Kind> {
        match name {
            "notification" => Some(Kind::Notification),
            "prompt" => Some(Kind::Prompt),
            "turn_ended" => Some(Kind::TurnEnded),
            _ => None,
        }
    }
}

/// A batch as a store writes it: each session's entries in the batch as one chunk — their
/// lines (`KIND BODY`, in order), the first's number and the last's — beside the batch's
/// beginnings and closings. One row a session a batch, not one an entry.
struct Chunks<'a> {
    /// Sessions whose entries start again: deleted before the batch's chunks are written (no
    /// chunk of the batch comes before its session's [`Record::Afresh`]: that record is
    /// written before its session's first entry of a chain).
    afresh: Vec<&'a str>,
    began: Vec<(&'a str, &'a str, &'a str)>,
    /// Sessions closed, and whether with their parent.
    closed: Vec<(&'a str, bool)>,
    /// By session: (first, last, lines).
    chunks: Vec<(&'a str, u64, u64, String)>,
}

impl<'a> Chunks<'a> {
    fn of(batch: &'a [Record]) -> Chunks<'a> {
        let mut out = Chunks {
            afresh: Vec::new(),
            began: Vec::new(),
            closed: Vec::new(),
            chunks: Vec::new(),
        };
        let mut at: HashMap<&str, usize> = HashMap::new();
        for record in batch {
            match record {
                Record::Began { id, own, setup } => out.began.push((id, own, setup)),
                Record::Closed { id, with_parent } => out.closed.push((id, *with_parent)),
                Record::Afresh { id } => out.afresh.push(id),
                Record::Entry { id, seq, body } => {
                    let i = *at.entry(id).or_insert_with(|| {
                        out.chunks.push((id, *seq, *seq, String::new()));
                        out.chunks.len() - 1
                    });
                    let chunk = &mut out.chunks[i];
                    chunk.2 = *seq;
                    chunk.3.push_str(body.kind().name());
                    chunk.3.push(' ');
                    body.write_to(&mut chunk.3);
                    chunk.3.push('\n');
                }
            }
        }
        out
    }
}

/// What is left of a closed session's row (`setup`): nothing of how it began, and, when it
/// ended with the session it was a subagent of, that.
const CLOSED_SETUP: &str = "{}";
const CLOSED_WITH_PARENT_SETUP: &str = r#"{"ended":"parent"}"#;

/// What is left of a closed session's row (`setup`), closed with its parent or not.
fn closed_setup(with_parent: bool) -> &'static str {
    if with_parent {
        CLOSED_WITH_PARENT_SETUP
    } else {
        CLOSED_SETUP
    }
}

/// The open sessions that were subagents of the sessions `closed`, at any depth: closed with
/// them (`children(id)` are the open sessions whose `setup` names `id` as `parent`). A parent
/// deleted with `session/delete` takes its subagents' words with it.
fn subagents_of<E>(
    closed: &[(&str, bool)],
    mut children: impl FnMut(&str) -> Result<Vec<String>, E>,
) -> Result<Vec<String>, E> {
    let mut seen: std::collections::HashSet<String> =
        closed.iter().map(|(id, _)| (*id).to_owned()).collect();
    let mut found = Vec::new();
    let mut parents: Vec<String> = seen.iter().cloned().collect();
    // Subagents of subagents, to a depth no agent nests them.
    for _ in 0..MAX_DEPTH {
        let mut next = Vec::new();
        for parent in &parents {
            for child in children(parent)? {
                if seen.insert(child.clone()) {
                    next.push(child);
                }
            }
        }
        if next.is_empty() {
            break;
        }
        found.extend(next.iter().cloned());
        parents = next;
    }
    Ok(found)
}

/// How deep a closing looks for subagents' sessions.
pub(crate) const MAX_DEPTH: usize = 16;

/// Now, in seconds since the Unix epoch: when a row was written, for the retention.
fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// The entries of a chunk's lines, appended to `entries`; how many lines could not be read
/// (left out, and counted as lost: the restore says the history is incomplete).
fn read_chunk(session: &str, lines: &str, entries: &mut Vec<(Kind, Value)>) -> u64 {
    let mut unread = 0;
    for line in lines.lines() {
        let parsed = line
            .split_once(' ')
            .and_then(|(kind, body)| Some((Kind::parse(kind)?, serde_json::from_str(body).ok()?)));
        match parsed {
            Some(entry) => entries.push(entry),
            None => {
                tracing::warn!(session, "a journal entry that cannot be read is left out");
                unread += 1;
            }
        }
    }
    unread
}

/// A session as the journal has it.
#[derive(Debug, Clone)]
pub(crate) struct Kept {
    pub(crate) own: String,
    /// `{cwd, mcpServers, answer}`.
    pub(crate) setup: Value,
    /// Its entries, in order.
    pub(crate) entries: Vec<(Kind, Value)>,
    /// The number the next entry gets.
    pub(crate) next: u64,
    /// Records of it the journal could not write.
    pub(crate) lost: u64,
    pub(crate) closed: bool,
}

impl Kept {
    /// Whether it was closed because the session it was a subagent of was.
    pub(crate) fn ended_with_parent(&self) -> bool {
        self.closed && self.setup["ended"] == "parent"
    }
}

/// A journal: cheap to clone, shared by the layer's sessions.
#[derive(Debug, Clone)]
pub(crate) struct Journal(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    place: Place,
    to_writer: std::sync::mpsc::SyncSender<Record>,
    /// Records each session lost since the writer last took them, by the editor's id.
    lost: Mutex<HashMap<String, u64>>,
    /// Records lost in all.
    lost_total: AtomicU64,
    /// The store's last write was found torn when it was opened (SQLite: a partial frame at
    /// the end of its write-ahead log, from a writer killed mid-write or a copy taken
    /// mid-write): what it held is gone, and the sessions restored from it may end early.
    torn: bool,
}

/// Where a journal is.
#[derive(Debug, Clone)]
enum Place {
    Sqlite(PathBuf),
    Postgres(String),
}

/// A store's writing side.
trait Writes: Send + 'static {
    /// Writes `batch`, and adds `lost` to the sessions' counts of lost records.
    fn write(&mut self, batch: &[Record], lost: &HashMap<String, u64>) -> Result<(), String>;

    /// Deletes the sessions nothing was written of since `before` (seconds since the Unix
    /// epoch); how many.
    fn sweep(&mut self, before: i64) -> Result<u64, String>;
}

impl Journal {
    /// Opens (and creates, or migrates) the journal `spec` — a `postgres://` (or
    /// `postgresql://`) URL, else a SQLite file's path — and starts its writer, which deletes
    /// the sessions nothing was written of for `retention`.
    pub(crate) async fn open(spec: &str, retention: Duration) -> Result<Journal, String> {
        let owned = spec.to_owned();
        // The stores' clients block (the PostgreSQL one runs a runtime of its own).
        tokio::task::spawn_blocking(move || Journal::open_now(&owned, retention))
            .await
            .map_err(|e| format!("cannot open the journal: {e}"))?
    }

    fn open_now(spec: &str, retention: Duration) -> Result<Journal, String> {
        let (place, writer, torn): (Place, Box<dyn Writes>, bool) =
            if spec.starts_with("postgres://") || spec.starts_with("postgresql://") {
                let writer = pg::Writer::open(spec)?;
                (Place::Postgres(spec.to_owned()), Box::new(writer), false)
            } else {
                let path = Path::new(spec);
                let (writer, torn) = sqlite::Writer::open(path)?;
                (Place::Sqlite(path.to_owned()), Box::new(writer), torn)
            };
        let (to_writer, records) = std::sync::mpsc::sync_channel(QUEUE);
        let inner = Arc::new(Inner {
            place,
            to_writer,
            lost: Mutex::default(),
            lost_total: AtomicU64::new(0),
            torn,
        });
        let weak = Arc::downgrade(&inner);
        std::thread::Builder::new()
            .name("sacp-journal".into())
            .spawn(move || write_all(writer, records, weak, retention))
            .map_err(|e| format!("cannot start the journal's writer: {e}"))?;
        Ok(Journal(inner))
    }

    /// Hands `record` to the writer, never waiting (see the module docs).
    pub(crate) fn record(&self, record: Record) {
        if let Err(e) = self.0.to_writer.try_send(record) {
            let (record, why) = match e {
                std::sync::mpsc::TrySendError::Full(r) => (r, "it is behind"),
                std::sync::mpsc::TrySendError::Disconnected(r) => (r, "its writer stopped"),
            };
            self.0.lose(&[record], why);
        }
    }

    /// Whether the store's last write was found torn when it was opened.
    pub(crate) fn torn(&self) -> bool {
        self.0.torn
    }

    /// The session `id` as the journal has it, if it does.
    pub(crate) async fn kept(&self, id: &str) -> Result<Option<Kept>, String> {
        self.read(id, true).await
    }

    /// [`Journal::kept`] without the entries (none are read): how the session began, and
    /// whether it was closed.
    pub(crate) async fn row(&self, id: &str) -> Result<Option<Kept>, String> {
        self.read(id, false).await
    }

    async fn read(&self, id: &str, entries: bool) -> Result<Option<Kept>, String> {
        let (place, id) = (self.0.place.clone(), id.to_owned());
        tokio::task::spawn_blocking(move || match place {
            Place::Sqlite(path) => sqlite::read(&path, &id, entries),
            Place::Postgres(url) => pg::read(&url, &id, entries),
        })
        .await
        .map_err(|e| format!("the journal's reader failed: {e}"))?
    }
}

/// How often the writer looks for sessions past their retention: a quarter of it, between a
/// second and an hour.
fn sweep_every(retention: Duration) -> Duration {
    (retention / 4).clamp(Duration::from_secs(1), Duration::from_secs(3600))
}

/// The writer thread: what comes, in batches, until every sender is gone; and the retention's
/// sweep, at once and then every [`sweep_every`].
fn write_all(
    mut writer: Box<dyn Writes>,
    records: std::sync::mpsc::Receiver<Record>,
    inner: std::sync::Weak<Inner>,
    retention: Duration,
) {
    // A normal thread, as the routing ones: under `SCHED_BATCH` (the trace writer's class) a
    // busy machine starved it — beside two busy loops it fell seconds behind and, its queue
    // full, lost records — while the chain it gave way to gained prompts per second and lost
    // updates per second, within the bench's noise.
    let mut next_sweep = std::time::Instant::now();
    // Kept from batch to batch: a vector of a full queue's records is an allocation the
    // system maps afresh, and its pages faulted in again, each time.
    let mut batch = Vec::new();
    loop {
        let now = std::time::Instant::now();
        if now >= next_sweep {
            let before = self::now().saturating_sub(retention.as_secs() as i64);
            match writer.sweep(before) {
                Ok(0) => {}
                Ok(n) => tracing::info!(
                    sessions = n,
                    "the journal deleted {n} session(s) past its retention ({})",
                    humantime::format_duration(retention)
                ),
                Err(e) => {
                    tracing::warn!("the journal could not delete what is past its retention: {e}")
                }
            }
            next_sweep = now + sweep_every(retention);
        }
        let first = match records.recv_timeout(next_sweep.saturating_duration_since(now)) {
            Ok(first) => first,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => continue,
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return,
        };
        // What comes within GATHER of the first record goes in the same transaction, taken
        // all at once: the writer sleeps rather than being woken for every record (a thread
        // woken per update costs the routing threads more than the writing does).
        std::thread::sleep(GATHER);
        batch.push(first);
        // Everything that waits (at most the queue's bound): a writer that fell behind catches
        // up in one transaction.
        while batch.len() < QUEUE {
            match records.try_recv() {
                Ok(record) => batch.push(record),
                Err(_) => break,
            }
        }
        let Some(inner) = inner.upgrade() else {
            return;
        };
        let lost = inner.take_lost();
        if let Err(e) = writer.write(&batch, &lost) {
            tracing::error!(records = batch.len(), "the journal could not write: {e}");
            // Counted again, for the next write that works.
            for (id, n) in lost {
                *lock(&inner.lost).entry(id).or_default() += n;
            }
            inner.lose(&batch, "a write failed");
        }
        // The messages' bytes go now, not when the next batch comes.
        batch.clear();
    }
}

impl Inner {
    /// The losses the writer has not recorded yet, taken.
    fn take_lost(&self) -> HashMap<String, u64> {
        std::mem::take(&mut *lock(&self.lost))
    }

    /// `records` were not written (`why`): counted for their sessions, and said.
    fn lose(&self, records: &[Record], why: &str) {
        let mut lost = lock(&self.lost);
        for record in records {
            let id = match record {
                Record::Began { id, .. }
                | Record::Entry { id, .. }
                | Record::Closed { id, .. }
                | Record::Afresh { id } => id,
            };
            *lost.entry(id.to_string()).or_default() += 1;
        }
        drop(lost);
        let n = records.len() as u64;
        let before = self.lost_total.fetch_add(n, Ordering::Relaxed);
        // Said at once, then each time the count passes a power of two.
        if before == 0 || (before + 1).next_power_of_two() <= before + n {
            tracing::warn!(
                lost = before + n,
                "the journal could not write {n} record(s) ({why}): the restore of their sessions will say their history is incomplete"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn what_is_recorded_is_read_back_in_order_and_a_closed_session_keeps_only_that() {
        let dir = std::env::temp_dir().join(format!("sacp-journal-unit-{}", std::process::id()));
        let path = dir.join("journal.db");
        let journal = Journal::open(path.to_str().unwrap(), Duration::from_secs(3600))
            .await
            .unwrap();
        journal.record(Record::Began {
            id: Arc::from("s@0123456789ab"),
            own: "s".into(),
            setup: r#"{"cwd":"/tmp","mcpServers":[]}"#.into(),
        });
        for seq in 0..3 {
            journal.record(Record::Entry {
                id: Arc::from("s@0123456789ab"),
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
        let journal = Journal::open(path.to_str().unwrap(), Duration::from_secs(3600))
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
                own: id.into(),
                setup: setup.to_string(),
            });
            journal.record(Record::Entry {
                id: Arc::from(id),
                seq: 0,
                body: Body::Prompt(RawJson::to_raw(&serde_json::json!({ "of": id })).unwrap()),
            });
        }
        journal.record(Record::Closed {
            id: Arc::from("p"),
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
        let journal = Journal::open(path.to_str().unwrap(), Duration::from_secs(3600))
            .await
            .unwrap();
        let id: Arc<str> = Arc::from("z@0123456789ab");
        journal.record(Record::Began {
            id: id.clone(),
            own: "z".into(),
            setup: "{}".into(),
        });
        let text = "the same words again and again, ".repeat(8);
        for seq in 0..20 {
            journal.record(Record::Entry {
                id: id.clone(),
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
            "INSERT INTO chunks (session, first, last, lines, at) VALUES (?1, 20, 21, x'04224d18deadbeef', 0)",
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
        let journal = Journal::open(path.to_str().unwrap(), Duration::from_secs(3600))
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
        assert_eq!(version, 4);
        drop(conn);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
