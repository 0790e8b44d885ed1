//! `reload [INTERVAL [JITTER]]`: the Corefile checked for changes and a
//! changed one switched in.

use std::time::Duration;

use crate::corefile::args::Args;
use crate::corefile::blocks::Directive;
use crate::corefile::problem::ConfigError;

/// `reload [INTERVAL (30s, at least 2s) [JITTER (15s; 0 or at least 1s)]]`.
pub fn reload(d: &Directive, errors: &mut Vec<ConfigError>) -> Option<(Duration, Duration)> {
    let a = Args::from(d);
    if !a.count(0, 2, errors) {
        return None;
    }
    let interval = if a.args.is_empty() {
        Duration::from_secs(30)
    } else {
        a.duration(0, errors)?
    };
    let jitter = if a.args.len() > 1 {
        a.duration(1, errors)?
    } else {
        interval / 2
    };
    if interval < Duration::from_secs(2) {
        errors.push(ConfigError::new(a.pos(), "reload: interval must be at least 2s"));
        return None;
    }
    if !jitter.is_zero() && jitter < Duration::from_secs(1) {
        errors.push(ConfigError::new(
            &a.args[1].pos,
            "reload: jitter must be 0 (none) or at least 1s",
        ));
        return None;
    }
    // As CoreDNS: a jitter above half the interval is cut to half.
    Some((interval, jitter.min(interval / 2)))
}
