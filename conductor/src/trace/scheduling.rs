//! How the trace's writer thread is scheduled against the chain (`SACP_TRACE_WRITER`).

use std::sync::atomic::{AtomicUsize, Ordering};

/// How the writer thread is scheduled against the chain: `SACP_TRACE_WRITER` = `yield` (the
/// default: `SCHED_BATCH`, giving way to the chain while it keeps up; `yield=E` or `yield=E:U`
/// gives way every E lines while fewer than U batches wait, 128 and 4 by default), `batch`
/// (`SCHED_BATCH` without giving way; `batch=N` at nice N), `idle` (`SCHED_IDLE`: it runs
/// only on a core nothing else wants), `nice` (nice 19, or `nice=N`), or `normal` (as the
/// conductor's other threads). The routing loop never waits for the writer whichever it is:
/// when the writer falls behind, lines are dropped and the file says so (see
/// [`super::Trace`]); the class decides how much CPU the trace may take from a busy machine,
/// and so how much of it is dropped there. See the chain bench's trace rounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Scheduling {
    Idle,
    /// `SCHED_BATCH` at this nice value: a fair share of the CPU, as a normal thread, but
    /// its wake-ups never preempt a running thread of the chain.
    Batch(i32),
    /// `SCHED_BATCH` at nice 0, giving way to other threads (see [`GiveWay`]).
    Yielding(GiveWay),
    Nice(i32),
    Normal,
}

/// When the writer gives up its core (`sched_yield`): every `every` lines it makes, as long as
/// fewer than `until` batches wait for it. A thread of the chain woken on the writer's core
/// then runs at once, instead of after the writer's time slice (up to milliseconds: the
/// scheduler protects a running thread's slice from wake-ups); once the writer is behind, it
/// keeps the core for its fair share until it has caught up, as without giving way, so that a
/// busy machine costs the trace no more lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct GiveWay {
    pub(super) every: usize,
    pub(super) until: usize,
}

impl GiveWay {
    const DEFAULT: GiveWay = GiveWay {
        every: 128,
        until: 4,
    };
}

/// A [`GiveWay`] at work in the writer: it counts the lines made.
#[derive(Debug)]
pub(super) struct Giving {
    way: GiveWay,
    made: usize,
}

impl Giving {
    /// A line is about to be made, with `waiting` batches waiting for the writer: gives way
    /// when it is time to.
    pub(super) fn line(&mut self, waiting: &AtomicUsize) {
        self.made += 1;
        if self.made == self.way.every {
            self.made = 0;
            if waiting.load(Ordering::Relaxed) < self.way.until {
                std::thread::yield_now();
            }
        }
    }
}

impl Scheduling {
    /// The default, unless `SACP_TRACE_WRITER` says otherwise: `SCHED_BATCH`, giving way
    /// every 128 lines while fewer than 4 batches wait. Measured with the chain bench's trace
    /// rounds (N = 3, 2 cores, traced / untraced throughput; lines dropped): `SCHED_IDLE`
    /// 0.952x idle, but beside two busy loops it gets so little CPU that 81% of the lines are
    /// dropped; nice 10 0.935x idle and none dropped beside busy loops, but with the viewer's
    /// browser rendering a 100k-update turn on the same machine it dropped 80% of them. In one
    /// run of 6 generations each: plain 0.896x idle and 0.926x beside busy loops, `SCHED_BATCH`
    /// 0.921x and 0.957x, batch at nice 10 0.933x and 0.860x; none dropped a line. Giving way
    /// (same CPU per update as `SCHED_BATCH`): 0.952–0.960x idle in four measurements over
    /// three runs, against 0.921x for `SCHED_BATCH` in the first; beside busy loops alike
    /// within the rounds' noise (0.840–0.924x, `SCHED_BATCH` 0.819–0.914x), none dropped
    /// while it gave way only until 4 batches waited (1.2% when it gave way however far behind
    /// it was). A trace with holes exactly when the machine is busy is worth less to the user
    /// debugging a chain than a few percent of throughput. What the writer's CPU costs a busy
    /// chain: beside two busy loops, in one run of 12 generations, the default measured 0.838x
    /// and `SCHED_IDLE` (which dropped 66% of the lines) 0.938x, with the event loop 10–11%
    /// dearer in both. So about two thirds of the default's loss there is the writer competing
    /// for the cores (and the components working harder for a slower chain), a third the loop.
    /// What took it there is the writer leaving a burst's lines until the burst is over (see
    /// [`super::pace`]).
    pub(super) const DEFAULT: Scheduling = Scheduling::Yielding(GiveWay::DEFAULT);

