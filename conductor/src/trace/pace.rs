//! When the trace's writer works: how its thread is scheduled against the chain
//! ([`Scheduling`]), and, by default, only in the machine's spare time until it falls behind
//! ([`Pace`]).
//!
//! On a machine the chain keeps busy, every cycle the writer takes is one the chain does not
//! get: what the trace costs is the core it takes, not more work (the conductor's CPU per
//! update is the same whichever way the writer is scheduled). A writer under `SCHED_IDLE`
//! only runs on a core nothing else wants, and cost an idle machine least (0.952–0.958x of
//! the untraced throughput at N = 3, against 0.90–0.93x for a normal or `SCHED_BATCH`
//! thread), but beside other work it gets almost no CPU and drops most of the lines; and an
//! unprivileged thread cannot leave `SCHED_IDLE` once in it. So the default ([`Spare`]) uses
//! two threads: the writer, under `SCHED_BATCH`, and a `SCHED_IDLE` thread that does nothing
//! but tell the writer when it got to run, that is, when a core had nothing else to do. The
//! writer takes the next batch when told so, and, when the queue is filling (it is behind),
//! works through it at its fair share until it is empty.
//!
//! [`Spare`]: Scheduling::Spare

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::Thread;
use std::time::{Duration, Instant};

/// How the writer thread is scheduled against the chain: `SACP_TRACE_WRITER` = `spare` (the
/// default, see the module), `idle` (`SCHED_IDLE`: it runs only on a core nothing else
/// wants), `batch` (`SCHED_BATCH`; `batch=N` at nice N), `nice` (nice 19, or `nice=N`), or
/// `normal` (as the conductor's other threads). The routing loop never waits for the writer
/// whichever it is: when the writer falls behind, lines are dropped and the file says so (see
/// [`super::Trace`]); the class decides how much CPU the trace may take from a busy machine,
/// and so how much of it is dropped there. See the chain bench's trace rounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Scheduling {
    /// The writer under `SCHED_BATCH`, working in spare time until it falls behind.
    Spare,
    Idle,
    /// `SCHED_BATCH` at this nice value: a fair share of the CPU, as a normal thread, but
    /// its wake-ups never preempt a running thread of the chain.
    Batch(i32),
    Nice(i32),
    Normal,
}

impl Scheduling {
    /// The default, unless `SACP_TRACE_WRITER` says otherwise. Measured with the chain
    /// bench's trace rounds (N = 3, 2 cores, traced / untraced throughput; lines dropped):
    /// `SCHED_IDLE` 0.952x idle, but beside two busy loops it gets so little CPU that 81% of
    /// the lines are dropped; nice 10 0.935x idle and none dropped beside busy loops, but with
    /// the viewer's browser rendering a 100k-update turn on the same machine it dropped 80% of
    /// them; plain 0.896x idle and 0.926x beside busy loops, `SCHED_BATCH` 0.921x and 0.957x,
    /// none dropped. A trace with holes exactly when the machine is busy is worth less to the
    /// user debugging a chain than a few percent of throughput: the spare-time writer keeps
    /// `SCHED_BATCH`'s fair share when it is behind, and `SCHED_IDLE`'s cost when it is not.
    pub(super) const DEFAULT: Scheduling = Scheduling::Spare;

    pub(super) fn from_env() -> Scheduling {
        match std::env::var("SACP_TRACE_WRITER") {
            Ok(value) => Scheduling::parse(&value).unwrap_or_else(|| {
                tracing::warn!(
                    "SACP_TRACE_WRITER={value:?} is not spare, idle, batch, batch=N, nice, \
                     nice=N or normal: the trace writer is scheduled as by default"
                );
                Scheduling::DEFAULT
            }),
            Err(_) => Scheduling::DEFAULT,
        }
    }

    fn parse(value: &str) -> Option<Scheduling> {
        match value.trim() {
            "spare" => Some(Scheduling::Spare),
            "idle" => Some(Scheduling::Idle),
            "nice" => Some(Scheduling::Nice(19)),
            "normal" => Some(Scheduling::Normal),
            "batch" => Some(Scheduling::Batch(0)),
            other if other.starts_with("batch=") => {
                let n: i32 = other.strip_prefix("batch=")?.parse().ok()?;
                (0..=19).contains(&n).then_some(Scheduling::Batch(n))
            }
            other => {
                let n: i32 = other.strip_prefix("nice=")?.parse().ok()?;
                (0..=19).contains(&n).then_some(Scheduling::Nice(n))
            }
        }
    }

