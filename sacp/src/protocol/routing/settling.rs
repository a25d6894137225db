//! How long a failed chain settles before the editor gets its errors: the one rule the
//! conductor and the test kit's chain both follow.

use std::time::{Duration, Instant};

/// A component failed; what it sent before its end still reaches the editor through the
/// proxies in front of it, while they keep passing things on. The chain has settled after a
/// pause of [`Settling::PAUSE`] in their traffic, or [`Settling::AT_MOST`] after the failure,
/// whichever comes first; then the editor gets the error for each request in flight
/// (`RoutingTable::fail_all`), and nothing more of the chain.
#[derive(Debug, Clone, Copy)]
pub struct Settling {
    settled_at: Instant,
    at_the_latest: Instant,
}

impl Settling {
    /// A pause this long in the components' traffic means the proxies are done.
    pub const PAUSE: Duration = Duration::from_millis(30);
    /// The longest a failed chain settles.
    pub const AT_MOST: Duration = Duration::from_millis(250);

    /// Settling from `now`, when the failure was seen.
    pub fn new(now: Instant) -> Settling {
        Settling {
            settled_at: now + Settling::PAUSE,
            at_the_latest: now + Settling::AT_MOST,
        }
    }

    /// A component sent something at `now`: the chain is not settled yet.
    pub fn traffic(&mut self, now: Instant) {
        self.settled_at = now + Settling::PAUSE;
    }

    /// When the chain counts as settled, unless more traffic comes.
    pub fn due(&self) -> Instant {
        self.settled_at.min(self.at_the_latest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traffic_postpones_the_end_but_never_past_the_limit() {
        let start = Instant::now();
        let mut settling = Settling::new(start);
        assert_eq!(settling.due(), start + Settling::PAUSE);
        settling.traffic(start + Duration::from_millis(20));
        assert_eq!(
            settling.due(),
            start + Duration::from_millis(20) + Settling::PAUSE
        );
        settling.traffic(start + Duration::from_secs(5));
        assert_eq!(settling.due(), start + Settling::AT_MOST);
    }
}