    pub(super) fn from_env() -> Scheduling {
        match std::env::var("SACP_TRACE_WRITER") {
            Ok(value) => Scheduling::parse(&value).unwrap_or_else(|| {
                tracing::warn!(
                    "SACP_TRACE_WRITER={value:?} is not yield, yield=E[:U], batch, batch=N, idle, \
                     nice, nice=N or normal: the trace writer is scheduled as by default"
                );
                Scheduling::DEFAULT
            }),
            Err(_) => Scheduling::DEFAULT,
        }
    }

    fn parse(value: &str) -> Option<Scheduling> {
        match value.trim() {
            "idle" => Some(Scheduling::Idle),
            "nice" => Some(Scheduling::Nice(19)),
            "normal" => Some(Scheduling::Normal),
            "batch" => Some(Scheduling::Batch(0)),
            "yield" => Some(Scheduling::Yielding(GiveWay::DEFAULT)),
            other if other.starts_with("yield=") => {
                let rest = other.strip_prefix("yield=")?;
                let (every, until) = match rest.split_once(':') {
                    Some((every, until)) => (every.parse().ok()?, until.parse().ok()?),
                    None => (rest.parse().ok()?, GiveWay::DEFAULT.until),
                };
                (every > 0).then_some(Scheduling::Yielding(GiveWay { every, until }))
            }
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

    /// How the writer gives way, if it does.
    pub(super) fn giving(self) -> Option<Giving> {
        match self {
            Scheduling::Yielding(way) => Some(Giving { way, made: 0 }),
            _ => None,
        }
    }

    /// Applies itself to the calling thread (the writer).
    pub(super) fn apply(self) {
        use thread_priority::NormalThreadSchedulePolicy::{Batch, Idle};
        let (policy, nice) = match self {
            Scheduling::Normal => return,
            Scheduling::Idle => (Some((Idle, "SCHED_IDLE")), 19),
            Scheduling::Batch(n) => (Some((Batch, "SCHED_BATCH")), n),
            Scheduling::Yielding(_) => (Some((Batch, "SCHED_BATCH")), 0),
            Scheduling::Nice(n) => (None, n),
        };
        if let Some((policy, name)) = policy {
            use thread_priority::{
                ThreadPriority, ThreadSchedulePolicy, set_thread_priority_and_policy,
                thread_native_id,
            };
            let policy = ThreadSchedulePolicy::Normal(policy);
            if let Err(e) =
                set_thread_priority_and_policy(thread_native_id(), ThreadPriority::Min, policy)
            {
                tracing::debug!("cannot run the trace writer under {name}: {e:?}");
            }
        }
        // On Linux the nice value is the thread's own: `None` is the calling thread.
        if let Err(e) = rustix::process::setpriority_process(None, nice) {
            tracing::debug!("cannot lower the trace writer's priority: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{GiveWay, Scheduling};

    #[test]
    fn every_scheduling_has_a_name() {
        for (name, scheduling) in [
            ("idle", Scheduling::Idle),
            ("batch", Scheduling::Batch(0)),
            ("yield", Scheduling::DEFAULT),
            (
                "yield=64",
                Scheduling::Yielding(GiveWay {
                    every: 64,
                    until: 4,
                }),
            ),
            (
                "yield=64:2",
                Scheduling::Yielding(GiveWay {
                    every: 64,
                    until: 2,
                }),
            ),
            ("batch=10", Scheduling::Batch(10)),
            ("nice", Scheduling::Nice(19)),
            ("nice=5", Scheduling::Nice(5)),
            ("normal", Scheduling::Normal),
        ] {
            assert_eq!(Scheduling::parse(name), Some(scheduling), "{name}");
        }
        assert_eq!(Scheduling::parse("batch=20"), None);
        assert_eq!(Scheduling::parse("fast"), None);
        assert_eq!(Scheduling::parse("yield=0"), None);
        assert_eq!(Scheduling::parse("yield=64:"), None);
    }
}
