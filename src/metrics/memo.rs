//! The per-worker memo's revalidation counts
//! (`clusterdns_memo_revalidations_total`): entries kept, and dropped, when
//! a publish was found not to touch them or to touch them. Stripes on their
//! own cache lines, each memo writing one, so workers do not share a counter.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// One stripe of the counts.
#[repr(align(64))]
pub struct MemoStripe {
    pub kept: AtomicU64,
    pub dropped: AtomicU64,
}

const STRIPES: usize = 16;
static COUNTS: [MemoStripe; STRIPES] = [const {
    MemoStripe {
        kept: AtomicU64::new(0),
        dropped: AtomicU64::new(0),
    }
}; STRIPES];

/// A stripe for a new memo.
pub fn memo_stripe() -> &'static MemoStripe {
    &COUNTS[fastrand::usize(..STRIPES)]
}

/// `(kept, dropped)` entries across publishes so far, process-wide.
pub fn revalidations() -> (u64, u64) {
    let sum = |f: fn(&MemoStripe) -> &AtomicU64| COUNTS.iter().map(|s| f(s).load(Relaxed)).sum();
    (sum(|s| &s.kept), sum(|s| &s.dropped))
}
