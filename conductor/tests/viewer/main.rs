//! The trace viewer (`conductor agent --serve`) in a real headless Chromium, against real
//! chains: lanes, live rows, pairs and flows, 100k updates, a crash, filters, reconnection,
//! export and access control. A test binary of its own; its tests take the browser one at a
//! time. Skipped, with a message, where Debian's `chromium` and `chromium-driver` are not
//! installed (they are under `.ci/run`).

// Shared with the `chain` tests, which use the rest of it.
#[allow(dead_code)]
#[path = "../chain/common.rs"]
mod common;
#[path = "../../benches/support/processes.rs"]
mod processes;

mod browser;
mod viewer;
