//! The lanes of the runtimes: one per side a message comes from. What comes from the client is
//! dealt with in its own order, what comes from the successor in its own, and neither waits for
//! the other (an agent, with one neighbour, only ever uses the client's).

use crate::acp::Side;
use crate::jsonrpc::Lane;

impl Lane for Side {
    const COUNT: usize = 2;
    const FIRST: Side = Side::Client;

    fn index(self) -> usize {
        match self {
            Side::Client => 0,
            Side::Agent => 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_side_has_a_lane_of_its_own() {
        assert_eq!(Side::Client.index(), 0);
        assert_eq!(Side::Agent.index(), 1);
        assert!(Side::Agent.index() < Side::COUNT);
        assert_eq!(Side::FIRST, Side::Client);
    }
}
