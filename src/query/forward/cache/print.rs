//! How `clusterdns check` prints `cache`: every option with its value,
//! defaults written out, so the printout loads again to the same values.

use crate::corefile::words::{duration, names, with, Block};
use crate::query::forward::cache::setup::{Bounds, CacheConfig, StaleMode};

fn bounds(kind: &str, x: &Bounds) -> String {
    format!("{kind} {} {} {}", x.capacity, x.max_ttl, x.min_ttl)
}

pub(crate) fn cache(b: &mut Block, c: &CacheConfig) {
    let mut options = vec![bounds("success", &c.success), bounds("denial", &c.denial)];
    if let Some((hits, window, percent)) = c.prefetch {
        options.push(format!("prefetch {hits} {} {percent}%", duration(window)));
    }
    if let Some((d, mode)) = c.serve_stale {
        let mode = if mode == StaleMode::Verify {
            "verify"
        } else {
            "immediate"
        };
        // verify takes its timeout before the response TTL and recheck
        let timeout = if mode == "verify" {
            format!(" {}", duration(c.verify_timeout))
        } else {
            String::new()
        };
        options.push(format!(
            "serve_stale {} {mode}{timeout} {}s {}",
            duration(d),
            c.stale_ttl,
            duration(c.stale_recheck)
        ));
    }
    if c.prefer_positive {
        options.push("serve_stale_policy prefer_positive".into());
    }
    options.push(format!("servfail {}", duration(c.servfail)));
    for (kind, zones) in [("success", &c.disable_success), ("denial", &c.disable_denial)] {
        if let Some(z) = zones {
            options.push(with(&format!("disable {kind}"), &names(z)));
        }
    }
    options.extend(c.keepttl.then(|| "keepttl".to_string()));
    b.directive(with("cache", &names(&c.zones)), &options);
}
