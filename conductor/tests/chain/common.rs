//! The workspace's test set-up (`sacp-test-support`: the editor stand-in, the binaries, the
//! process table), and the conductor this test binary was built with.

pub(crate) use sacp_test_support::*;

/// The conductor binary cargo built for this test.
pub(crate) fn conductor() -> &'static str {
    env!("CARGO_BIN_EXE_conductor")
}
