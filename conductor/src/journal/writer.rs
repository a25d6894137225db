//! The journal's writer thread: what comes, in batches of [`GATHER`], one transaction each; a
//! write that fails on a broken connection tried again on a new one; losses counted in the
//! store as soon as it takes a write; the retention's sweep.
//!
//! **Tries.** A write that fails for a reason that may pass (the connection broke, the server
//! restarted or is restarting, the store was busy: [`Error::is_transient`]) is tried again at
//! once on a new connection, then after 100, 200, 400 and 800 ms: 1.5 s in all, then its
//! records are counted as lost (the sessions go on: fail-open). While losses wait to be
//! written, the writer tries to write them every [`LOST_EVERY`] even when nothing else comes,
//! so the store counts them within a second of taking writes again.

use std::collections::HashMap;
use std::sync::Weak;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use super::{Deposed, Error, GATHER, Inner, QUEUE, Record, Store};

/// How long the writer waits before each try again of a failed write.
const RETRIES: [Duration; 5] = [
    Duration::ZERO,
    Duration::from_millis(100),
    Duration::from_millis(200),
    Duration::from_millis(400),
    Duration::from_millis(800),
];

/// How often the writer tries to record losses that wait, when nothing else comes.
pub(super) const LOST_EVERY: Duration = Duration::from_secs(1);

/// How often the writer looks for sessions past their retention: a quarter of it, between a
/// second and an hour.
fn sweep_every(retention: Duration) -> Duration {
    (retention / 4).clamp(Duration::from_secs(1), Duration::from_secs(3600))
}

/// The writer thread: what comes, in batches, until every sender is gone; and the retention's
/// sweep, at once and then every [`sweep_every`].
pub(super) fn write_all(
    mut store: Box<dyn Store>,
    records: Receiver<Record>,
    inner: Weak<Inner>,
    retention: Duration,
    deposed: tokio::sync::mpsc::Sender<Deposed>,
) {
    // A normal thread, as the routing ones: under `SCHED_BATCH` (the trace writer's class) a
    // busy machine starved it — beside two busy loops it fell seconds behind and, its queue
    // full, lost records — while the chain it gave way to gained prompts per second and lost
    // updates per second, within the bench's noise.
    let mut next_sweep = Instant::now();
    // Kept from batch to batch: a vector of a full queue's records is an allocation the
    // system maps afresh, and its pages faulted in again, each time.
    let mut batch = Vec::new();
    let mut syncs = Vec::new();
    loop {
        let now = Instant::now();
        if now >= next_sweep {
            sweep(&mut *store, retention);
            next_sweep = now + sweep_every(retention);
        }
        let Some(lost_waits) = inner.upgrade().map(|i| i.has_lost()) else {
            return;
        };
        let mut wait = next_sweep.saturating_duration_since(now);
        if lost_waits {
            wait = wait.min(LOST_EVERY);
        }
        let first = match records.recv_timeout(wait) {
            Ok(first) => first,
            Err(RecvTimeoutError::Timeout) => {
                if lost_waits && let Some(inner) = inner.upgrade() {
                    write(&mut *store, &[], &inner, &deposed);
                }
                continue;
            }
            Err(RecvTimeoutError::Disconnected) => return,
        };
        // What comes within GATHER of the first record goes in the same transaction, taken
        // all at once: the writer sleeps rather than being woken for every record (a thread
        // woken per update costs the routing threads more than the writing does). Someone
        // waiting for everything to be written does not wait for the window too.
        let first_at = unix_us();
        if !matches!(first, Record::Sync(_)) {
            std::thread::sleep(GATHER);
        }
        gather(first, &mut batch, &mut syncs);
        // Everything that waits (at most the queue's bound): a writer that fell behind catches
        // up in one transaction.
        while batch.len() < QUEUE {
            match records.try_recv() {
                Ok(record) => gather(record, &mut batch, &mut syncs),
                Err(_) => break,
            }
        }
        let Some(inner) = inner.upgrade() else {
            return;
        };
        // When the batch began and when it was closed: with the write's end below, what
        // bounds what a conductor killed outright loses (see the module docs of `journal`).
        tracing::debug!(
            records = batch.len(),
            first_at_us = first_at,
            drained_at_us = unix_us(),
            "the journal writes a batch"
        );
        write(&mut *store, &batch, &inner, &deposed);
        // The messages' bytes go now, not when the next batch comes.
        batch.clear();
        for done in syncs.drain(..) {
            let _ = done.send(());
        }
    }
}

/// Puts `record` in the batch, or, a [`Record::Sync`], among those answered after it.
fn gather(
    record: Record,
    batch: &mut Vec<Record>,
    syncs: &mut Vec<tokio::sync::oneshot::Sender<()>>,
) {
    match record {
        Record::Sync(done) => syncs.push(done),
        record => batch.push(record),
    }
}

/// Writes `batch` and the losses that wait, trying again as the module docs say; what is
/// refused goes to the session layer, what cannot be written is counted as lost.
fn write(
    store: &mut dyn Store,
    batch: &[Record],
    inner: &Inner,
    deposed: &tokio::sync::mpsc::Sender<Deposed>,
) {
    let lost = inner.take_lost();
    if batch.is_empty() && lost.is_empty() {
        return;
    }
    let started = Instant::now();
    match write_trying(store, batch, &lost, inner) {
        Ok(refused) => {
            tracing::debug!(
                records = batch.len(),
                took_us = started.elapsed().as_micros() as u64,
                committed_at_us = unix_us(),
                "the journal wrote a batch"
            );
            if !lost.is_empty() {
                tracing::info!(
                    sessions = lost.len(),
                    "the journal recorded the records it had lost"
                );
            }
            for d in refused {
                tracing::warn!(
                    session = %d.id,
                    held_by = d.held_by.as_deref().unwrap_or("another conductor"),
                    "the journal refused this conductor's records of a session another conductor took over"
                );
                // The layer takes them as they come; a layer that went takes none.
                let _ = deposed.blocking_send(d);
            }
        }
        Err(e) => {
            tracing::error!(records = batch.len(), "the journal could not write: {e}");
            inner.unrecorded(lost);
            inner.lose(batch, "a write failed");
        }
    }
}

/// [`Store::write`], tried again on a new connection as long as the failure may pass and
/// [`RETRIES`] lasts.
fn write_trying(
    store: &mut dyn Store,
    batch: &[Record],
    lost: &HashMap<String, u64>,
    inner: &Inner,
) -> Result<Vec<Deposed>, Error> {
    let mut tries = RETRIES.iter();
    loop {
        match store.write(batch, lost, &inner.instance) {
            Ok(refused) => return Ok(refused),
            Err(e) if e.is_transient() => {
                let Some(wait) = tries.next() else {
                    return Err(e);
                };
                tracing::warn!(
                    records = batch.len(),
                    "the journal's write failed ({e}): trying again on a new connection in {}",
                    humantime::format_duration(*wait)
                );
                std::thread::sleep(*wait);
                if let Err(e) = store.reconnect() {
                    tracing::warn!("the journal cannot connect again yet: {e}");
                }
            }
            Err(e) => return Err(e),
        }
    }
}

/// Now, in microseconds since the Unix epoch: what the writer's debug log says its batches'
/// times in, comparable with another process's clock on the same machine.
fn unix_us() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

fn sweep(store: &mut dyn Store, retention: Duration) {
    let before = super::now().saturating_sub(retention.as_secs() as i64);
    match store.sweep(before) {
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
}