    /// Applies itself to the calling thread (the writer; for [`Scheduling::Spare`], the
    /// writer's `SCHED_BATCH`).
    fn apply(self) {
        use thread_priority::NormalThreadSchedulePolicy::{Batch, Idle};
        let (policy, nice) = match self {
            Scheduling::Normal => return,
            Scheduling::Spare => (Some((Batch, "SCHED_BATCH")), 0),
            Scheduling::Idle => (Some((Idle, "SCHED_IDLE")), 19),
            Scheduling::Batch(n) => (Some((Batch, "SCHED_BATCH")), n),
            Scheduling::Nice(n) => (None, n),
        };
        if let Some((policy, name)) = policy {
            set_policy(policy, name);
        }
        // Always: `set_policy` leaves the thread at nice 19 (`ThreadPriority::Min`). On Linux
        // the nice value is the thread's own: `None` is the calling thread.
        if let Err(e) = rustix::process::setpriority_process(None, nice) {
            tracing::debug!("cannot set the trace writer's priority: {e}");
        }
    }
}

/// Puts the calling thread under `policy` (a normal one: at its nice value).
fn set_policy(policy: thread_priority::NormalThreadSchedulePolicy, name: &str) {
    use thread_priority::{
        ThreadPriority, ThreadSchedulePolicy, set_thread_priority_and_policy, thread_native_id,
    };
    let policy = ThreadSchedulePolicy::Normal(policy);
    if let Err(e) = set_thread_priority_and_policy(thread_native_id(), ThreadPriority::Min, policy)
    {
        tracing::debug!("cannot run a trace thread under {name}: {e:?}");
    }
}

/// From this many commands waiting, the writer is behind: it stops waiting for spare time
/// and works through the queue at its fair share until it is empty. Half the queue: the
/// other half is the time the scheduler has to give the writer a core before lines drop.
const BEHIND: usize = super::BATCHES / 2;

/// How long the writer waits for spare time before it takes the next command anyway: on a
/// machine without any, lines still reach the file (and a viewer) about as soon as the loop
/// hands them over when it has nothing to do.
const PATIENCE: Duration = super::FLUSH_EVERY;

/// What the loop and the writer share about the queue between them (see the module).
#[derive(Debug)]
pub(super) struct Pace {
    scheduling: Scheduling,
    /// Commands sent and not yet taken by the writer (counted before they are sent).
    queued: AtomicUsize,
    /// The writer thread, once it runs.
    writer: OnceLock<Thread>,
    /// The spare-time thread said it ran since the writer asked.
    spare_time: AtomicBool,
    /// The writer is gone: the spare-time thread ends.
    stop: AtomicBool,
}

impl Pace {
    pub(super) fn new(scheduling: Scheduling) -> Arc<Pace> {
        Arc::new(Pace {
            scheduling,
            queued: AtomicUsize::new(0),
            writer: OnceLock::new(),
            spare_time: AtomicBool::new(false),
            stop: AtomicBool::new(false),
        })
    }

    /// The loop sends a command with `send`: counted, and the writer woken when the queue is
    /// filling.
    pub(super) fn send<T, E>(&self, send: impl FnOnce() -> Result<T, E>) -> Result<T, E> {
        let queued = self.queued.fetch_add(1, Ordering::AcqRel) + 1;
        let sent = send();
        if sent.is_err() {
            self.queued.fetch_sub(1, Ordering::AcqRel);
        } else if queued == BEHIND
            && let Some(writer) = self.writer.get()
        {
            writer.unpark();
        }
        sent
    }

    /// The writer's side: set up once, on its own thread.
    pub(super) fn start(self: &Arc<Pace>) -> Turns {
        self.scheduling.apply();
        let _ = self.writer.set(std::thread::current());
        let spare = (self.scheduling == Scheduling::Spare)
            .then(|| {
                let pace = Arc::clone(self);
                std::thread::Builder::new()
                    .name("trace-spare".into())
                    .spawn(move || pace.spare_thread())
                    .map_err(|e| tracing::debug!("cannot start the trace's spare-time thread: {e}"))
                    .ok()
            })
            .flatten()
            .map(|handle| handle.thread().clone());
        Turns {
            pace: Arc::clone(self),
            spare,
            behind: false,
        }
    }

    /// The `SCHED_IDLE` thread: each time the writer asks, says so as soon as it runs.
    fn spare_thread(&self) {
        set_policy(
            thread_priority::NormalThreadSchedulePolicy::Idle,
            "SCHED_IDLE",
        );
        loop {
            std::thread::park();
            if self.stop.load(Ordering::Acquire) {
                return;
            }
            self.spare_time.store(true, Ordering::Release);
            if let Some(writer) = self.writer.get() {
                writer.unpark();
            }
        }
    }
}

