//! A session's deadlines, told the time: how long a request of the agent's waits for an
//! editor while no controller is attached ([`Deadlines::ask`]), and how long a session with no
//! controller and nothing new lives on ([`Deadlines::detached`]).
//!
//! Nothing here reads a clock. The session's core is told the time with each tick, and stamps
//! what it sees change at the tick that first sees it: the moment the last controller left,
//! the moment the record last grew, the moment a request arrived. Its adapter ticks when it
//! wakes for one of those (a client came or left; the record grew while no controller is
//! there) and at the next deadline a tick hands back.

use std::sync::Arc;
use std::time::Duration;

use super::super::ask::Ask;

/// How long a session's waits last.
#[derive(Debug, Clone, Copy)]
pub(in crate::sessions) struct Deadlines {
    /// A request of the agent's, while no controller is attached.
    pub(in crate::sessions) ask: Duration,
    /// A session with no controller and nothing new.
    pub(in crate::sessions) detached: Duration,
}

/// What a tick hands back.
#[derive(Debug, Default)]
pub(in crate::sessions) struct Ticked {
    /// Requests that waited their deadline with no controller attached: refuse them.
    pub(in crate::sessions) refuse: Vec<Arc<Ask>>,
    /// The session had no controller and nothing new for its detached deadline: end it.
    pub(in crate::sessions) expired: bool,
    /// When the next deadline falls, if one is pending.
    pub(in crate::sessions) next: Option<Duration>,
    /// No controller is attached: the record's growth counts (tick when it grows).
    pub(in crate::sessions) alone: bool,
}

/// The times a session's deadlines run from.
#[derive(Debug, Default)]
pub(super) struct Clock {
    /// Since when no controller is attached.
    alone_since: Option<Duration>,
    /// The record's end when last seen, and since when it has been.
    seen_end: u64,
    quiet_since: Option<Duration>,
    /// The requests of the agent's not answered yet, each with when it was first seen.
    waiting: Vec<(Arc<Ask>, Option<Duration>)>,
}

impl Clock {
    /// A request of the agent's to wait for an answer (those answered meanwhile go).
    pub(super) fn asked(&mut self, ask: Arc<Ask>) {
        self.waiting.retain(|(ask, _)| !ask.is_answered());
        self.waiting.push((ask, None));
    }

    /// The session closed: nothing waits any more.
    pub(super) fn stop(&mut self) {
        self.waiting.clear();
    }

    /// It is `now`; `alone` whether no controller is attached, `end` the record's end.
    pub(super) fn tick(
        &mut self,
        now: Duration,
        deadlines: Deadlines,
        alone: bool,
        end: u64,
    ) -> Ticked {
        let alone_since = if alone {
            Some(*self.alone_since.get_or_insert(now))
        } else {
            None
        };
        self.alone_since = alone_since;
        if self.quiet_since.is_none() || end != self.seen_end {
            self.seen_end = end;
            self.quiet_since = Some(now);
        }
        let mut ticked = Ticked {
            alone,
            ..Ticked::default()
        };
        let due = |at: Duration, ticked: &mut Ticked| {
            if now >= at {
                return true;
            }
            ticked.next = Some(ticked.next.map_or(at, |next| next.min(at)));
            false
        };
        self.waiting.retain_mut(|(ask, seen)| {
            if ask.is_answered() {
                return false;
            }
            let seen = *seen.get_or_insert(now);
            match alone_since {
                Some(alone) if due(seen.max(alone) + deadlines.ask, &mut ticked) => {
                    ticked.refuse.push(ask.clone());
                    false
                }
                _ => true,
            }
        });
        if let (Some(alone), Some(quiet)) = (alone_since, self.quiet_since) {
            ticked.expired = due(alone.max(quiet) + deadlines.detached, &mut ticked);
        }
        ticked
    }
}
