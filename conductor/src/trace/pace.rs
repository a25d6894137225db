//! When the trace's writer does its work: it keeps out of the way of a chain that streams
//! hard, and catches up once the stream slows down (`SACP_TRACE_DEFER`).
//!
//! Beside busy loops on every core, each microsecond the writer runs is taken from the chain
//! (the loops take their share whatever happens): making and writing a line costs the chain
//! as much there as routing it did. So while the event loop routes lines faster than
//! [`Defer::rate`], the writer leaves the batches in its queue, up to [`Defer::until`] of them,
//! and makes their lines once the loop has slowed down for a [`Defer::window`]: in the pauses
//! between an agent's bursts, where the machine's other work pays for it. An agent that
//! streams at the pace of a model (hundreds of updates a second) never gets near the rate, so
//! its trace is written as it goes. A stream that never pauses still gets its lines written:
//! past `until` batches the writer makes them as they come, as it would without deferring.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// When the writer defers its work: `SACP_TRACE_DEFER` = `off`, or `W` (the window in ms) or
/// `W:R` (and the rate in lines a second) or `W:R:U` (and the batches it may leave waiting).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Defer {
    /// How long the loop's rate is measured over, and so how long after a burst the writer
    /// starts catching up.
    pub(super) window: Duration,
    /// Lines a second above which the chain is streaming hard.
    pub(super) rate: u64,
    /// Batches the writer may leave waiting; it makes lines as they come once this many wait.
    pub(super) until: usize,
}

impl Defer {
    /// 10 ms, 20,000 lines a second (5,000 updates a second at N = 3, ten times what a model
    /// streams), 24 batches (of ~400 lines of an update stream at N = 3: a burst of ~2,400
    /// updates; the queue holds twice as many, see `BATCHES`).
    pub(super) const DEFAULT: Defer = Defer {
        window: Duration::from_millis(10),
        rate: 20_000,
        until: 24,
    };

    /// `SACP_TRACE_DEFER`, or the default; `None` when it is `off`.
    pub(super) fn from_env() -> Option<Defer> {
        match std::env::var("SACP_TRACE_DEFER") {
            Ok(value) => Defer::parse(&value).unwrap_or_else(|| {
                tracing::warn!(
                    "SACP_TRACE_DEFER={value:?} is not off, W, W:R or W:R:U: the trace writer \
                     defers as by default"
                );
                Some(Defer::DEFAULT)
            }),
            Err(_) => Some(Defer::DEFAULT),
        }
    }

    fn parse(value: &str) -> Option<Option<Defer>> {
        let value = value.trim();
        if value == "off" {
            return Some(None);
        }
        let mut parts = value.split(':');
        let window: u64 = parts.next()?.parse().ok()?;
        let rate = match parts.next() {
            Some(rate) => rate.parse().ok()?,
            None => Defer::DEFAULT.rate,
        };
        let until = match parts.next() {
            Some(until) => until.parse().ok()?,
            None => Defer::DEFAULT.until,
        };
        if parts.next().is_some() || window == 0 || until == 0 {
            return None;
        }
        Some(Some(Defer {
            window: Duration::from_millis(window),
            rate,
            until,
        }))
    }
}

/// A [`Defer`] at work in the writer: the loop's rate, as last measured.
#[derive(Debug)]
pub(super) struct Pace {
    defer: Defer,
    /// When the rate was last measured, and the lines made by then.
    at: Instant,
    made: u64,
    streaming: bool,
}

impl Pace {
    pub(super) fn new(defer: Defer) -> Pace {
        Pace {
            defer,
            at: Instant::now(),
            made: 0,
            streaming: false,
        }
    }

    /// Waits while the chain streams hard and fewer than `until` batches wait (`waiting`
    /// says how many), `made` being the lines the loop made so far.
    /// How many times it slept.
    pub(super) fn defer(&mut self, made: &AtomicU64, waiting: impl Fn() -> usize) -> u32 {
        let mut slept = 0;
        while waiting() < self.defer.until && self.streaming(made) {
            std::thread::sleep(self.defer.window / 2);
            slept += 1;
        }
        slept
    }

    /// Whether the loop made lines at [`Defer::rate`] or more, over the last window (measured
    /// again once a window has passed).
    fn streaming(&mut self, made: &AtomicU64) -> bool {
        let now = Instant::now();
        let elapsed = now.duration_since(self.at);
        if elapsed >= self.defer.window {
            let lines = made.load(Ordering::Relaxed);
            let new = lines.saturating_sub(self.made) as u128;
            self.streaming = new * 1_000_000 >= u128::from(self.defer.rate) * elapsed.as_micros();
            (self.at, self.made) = (now, lines);
        }
        self.streaming
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::time::{Duration, Instant};

    use super::{Defer, Pace};

    #[test]
    fn every_setting_parses() {
        assert_eq!(Defer::parse("off"), Some(None));
        assert_eq!(
            Defer::parse("5"),
            Some(Some(Defer {
                window: Duration::from_millis(5),
                ..Defer::DEFAULT
            }))
        );
        assert_eq!(
            Defer::parse("5:1000:8"),
            Some(Some(Defer {
                window: Duration::from_millis(5),
                rate: 1000,
                until: 8
            }))
        );
        for bad in ["", "0", "5:", "5:x", "5:10:0", "5:10:8:1", "soon"] {
            assert_eq!(Defer::parse(bad), None, "{bad}");
        }
    }

    /// 10,000 lines a second over 20 ms, up to 4 batches.
    const TESTED: Defer = Defer {
        window: Duration::from_millis(20),
        rate: 10_000,
        until: 4,
    };

    /// The rate is measured once a window has passed, over the time since it was last.
    #[test]
    fn the_rate_is_measured_over_a_window() {
        let made = AtomicU64::new(0);
        let mut pace = Pace::new(TESTED);
        // Within the window: as last measured (not streaming).
        made.store(1_000_000, Ordering::Relaxed);
        assert!(!pace.streaming(&made));
        // A window later: a million lines in it is streaming hard.
        pace.at -= Duration::from_millis(20);
        assert!(pace.streaming(&made));
        // And stays so until a window has passed again.
        assert!(pace.streaming(&made));
        // Ten lines in the next: not.
        made.fetch_add(10, Ordering::Relaxed);
        pace.at -= Duration::from_millis(20);
        assert!(!pace.streaming(&made));
    }

    /// A loop that makes lines fast keeps the writer waiting until it stops, or as long as
    /// fewer batches than `until` wait.
    #[test]
    fn the_writer_waits_out_a_burst() {
        let made = AtomicU64::new(0);
        let mut pace = Pace::new(TESTED);
        pace.at -= Duration::from_millis(20);
        made.store(1_000_000, Ordering::Relaxed);
        // Enough batches waiting: no wait, however fast the loop.
        assert_eq!(pace.defer(&made, || 4), 0);

        // While the loop streams, the writer waits; it goes on once the burst is over.
        let over = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                // 300 ms at ten million lines a second.
                let start = Instant::now();
                while start.elapsed() < Duration::from_millis(300) {
                    made.fetch_add(10_000, Ordering::Relaxed);
                    std::thread::sleep(Duration::from_millis(1));
                }
                over.store(true, Ordering::Release);
            });
            assert!(pace.defer(&made, || 0) > 0, "the writer did not wait");
            assert!(
                over.load(Ordering::Acquire),
                "the writer went on in the burst"
            );
        });
    }
}
