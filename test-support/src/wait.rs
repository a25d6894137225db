//! Waiting for a condition that no event announces (a file that grows, a process that leaves
//! the process table): checked every [`EVERY`], up to a deadline, after which the test fails
//! with what it waited for.

use std::fmt::Display;
use std::time::Duration;

use crate::PATIENCE;

/// How often a condition is checked again.
pub const EVERY: Duration = Duration::from_millis(20);

/// Checks `check` until it gives a value, which it returns; fails the test after `limit`,
/// with `what` and the last thing `check` said (its `Err`).
pub async fn until<T, E: Display>(
    what: &str,
    limit: Duration,
    mut check: impl FnMut() -> Result<T, E>,
) -> T {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        match check() {
            Ok(value) => return value,
            Err(last) if tokio::time::Instant::now() >= deadline => {
                panic!("timed out after {limit:?} waiting for {what}: {last}")
            }
            Err(_) => tokio::time::sleep(EVERY).await,
        }
    }
}

/// Waits until `done` holds, failing the test after [`PATIENCE`] with `what`.
pub async fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    until(
        what,
        PATIENCE,
        || if done() { Ok(()) } else { Err("not yet") },
    )
    .await
}
