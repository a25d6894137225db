//! The session journal: what the editor side of each session saw, kept in a store as the
//! session goes, so that a conductor that restarts (or another one sharing the store) can
//! restore a session a client asks for with `session/load`.
//!
//! For each session: how it began (the editor's id, the agent's id, the `cwd` and MCP servers
//! it was created with, the agent's answer), then its entries in order — the updates, the
//! prompts, each turn's end — and who holds it ([`hold`]: one conductor at a time, with a
//! lease that dies with it and an epoch that fences a deposed holder's writes). The session
//! layer hands records to [`Journal::record`], which never waits: a bounded queue ([`QUEUE`])
//! feeds a writer thread ([`writer`]) that writes them in batches, one transaction each. When
//! the writer falls behind and the queue is full, the record is not written and the session is
//! marked as having lost that many records (a warning says so, and a restore tells the client
//! its history is incomplete): the chain is never held back by the journal, and no record is
//! lost silently.
//!
//! Two stores behind one seam ([`Store`], and a reader and a claim each): SQLite ([`sqlite`]:
//! `rusqlite` with its bundled library, WAL mode), one file a journal, shared by the
//! conductors of one machine; PostgreSQL ([`pg`]: the `postgres` client), `--journal
//! postgres://…`, for conductors that share their sessions across machines. A write that fails
//! on a connection that broke (a server that restarted, say) is tried again on a new one, with
//! a backoff ([`writer`]); only then are its records counted as lost for their sessions, the
//! conductor says so, and the sessions go on (fail-open).
//!
//! **What a conductor killed outright loses** is what reached the writer since its last
//! commit: at most the gather window ([`GATHER`], 50 ms) and two writes (the one in progress,
//! and the one its records wait for) before the kill. A replay never skips a record silently:
//! a gap in a session's numbers, whatever made it, counts as lost, and the restore says the
//! history is incomplete.

mod error;
mod hold;
mod pg;
mod sqlite;
mod writer;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use std::time::Duration;

use sacp::jsonrpc::RawJson;
use serde_json::Value;

pub(crate) use self::error::Error;
pub(crate) use self::hold::{Claim, Deposed, Instance};
use crate::lock::lock;

/// How many records may wait for the writer.
pub(crate) const QUEUE: usize = 16 * 1024;

/// How long the writer gathers records into one transaction. Each transaction rewrites the
/// pages its sessions' rows touch, so fewer and larger ones cost the machine less: measured
/// with the chain bench (N = 3 over `--listen`, 64 prompts in flight on 64 sessions, SQLite
/// journal / none, five runs each), 5 ms kept 0.83x of the prompts per second, 50 ms 0.88x to
/// 0.92x. See the module docs for what a conductor killed outright loses.
pub(crate) const GATHER: Duration = Duration::from_millis(50);

/// One thing to write. Every record of a session carries the epoch under which this
/// conductor holds it (see [`hold`]).
#[derive(Debug)]
pub(crate) enum Record {
    /// A session began (or was restored under a new agent id): its editor id, the agent's
    /// id, and `{cwd, mcpServers, answer}`. Its row names this conductor as its holder.
    Began {
        id: Arc<str>,
        epoch: u64,
        own: String,
        setup: String,
    },
    /// The session's entry number `seq`.
    Entry {
        id: Arc<str>,
        epoch: u64,
        seq: u64,
        body: Body,
    },
    /// The session was closed (`with_parent`: because the session it was a subagent of was):
    /// its entries are deleted, and it is not restored again. Its subagents' sessions, at any
    /// depth, are closed with it (see [`subagents_of`]).
    Closed {
        id: Arc<str>,
        epoch: u64,
        with_parent: bool,
    },
    /// The session's entries start again from number 0 — it is loaded through its chain, and
    /// the agent's replay is its history now: what the journal kept of it before goes (its
    /// entries, its count of lost records).
    Afresh { id: Arc<str>, epoch: u64 },
    /// The session ended here without being closed (its chain ended, or no client took it
    /// back): it names no holder any more, and any conductor's claim takes it.
    Released { id: Arc<str>, epoch: u64 },
    /// Answered once everything handed over before it was written (or lost).
    Sync(tokio::sync::oneshot::Sender<()>),
}

