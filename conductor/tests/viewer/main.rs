//! The trace viewer (`conductor agent --serve`) in a real headless Chromium, against real
//! chains: lanes, live rows, pairs and flows, 100k updates, a crash, filters, reconnection,
//! export and access control; and the sessions page of a sharing conductor (a session in the
//! browser, as observer and controller). A test binary of its own; its tests take the browser one at a
//! time. Skipped, with a message, where Debian's `chromium` and `chromium-driver` are not
//! installed (they are under `.ci/run`).

/// The workspace's test set-up, and the conductor this test binary was built with.
mod common {
    pub(crate) use sacp_test_support::browser::Browser;
    pub(crate) use sacp_test_support::viewer::*;
    pub(crate) use sacp_test_support::*;

    pub(crate) fn conductor() -> &'static str {
        env!("CARGO_BIN_EXE_conductor")
    }
}

mod sessions_page;
mod viewer;
