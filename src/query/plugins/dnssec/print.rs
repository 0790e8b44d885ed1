//! How `clusterdns check` prints `dnssec`: its zones, each key by the
//! path it was read from, and the cache's capacity written out.

use super::setup::DnssecConfig;
use crate::corefile::words::{names, with, Block};

pub(crate) fn dnssec(b: &mut Block, cfg: &DnssecConfig) {
    let mut options = Vec::new();
    if !cfg.keys.is_empty() {
        let files: Vec<&str> = cfg.keys.iter().map(|k| k.base.as_str()).collect();
        options.push(format!("key file {}", files.join(" ")));
    }
    options.push(format!("cache_capacity {}", cfg.capacity));
    b.directive(with("dnssec", &names(&cfg.zones)), &options);
}
