//! Bounded waits, and counts that a test can wait on instead of polling.
//!
//! Every await on a peer in a test has a timeout: [`within`] gives it [`PATIENCE`] and fails
//! the test with what it was waiting for. A [`Tally`] is a counter that handlers bump and tests
//! wait on ([`Tally::reaches`]): the test wakes when the count changes, never on a timer.

use std::future::IntoFuture;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::Notify;

/// How long a test waits for any one thing a peer should do.
pub const PATIENCE: Duration = Duration::from_secs(30);

/// Awaits `fut`, failing the test (a panic naming `what`) after [`PATIENCE`].
pub async fn within<F: IntoFuture>(what: &str, fut: F) -> F::Output {
    match tokio::time::timeout(PATIENCE, fut).await {
        Ok(value) => value,
        Err(_) => panic!("timed out after {PATIENCE:?} waiting for {what}"),
    }
}

/// A count of events that tests wait on.
#[derive(Debug, Default)]
pub struct Tally {
    count: AtomicUsize,
    changed: Notify,
}

impl Tally {
    /// Counts one more.
    pub fn add(&self) {
        self.count.fetch_add(1, Ordering::SeqCst);
        self.changed.notify_waiters();
    }

    /// The count now.
    pub fn get(&self) -> usize {
        self.count.load(Ordering::SeqCst)
    }

    /// Completes once the count is at least `n` (failing the test after [`PATIENCE`]):
    /// `what` names the events in that message.
    pub async fn reaches(&self, n: usize, what: &str) {
        within(what, async {
            loop {
                let changed = self.changed.notified();
                tokio::pin!(changed);
                changed.as_mut().enable();
                if self.get() >= n {
                    return;
                }
                changed.await;
            }
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[tokio::test]
    async fn a_tally_wakes_its_waiter_when_it_reaches_the_count() {
        let tally = Arc::new(Tally::default());
        let waiter = tokio::spawn({
            let tally = tally.clone();
            async move { tally.reaches(2, "two events").await }
        });
        tally.add();
        tally.add();
        within("the waiter", waiter).await.unwrap();
        assert_eq!(tally.get(), 2);
    }
}
