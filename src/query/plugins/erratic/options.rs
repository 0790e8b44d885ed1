//! `erratic`'s options as data.

use std::time::Duration;

/// `erratic`'s options: one query in N dropped, delayed, truncated (0: never).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ErraticConfig {
    pub drop: u64,
    pub delay: u64,
    pub duration: Duration,
    pub truncate: u64,
    /// CoreDNS's undocumented `large`: 30 A records per A answer.
    pub large: bool,
}

impl Default for ErraticConfig {
    fn default() -> Self {
        ErraticConfig {
            drop: 2,
            delay: 0,
            duration: Duration::from_millis(100),
            truncate: 0,
            large: false,
        }
    }
}
