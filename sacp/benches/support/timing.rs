//! What the SDK's benches share: timing a call.

use std::time::Instant;

/// Nanoseconds per call of `f`, best of 3 runs of `n` calls.
pub(crate) fn per_call(n: u64, mut f: impl FnMut()) -> f64 {
    (0..3)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..n {
                f();
            }
            start.elapsed().as_nanos() as f64 / n as f64
        })
        .fold(f64::INFINITY, f64::min)
}