impl Record {
    /// The session it is about, and its epoch (none for a [`Record::Sync`]).
    fn session(&self) -> Option<(&str, u64)> {
        match self {
            Record::Began { id, epoch, .. }
            | Record::Entry { id, epoch, .. }
            | Record::Closed { id, epoch, .. }
            | Record::Afresh { id, epoch }
            | Record::Released { id, epoch } => Some((id, *epoch)),
            Record::Sync(_) => None,
        }
    }
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
/// beginnings, closings and releases. One row a session a batch, not one an entry.
struct Chunks<'a> {
    /// Sessions whose entries start again: deleted before the batch's chunks are written (no
    /// chunk of the batch comes before its session's [`Record::Afresh`]: that record is
    /// written before its session's first entry of a chain).
    afresh: Vec<&'a str>,
    /// (id, epoch, own, setup).
    began: Vec<(&'a str, u64, &'a str, &'a str)>,
    /// Sessions closed, and whether with their parent.
    closed: Vec<(&'a str, bool)>,
    /// Sessions released, with the epoch they were held under.
    released: Vec<(&'a str, u64)>,
    /// By session: (first, last, epoch, lines).
    chunks: Vec<(&'a str, u64, u64, u64, String)>,
}

impl<'a> Chunks<'a> {
    fn of(batch: &[&'a Record]) -> Chunks<'a> {
        let mut out = Chunks {
            afresh: Vec::new(),
            began: Vec::new(),
            closed: Vec::new(),
            released: Vec::new(),
            chunks: Vec::new(),
        };
        let mut at: HashMap<&str, usize> = HashMap::new();
        for record in batch {
            match record {
                Record::Began {
                    id,
                    epoch,
                    own,
                    setup,
                } => out.began.push((id, *epoch, own, setup)),
                Record::Closed {
                    id, with_parent, ..
                } => out.closed.push((id, *with_parent)),
                Record::Afresh { id, .. } => out.afresh.push(id),
                Record::Released { id, epoch } => out.released.push((id, *epoch)),
                Record::Entry {
                    id,
                    epoch,
                    seq,
                    body,
                } => {
                    let i = *at.entry(id).or_insert_with(|| {
                        out.chunks.push((id, *seq, *seq, *epoch, String::new()));
                        out.chunks.len() - 1
                    });
                    let chunk = &mut out.chunks[i];
                    chunk.2 = *seq;
                    chunk.4.push_str(body.kind().name());
                    chunk.4.push(' ');
                    body.write_to(&mut chunk.4);
                    chunk.4.push('\n');
                }
                Record::Sync(_) => {}
            }
        }
        out
    }
}

/// The sessions `batch` writes to, each once, sorted: the order a store locks their rows in,
/// so that two writers never wait for each other in a circle.
fn sessions_of(batch: &[Record]) -> Vec<&str> {
    let mut ids: Vec<&str> = batch
        .iter()
        .filter_map(|r| r.session().map(|(id, _)| id))
        .collect();
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// The records of `batch` a store takes, and the sessions it refuses: a record whose session
/// the store holds under a newer epoch (`held`: by id, the store's epoch and holder's name) is
/// refused — another conductor took the session over.
fn fence<'a>(
    batch: &'a [Record],
    held: &HashMap<String, (u64, Option<String>)>,
) -> (Vec<&'a Record>, Vec<Deposed>) {
    let mut taken = Vec::with_capacity(batch.len());
    let mut deposed: Vec<Deposed> = Vec::new();
    for record in batch {
        let Some((id, epoch)) = record.session() else {
            continue;
        };
        match held.get(id) {
            Some((newer, by)) if *newer > epoch => {
                if !deposed.iter().any(|d| d.id == id && d.epoch == epoch) {
                    deposed.push(Deposed {
                        id: id.to_owned(),
                        epoch,
                        held_by: by.clone(),
                    });
                }
            }
            _ => taken.push(record),
        }
    }
    (taken, deposed)
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

/// A session's entries as a reader gathers them from its chunks, in order: a chunk that
/// starts past where the last one ended is a gap (its records never written, whatever the
/// reason), counted as lost; one that starts before (a write tried again after its commit went
/// through unacknowledged) gives only what is new.
#[derive(Debug, Default)]
struct Reading {
    entries: Vec<(Kind, Value)>,
    /// The number the next entry gets.
    next: u64,
    /// Entries missing between chunks.
    gaps: u64,
    /// Lines that could not be read.
    unread: u64,
}

impl Reading {
    /// The chunk of entries `first..=last`, its lines (or why they cannot be read).
    fn chunk(
        &mut self,
        session: &str,
        first: u64,
        last: u64,
        lines: Result<&str, &error::Unreadable>,
    ) {
        if last < self.next {
            return;
        }
        let lines = match lines {
            Ok(lines) => lines,
            Err(e) => {
                tracing::warn!(
                    session,
                    "a journal chunk that cannot be read is left out: its lines {e}"
                );
                self.unread += last + 1 - first.max(self.next);
                self.gaps += first.saturating_sub(self.next);
                self.next = last + 1;
                return;
            }
        };
        self.gaps += first.saturating_sub(self.next);
        let skip = self.next.saturating_sub(first) as usize;
        for line in lines.lines().skip(skip) {
            let parsed = line.split_once(' ').and_then(|(kind, body)| {
                Some((Kind::parse(kind)?, serde_json::from_str(body).ok()?))
            });
            match parsed {
                Some(entry) => self.entries.push(entry),
                None => {
                    tracing::warn!(session, "a journal entry that cannot be read is left out");
                    self.unread += 1;
                }
            }
        }
        self.next = last + 1;
    }

    /// What the journal has of the session, `lost` records of it counted by the writers.
    fn kept(self, own: String, setup: &str, closed: bool, lost: u64) -> Kept {
        if self.gaps > lost {
            tracing::warn!(
                gaps = self.gaps,
                counted = lost,
                "a session's journal has entries missing that no writer counted"
            );
        }
        Kept {
            own,
            setup: serde_json::from_str(setup).unwrap_or(Value::Null),
            entries: self.entries,
            next: self.next,
            // A lost entry leaves a gap and is counted: the larger says at least how many.
            lost: lost.max(self.gaps) + self.unread,
            closed,
        }
    }
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
    /// Records of it the journal could not write (at least).
    pub(crate) lost: u64,
    pub(crate) closed: bool,
}

#[cfg(test)]
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
    /// This conductor, as the rows name their holders.
    instance: Instance,
    to_writer: std::sync::mpsc::SyncSender<Record>,
    /// Records each session lost since the writer last took them, by the editor's id.
    lost: Mutex<HashMap<String, u64>>,
    /// Records lost in all.
    lost_total: AtomicU64,
    /// The store's last write was found torn when it was opened (SQLite: a partial frame at
    /// the end of its write-ahead log, from a writer killed mid-write or a copy taken
    /// mid-write): what it held is gone, and the sessions restored from it may end early.
    torn: bool,
    /// The sessions whose records the store refused, for the session layer.
    deposed: Mutex<Option<tokio::sync::mpsc::Receiver<Deposed>>>,
    /// This conductor's lease, held as long as the journal is.
    _lease: Lease,
}

/// Where a journal is.
#[derive(Debug, Clone)]
enum Place {
    Sqlite(PathBuf),
    Postgres(String),
}

/// A conductor's lease on its journal (see [`hold`]).
#[derive(Debug)]
#[expect(
    dead_code,
    reason = "held for what dropping it does: the lease ends with the journal"
)]
enum Lease {
    Sqlite(hold::LockFile),
    Postgres(pg::Lease),
}

/// A store's writing side.
trait Store: Send + 'static {
    /// Writes what of `batch` the store takes (see [`fence`]), as `me`, and adds `lost` to
    /// the sessions' counts of lost records: the sessions whose records it refused.
    fn write(
        &mut self,
        batch: &[Record],
        lost: &HashMap<String, u64>,
        me: &Instance,
    ) -> Result<Vec<Deposed>, Error>;

    /// Deletes the sessions nothing was written of since `before` (seconds since the Unix
    /// epoch); how many.
    fn sweep(&mut self, before: i64) -> Result<u64, Error>;

    /// Drops its connection and makes a new one, for a write tried again.
    fn reconnect(&mut self) -> Result<(), Error>;
}

/// How many deposed sessions wait for the session layer to take them.
const DEPOSED: usize = 1024;

impl Journal {
    /// Opens (and creates, or migrates) the journal `spec` — a `postgres://` (or
    /// `postgresql://`) URL, else a SQLite file's path — takes this conductor's lease on it
    /// (as `instance`, the name other conductors give clients for the sessions it holds), and
    /// starts its writer, which deletes the sessions nothing was written of for `retention`.
    pub(crate) async fn open(
        spec: &str,
        retention: Duration,
        instance: &str,
    ) -> Result<Journal, Error> {
        let (owned, instance) = (spec.to_owned(), Instance::new(instance));
        // The stores' clients block (the PostgreSQL one runs a runtime of its own).
        tokio::task::spawn_blocking(move || Journal::open_now(&owned, retention, instance))
            .await
            .map_err(|_| Error::Task { what: "opening" })?
    }

    fn open_now(spec: &str, retention: Duration, instance: Instance) -> Result<Journal, Error> {
        let (place, store, torn, lease): (Place, Box<dyn Store>, bool, Lease) =
            if spec.starts_with("postgres://") || spec.starts_with("postgresql://") {
                let store = pg::Writer::open(spec, &instance)?;
                let lease = pg::Lease::take(spec, &instance)?;
                (
                    Place::Postgres(spec.to_owned()),
                    Box::new(store),
                    false,
                    Lease::Postgres(lease),
                )
            } else {
                let path = Path::new(spec);
                let (store, torn) = sqlite::Writer::open(path)?;
                let lease = hold::LockFile::take(&hold::holders_dir(path), instance.id)?;
                (
                    Place::Sqlite(path.to_owned()),
                    Box::new(store),
                    torn,
                    Lease::Sqlite(lease),
                )
            };
        let (to_writer, records) = std::sync::mpsc::sync_channel(QUEUE);
        let (deposed, deposed_rx) = tokio::sync::mpsc::channel(DEPOSED);
        let inner = Arc::new(Inner {
            place,
            instance,
            to_writer,
            lost: Mutex::default(),
            lost_total: AtomicU64::new(0),
            torn,
            deposed: Mutex::new(Some(deposed_rx)),
            _lease: lease,
        });
        let weak = Arc::downgrade(&inner);
        std::thread::Builder::new()
            .name("sacp-journal".into())
            .spawn(move || writer::write_all(store, records, weak, retention, deposed))
            .map_err(|e| Error::io("cannot start the journal's writer", e))?;
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

    /// The sessions whose records the store refused (another conductor took them over), for
    /// the session layer: given once.
    pub(crate) fn deposed(&self) -> Option<tokio::sync::mpsc::Receiver<Deposed>> {
        lock(&self.0.deposed).take()
    }

    /// Waits until everything handed to the writer before was written (or lost).
    pub(crate) async fn sync(&self) {
        let (done, written) = tokio::sync::oneshot::channel();
        let to_writer = self.0.to_writer.clone();
        // The queue may be full: waiting for room is this task's, not a routing thread's.
        let sent =
            tokio::task::spawn_blocking(move || to_writer.send(Record::Sync(done)).is_ok()).await;
        if matches!(sent, Ok(true)) {
            let _ = written.await;
        }
    }

    /// Claims the session `id` for this conductor (see [`hold`]), once everything this
    /// conductor handed the writer before is written: what the journal kept of it when it is
    /// this conductor's now. With `create`, a session the journal does not know is made this
    /// conductor's, under epoch 1 (a session an agent loads through its chain).
    pub(crate) async fn claim(&self, id: &str, create: bool) -> Result<Claim, Error> {
        self.sync().await;
        let (place, id, me) = (self.0.place.clone(), id.to_owned(), self.0.instance.clone());
        tokio::task::spawn_blocking(move || match place {
            Place::Sqlite(path) => sqlite::claim(&path, &id, &me, create),
            Place::Postgres(url) => pg::claim(&url, &id, &me, create),
        })
        .await
        .map_err(|_| Error::Task { what: "claim" })?
    }

    /// The session `id` as the journal has it, if it does.
    #[cfg(test)]
    pub(crate) async fn kept(&self, id: &str) -> Result<Option<Kept>, Error> {
        self.read(id, true).await
    }

    /// The session `id` as the journal has it, without the entries (none are read): how it
    /// began, and whether it was closed.
    pub(crate) async fn row(&self, id: &str) -> Result<Option<Kept>, Error> {
        self.read(id, false).await
    }

    async fn read(&self, id: &str, entries: bool) -> Result<Option<Kept>, Error> {
        let (place, id) = (self.0.place.clone(), id.to_owned());
        tokio::task::spawn_blocking(move || match place {
            Place::Sqlite(path) => sqlite::read(&path, &id, entries),
            Place::Postgres(url) => pg::read(&url, &id, entries),
        })
        .await
        .map_err(|_| Error::Task { what: "reader" })?
    }
}

impl Inner {
    /// The losses the writer has not recorded yet, taken.
    fn take_lost(&self) -> HashMap<String, u64> {
        std::mem::take(&mut *lock(&self.lost))
    }

    /// Whether there are losses the writer has not recorded yet.
    fn has_lost(&self) -> bool {
        !lock(&self.lost).is_empty()
    }

    /// Counts `lost` again, for the next write that works.
    fn unrecorded(&self, lost: HashMap<String, u64>) {
        let mut pending = lock(&self.lost);
        for (id, n) in lost {
            *pending.entry(id).or_default() += n;
        }
    }

    /// `records` were not written (`why`): counted for their sessions, and said.
    fn lose(&self, records: &[Record], why: &str) {
        let mut lost = lock(&self.lost);
        let mut n = 0;
        for (id, _) in records.iter().filter_map(Record::session) {
            *lost.entry(id.to_owned()).or_default() += 1;
            n += 1;
        }
        drop(lost);
        let before = self.lost_total.fetch_add(n, Ordering::Relaxed);
        // Said at once, then each time the count passes a power of two.
        if n > 0 && (before == 0 || (before + 1).next_power_of_two() <= before + n) {
            tracing::warn!(
                lost = before + n,
                "the journal could not write {n} record(s) ({why}): the restore of their sessions will say their history is incomplete"
            );
        }
    }
}

#[cfg(test)]
mod tests;
