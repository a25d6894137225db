//! The crate's one way to take a `std::sync::Mutex`.

use std::sync::{Mutex, MutexGuard};

/// Locks `mutex`, taking it as it is when a thread panicked while holding it: every mutex of the
/// crate guards state that stays consistent between statements (maps, queues, counters), and a
/// panic elsewhere must not take the connection down with it.
pub(crate) fn lock<T: ?Sized>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}
