//! What a cache counts for `/metrics`.

/// What a cache counts for `/metrics` (CoreDNS's `coredns_cache_*`).
#[derive(Debug, Clone, Copy)]
pub enum Stat {
    Requests,
    HitsSuccess,
    HitsDenial,
    Misses,
    Prefetch,
    ServedStale,
    Evictions,
}

/// The counts of [`Stat`], in per-thread stripes: every worker bumps
/// them on every hit, so a shared counter would bounce between cores.
#[derive(Debug, Default)]
pub struct CacheStats(crate::metrics::Counts<7>);

impl CacheStats {
    pub fn add(&self, stat: Stat) {
        self.0.add(stat as usize, 1);
    }

    pub fn get(&self, stat: Stat) -> u64 {
        self.0.get(stat as usize)
    }
}
