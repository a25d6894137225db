//! Byte budgets: how much may wait somewhere before whoever adds more has to wait.
//!
//! A [`Budget`] is a fair semaphore counted in bytes. Each message costs its payload's size
//! plus a fixed overhead, capped at the whole budget, so a message larger than the budget still
//! goes through (alone) instead of waiting for ever. The permit travels with the message and
//! gives the bytes back when it is dropped: once the message was written, or handled.

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// What every message costs on top of its payload: the envelope, the bookkeeping.
const OVERHEAD: usize = 64;

/// A share of a [`Budget`], given back when dropped.
pub(crate) type Permit = OwnedSemaphorePermit;

/// A fair byte budget.
#[derive(Debug, Clone)]
pub(crate) struct Budget {
    semaphore: Arc<Semaphore>,
    limit: u32,
}

impl Budget {
    /// A budget of `bytes` (at least one message's overhead, at most what a semaphore holds).
    pub(crate) fn new(bytes: usize) -> Budget {
        let limit = bytes
            .clamp(OVERHEAD, Semaphore::MAX_PERMITS.min(u32::MAX as usize))
            .try_into()
            .unwrap_or(u32::MAX);
        Budget {
            semaphore: Arc::new(Semaphore::new(limit as usize)),
            limit,
        }
    }

    /// What a message with a payload of `bytes` costs.
    fn cost(&self, bytes: usize) -> u32 {
        u32::try_from(bytes.saturating_add(OVERHEAD))
            .unwrap_or(u32::MAX)
            .min(self.limit)
    }

    /// Takes the cost of `bytes` if the budget has room now.
    pub(crate) fn try_take(&self, bytes: usize) -> Option<Permit> {
        self.semaphore
            .clone()
            .try_acquire_many_owned(self.cost(bytes))
            .ok()
    }

    /// Takes the cost of `bytes`, waiting (in turn with other waiters) until there is room.
    /// (`None` only if the budget were closed, which it never is: then nothing is limited.)
    pub(crate) async fn take(&self, bytes: usize) -> Option<Permit> {
        let cost = self.cost(bytes);
        self.semaphore.clone().acquire_many_owned(cost).await.ok()
    }

    /// How many bytes are taken right now.
    #[cfg(test)]
    pub(crate) fn used(&self) -> usize {
        self.limit as usize - self.semaphore.available_permits()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_full_budget_makes_the_next_one_wait_and_a_huge_message_still_passes() {
        let budget = Budget::new(1000);
        let a = budget.try_take(400).expect("room for the first");
        assert_eq!(budget.used(), 464);
        let b = budget.try_take(400).expect("room for the second");
        assert!(budget.try_take(400).is_none(), "no room for a third");
        drop(a);
        let c = budget.try_take(400).expect("room again");
        drop((b, c));
        // Larger than the whole budget: costs all of it, so it waits for everything else.
        let huge = budget.take(10_000_000).await.unwrap();
        assert_eq!(budget.used(), 1000);
        assert!(budget.try_take(0).is_none());
        drop(huge);
        assert_eq!(budget.used(), 0);
    }

    #[tokio::test]
    async fn waiters_are_served_in_turn() {
        let budget = Budget::new(200);
        let first = budget.try_take(100).unwrap();
        let big = tokio::spawn({
            let budget = budget.clone();
            async move { budget.take(150).await }
        });
        tokio::task::yield_now().await;
        // A small request arriving later does not overtake the waiting big one: what was
        // free is already promised to it.
        assert!(budget.try_take(0).is_none());
        drop(first);
        let permit = tokio::time::timeout(std::time::Duration::from_secs(5), big)
            .await
            .expect("the big one got its turn")
            .unwrap()
            .unwrap();
        assert_eq!(
            budget.used(),
            200,
            "150 bytes and the overhead, capped at the budget"
        );
        drop(permit);
    }
}
