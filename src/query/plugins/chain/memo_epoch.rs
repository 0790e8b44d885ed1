//! The memo's epoch as the chain's plugins move it: a change of the data
//! whose answers are memoized drops every memo entry.

use std::sync::atomic::{AtomicU64, Ordering};

/// Changes to the data of the chain's plugins whose answers are memoized
/// (a zone reloaded, transferred or expired, a new set of zones found):
/// each moves the memo's epoch (`Router::memo_view`), so every memo entry
/// is dropped when one changes.
static CHANGES: AtomicU64 = AtomicU64::new(0);

/// Counts a change of memoized data; call it after the new data is in place.
pub fn changed() {
    CHANGES.fetch_add(1, Ordering::Release);
}

/// The changes of memoized data counted so far.
pub fn changes() -> u64 {
    CHANGES.load(Ordering::Acquire)
}
