//! How `clusterdns check` prints `erratic`: every amount written out.

use super::options::ErraticConfig;
use crate::corefile::words::{duration, Block};

pub(crate) fn erratic(b: &mut Block, cfg: &ErraticConfig) {
    let mut options = vec![
        format!("drop {}", cfg.drop),
        format!("truncate {}", cfg.truncate),
        format!("delay {} {}", cfg.delay, duration(cfg.duration)),
    ];
    if cfg.large {
        options.push("large".into());
    }
    b.directive("erratic".into(), &options);
}