/// The writer's turns: it calls [`Turns::took`] for each command it takes from the queue,
/// and [`Turns::wait`] before it works on one.
#[derive(Debug)]
pub(super) struct Turns {
    pace: Arc<Pace>,
    /// The spare-time thread ([`Scheduling::Spare`] only).
    spare: Option<Thread>,
    /// Working through a queue that filled, until it is empty.
    behind: bool,
}

impl Turns {
    /// A command was taken from the queue.
    pub(super) fn took(&mut self) {
        let left = self.pace.queued.fetch_sub(1, Ordering::AcqRel) - 1;
        if left >= BEHIND {
            self.behind = true;
        } else if left == 0 {
            self.behind = false;
        }
    }

    /// Waits until the writer may work on the command it took: at once for other
    /// schedulings, when behind, and for `urgent` commands; otherwise when a core has
    /// nothing else to do (the spare-time thread ran), the queue is filling, or after
    /// [`PATIENCE`].
    pub(super) fn wait(&mut self, urgent: bool) {
        let Some(spare) = &self.spare else { return };
        if urgent || self.behind {
            return;
        }
        let pace = &self.pace;
        pace.spare_time.store(false, Ordering::Release);
        spare.unpark();
        let deadline = Instant::now() + PATIENCE;
        loop {
            if pace.spare_time.swap(false, Ordering::AcqRel) {
                return;
            }
            if pace.queued.load(Ordering::Acquire) >= BEHIND {
                self.behind = true;
                return;
            }
            let now = Instant::now();
            if now >= deadline {
                return;
            }
            std::thread::park_timeout(deadline - now);
        }
    }
}

impl Drop for Turns {
    fn drop(&mut self) {
        self.pace.stop.store(true, Ordering::Release);
        if let Some(spare) = &self.spare {
            spare.unpark();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{BEHIND, Pace, Scheduling};

    /// Counts a command as sent.
    fn send(pace: &Pace) {
        pace.send(|| Ok::<(), ()>(())).expect("sent");
    }

    #[test]
    fn the_writer_is_behind_from_a_half_full_queue_until_it_is_empty() {
        let pace = Pace::new(Scheduling::Normal);
        let mut turns = pace.start();
        for _ in 0..BEHIND {
            send(&pace);
        }
        turns.took();
        assert!(!turns.behind, "{} left is not behind", BEHIND - 1);
        send(&pace);
        send(&pace);
        turns.took();
        assert!(turns.behind, "{BEHIND} left is behind");
        for left in (0..BEHIND).rev() {
            turns.took();
            assert_eq!(turns.behind, left > 0, "{left} left");
        }
        // A command the queue refused is not counted.
        assert_eq!(pace.send(|| Err::<(), ()>(())), Err(()));
        assert_eq!(pace.queued.load(std::sync::atomic::Ordering::Acquire), 0);
    }

    #[test]
    fn a_writer_waiting_for_spare_time_goes_on_when_it_falls_behind_or_after_its_patience() {
        let pace = Pace::new(Scheduling::Spare);
        let (started, turns) = std::sync::mpsc::channel();
        let writer = {
            let pace = std::sync::Arc::clone(&pace);
            std::thread::spawn(move || {
                let mut turns = pace.start();
                started.send(()).expect("the test waits");
                // Waits for spare time, the queue or its patience: never longer.
                let start = std::time::Instant::now();
                turns.wait(false);
                let waited = start.elapsed();
                (waited, turns.behind)
            })
        };
        turns
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("the writer starts");
        let (waited, _) = writer.join().expect("the writer ends");
        assert!(
            waited < super::PATIENCE + std::time::Duration::from_secs(2),
            "waited {waited:?}"
        );

        // A queue that fills while the writer waits sends it on at once, behind.
        let pace = Pace::new(Scheduling::Spare);
        let mut turns = pace.start();
        for _ in 0..BEHIND {
            send(&pace);
        }
        turns.wait(false);
        assert!(turns.behind);
    }

    #[test]
    fn every_scheduling_has_a_name() {
        for (name, scheduling) in [
            ("spare", Scheduling::Spare),
            ("idle", Scheduling::Idle),
            ("batch", Scheduling::Batch(0)),
            ("batch=10", Scheduling::Batch(10)),
            ("nice", Scheduling::Nice(19)),
            ("nice=5", Scheduling::Nice(5)),
            ("normal", Scheduling::Normal),
        ] {
            assert_eq!(Scheduling::parse(name), Some(scheduling), "{name}");
        }
        assert_eq!(Scheduling::parse("batch=20"), None);
        assert_eq!(Scheduling::parse("fast"), None);
    }
}
