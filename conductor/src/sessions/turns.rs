//! A session's turns: the one its agent runs, and the prompts waiting behind it.
//!
//! ACP has one turn at a time in a session, and a turn is the session's, whoever began it. So
//! a prompt goes to the agent only when no turn runs; while one runs:
//! - a turn another attached controller began: the prompt is refused ([`super::attach::BUSY`]),
//!   as two people typing into one conversation would be;
//! - the client's own turn, or one whose client left (cut, detached): the prompt waits in a
//!   queue of at most [`QUEUE`], in order, and goes to the agent when the turns before it
//!   ended — a client that cancels a turn it cannot see the end of (its asker is gone) and
//!   prompts at once gets its prompt run, not lost beside the other.
//!
//! A `session/cancel` from a client withdraws the prompts it queued (each answered
//! `cancelled`, as a cancelled turn is) and cancels the running turn at the agent. Closing the
//! session withdraws every queued prompt.
//!
//! No lock and no clock here: the session holds it behind its mutex and wakes the waiting
//! prompts when [`Turns`] says something changed.

use std::collections::VecDeque;

/// The most prompts a session holds waiting behind its running turn; one more is refused.
pub(super) const QUEUE: usize = 16;

/// A prompt waiting for its turn.
#[derive(Debug)]
struct Queued {
    ticket: u64,
    att: u64,
    withdrawn: bool,
}

/// What becomes of a prompt of attachment `att`, `A` what its turn's end is owed to.
#[derive(Debug)]
pub(super) enum Admit<A> {
    /// Its turn began: the turn's number.
    Now(u64),
    /// Refused: another attached controller's turn runs, or the queue is full.
    Busy(A),
    /// Queued: the ticket it waits with, and what its waiter keeps until its turn begins.
    Queued(u64, A),
}

/// What a queued prompt does now.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Head {
    /// It is next and nothing runs: it left the queue, its turn begins.
    Go,
    /// It waits on.
    Wait,
    /// It was withdrawn (a cancel from its client, the session closed): it left the queue.
    Withdrawn,
}

/// The running turns (one, but for a turn whose answer the chain never gave) and the queue;
/// `A` is what a turn's end is owed to.
#[derive(Debug)]
pub(super) struct Turns<A> {
    /// Each its number, the attachment that began it, and its asker.
    running: Vec<(u64, u64, A)>,
    queue: VecDeque<Queued>,
    next_turn: u64,
    next_ticket: u64,
}

impl<A> Default for Turns<A> {
    fn default() -> Self {
        Turns {
            running: Vec::new(),
            queue: VecDeque::new(),
            next_turn: 0,
            next_ticket: 0,
        }
    }
}

impl<A> Turns<A> {
    /// A prompt of attachment `att` (owed to `asker`): its turn begins now, it waits, or it
    /// is refused. `attached(att)` says whether attachment `att` is still attached.
    pub(super) fn admit(&mut self, att: u64, asker: A, attached: impl Fn(u64) -> bool) -> Admit<A> {
        if self.running.is_empty() && self.queue.is_empty() {
            return Admit::Now(self.begin(att, asker));
        }
        let another = self
            .running
            .iter()
            .any(|(_, by, _)| *by != att && attached(*by));
        if another || self.queue.len() >= QUEUE {
            return Admit::Busy(asker);
        }
        let ticket = self.next_ticket;
        self.next_ticket += 1;
        self.queue.push_back(Queued {
            ticket,
            att,
            withdrawn: false,
        });
        Admit::Queued(ticket, asker)
    }

    /// Where the prompt with `ticket` stands; on [`Head::Go`] the caller begins its turn with
    /// [`Turns::begin`] before letting go of the lock.
    pub(super) fn head(&mut self, ticket: u64, closed: bool) -> Head {
        let Some(i) = self.queue.iter().position(|q| q.ticket == ticket) else {
            return Head::Withdrawn;
        };
        if closed || self.queue[i].withdrawn {
            self.queue.remove(i);
            return Head::Withdrawn;
        }
        let first = self.queue.iter().position(|q| !q.withdrawn);
        if self.running.is_empty() && first == Some(i) {
            self.queue.remove(i);
            return Head::Go;
        }
        Head::Wait
    }

