//! Backpressure: bytes routed but not yet written, charged to whoever must slow down for them.
//!
//! Every message the loop routes is charged, until its writer has written it, to an
//! [`Account`], and readers stop reading while an account they answer to is over its limit:
//! - a message travelling **up** (toward the editor) is charged to the reader it came from.
//!   A reader waits while its own up-traffic is unwritten, so a component that streams faster
//!   than the editor reads is slowed down; each such wait points one hop closer to the editor,
//!   so waits never go round in a circle;
//! - a message travelling **down** (toward the agent) is charged to the chain's one down
//!   account, and only the editor's reader waits for that one. A component's output carries
//!   both directions through one pipe: were a proxy also held back for its down-traffic, two
//!   neighbouring proxies flooded in both directions would each wait for the other to read
//!   (the first forwarding down into the second, the second up into the first) and the chain
//!   would stop for good. Down-traffic comes from the editor (which is held back), or from
//!   proxies' own requests and answers, which their own runtimes bound.
//!
//! The loop itself never waits: it charges and moves on; readers check their accounts before
//! they read the next batch, so an account is over its limit by one batch at most.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::Notify;

/// Up-traffic a reader may have unwritten before it stops reading.
pub(crate) const UP_LIMIT: usize = 256 * 1024;
/// Down-traffic the whole chain may have unwritten before the editor's reader stops.
pub(crate) const DOWN_LIMIT: usize = 4 * 1024 * 1024;

/// What a message costs besides its payload.
const OVERHEAD: usize = 64;

/// Bytes charged and not yet written.
#[derive(Debug, Default)]
pub(crate) struct Account {
    used: AtomicUsize,
    freed: Notify,
}

impl Account {
    /// Charges `bytes` (a payload's size; the overhead is added) until the charge drops.
    pub(crate) fn charge(self: &Arc<Self>, bytes: usize) -> Charge {
        let bytes = bytes + OVERHEAD;
        self.used.fetch_add(bytes, Ordering::SeqCst);
        Charge {
            account: self.clone(),
            bytes,
        }
    }

    /// Completes once less than `limit` bytes are charged.
    pub(crate) async fn below(&self, limit: usize) {
        loop {
            let freed = self.freed.notified();
            tokio::pin!(freed);
            freed.as_mut().enable();
            if self.used.load(Ordering::SeqCst) < limit {
                return;
            }
            freed.await;
        }
    }

    #[cfg(test)]
    fn used(&self) -> usize {
        self.used.load(Ordering::SeqCst)
    }
}

/// Bytes charged to an account, given back when dropped (once they are written).
#[derive(Debug)]
pub(crate) struct Charge {
    account: Arc<Account>,
    bytes: usize,
}

impl Charge {
    /// Adds another payload's cost to this charge.
    pub(crate) fn add(&mut self, bytes: usize) {
        let bytes = bytes + OVERHEAD;
        self.account.used.fetch_add(bytes, Ordering::SeqCst);
        self.bytes += bytes;
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.account.used.fetch_sub(self.bytes, Ordering::SeqCst);
        self.account.freed.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::future::Future;
    use std::time::Duration;

    #[tokio::test]
    async fn a_reader_waits_until_what_it_was_charged_is_written() {
        let account = Arc::new(Account::default());
        let mut charge = account.charge(100);
        charge.add(36);
        assert_eq!(account.used(), 264);
        let mut waiting = std::pin::pin!(account.below(200));
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        assert!(
            waiting.as_mut().poll(&mut cx).is_pending(),
            "over the limit: it waits"
        );
        drop(charge);
        tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("freed: it goes on");
        assert_eq!(account.used(), 0);
    }
}
