//! The workspace's own test set-up, in one place (not published): the editor stand-in that
//! drives a process over its stdio ([`Editor`]), the binaries the tests run ([`bins`]), bounded
//! waits ([`wait`], and the kit's [`within`] and [`Tally`]), the process table
//! ([`processes`]), TLS certificates made on the spot ([`tls`]), a headless Chromium over
//! WebDriver ([`browser`]) and a chain's trace viewer open in it ([`viewer`]).
//!
//! The conductor's tests, its benchmarks and the SDK's own integration tests depend on it
//! instead of including each other's files.

pub mod bins;
pub mod browser;
pub mod editor;
pub mod processes;
pub mod tls;
pub mod viewer;
pub mod wait;

pub use bins::{agent, chain_of, example, flat_chain, passthrough, quoted};
pub use editor::{
    Editor, expect_stream, peak_rss_kib, process_named, processes_tagged, said, standard_script,
    without_uuids,
};
pub use sacp::testing::{PATIENCE, Tally, within};
pub use wait::{eventually, until};

/// The SDK's bounded waits, under the name its own tests use.
pub mod patience {
    pub use sacp::testing::{PATIENCE, Tally, within};
}