    /// Begins a turn of attachment `att`'s, owed to `asker`: its number.
    pub(super) fn begin(&mut self, att: u64, asker: A) -> u64 {
        let turn = self.next_turn;
        self.next_turn += 1;
        self.running.push((turn, att, asker));
        turn
    }

    /// Withdraws the prompts attachment `att` queued; whether there were any.
    pub(super) fn withdraw(&mut self, att: u64) -> bool {
        let mut any = false;
        for q in self.queue.iter_mut().filter(|q| q.att == att) {
            q.withdrawn = true;
            any = true;
        }
        any
    }

    /// The asker of turn `turn`, if it has not ended yet.
    pub(super) fn take(&mut self, turn: u64) -> Option<A> {
        let i = self.running.iter().position(|(t, _, _)| *t == turn)?;
        Some(self.running.remove(i).2)
    }

    /// The askers of every running turn, which end now.
    pub(super) fn take_all(&mut self) -> Vec<A> {
        self.running.drain(..).map(|(_, _, asker)| asker).collect()
    }

    /// The attachment that began the running turn.
    pub(super) fn first_asker(&self) -> Option<u64> {
        self.running.first().map(|(_, att, _)| *att)
    }

    /// Whether a turn runs.
    pub(super) fn running(&self) -> bool {
        !self.running.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type T = Turns<u64>;

    #[test]
    fn one_turn_runs_and_the_orphans_successors_wait_in_order() {
        let mut turns = T::default();
        let Admit::Now(first) = turns.admit(1, 1, |_| true) else {
            panic!("the first prompt waits")
        };
        // Attachment 1 is attached: another client is refused.
        assert!(matches!(turns.admit(2, 2, |_| true), Admit::Busy(_)));
        // Attachment 1 left: the prompts wait, in order.
        let gone = |att| att != 1;
        let Admit::Queued(a, _) = turns.admit(2, 2, gone) else {
            panic!("not queued")
        };
        let Admit::Queued(b, _) = turns.admit(3, 3, gone) else {
            panic!("not queued")
        };
        assert_eq!(turns.head(a, false), Head::Wait);
        assert!(turns.take(first).is_some());
        assert_eq!(turns.head(b, false), Head::Wait, "b is not next");
        assert_eq!(turns.head(a, false), Head::Go);
        turns.begin(2, 2);
        assert_eq!(turns.head(b, false), Head::Wait, "a runs");
        assert_eq!(turns.take_all().len(), 1);
        assert_eq!(turns.head(b, false), Head::Go);
    }

    #[test]
    fn a_cancel_withdraws_its_clients_prompts_and_the_next_goes_on() {
        let mut turns = T::default();
        turns.admit(1, 1, |_| true);
        let gone = |att| att != 1;
        let Admit::Queued(a, _) = turns.admit(2, 2, gone) else {
            panic!("not queued")
        };
        let Admit::Queued(b, _) = turns.admit(3, 3, gone) else {
            panic!("not queued")
        };
        assert!(turns.withdraw(2));
        assert!(!turns.withdraw(4));
        turns.take_all();
        // b need not wait for a's waiter to see it was withdrawn.
        assert_eq!(turns.head(b, false), Head::Go);
        assert_eq!(turns.head(a, false), Head::Withdrawn);
        assert_eq!(turns.head(a, false), Head::Withdrawn);
    }

    #[test]
    fn the_queue_is_bounded_and_a_closed_session_withdraws_it() {
        let mut turns = T::default();
        turns.admit(1, 1, |_| true);
        let tickets: Vec<u64> = (0..QUEUE)
            .map(|_| match turns.admit(1, 1, |_| true) {
                Admit::Queued(ticket, _) => ticket,
                other => panic!("{other:?}"),
            })
            .collect();
        assert!(matches!(turns.admit(1, 1, |_| true), Admit::Busy(_)));
        for ticket in tickets {
            assert_eq!(turns.head(ticket, true), Head::Withdrawn);
        }
        assert!(turns.running());
    }
}
