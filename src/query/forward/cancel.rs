//! `cancel [TIMEOUT]`: how long a query may take in all (CoreDNS's request
//! context deadline, default 5001 ms). Only forwarding waits on anything,
//! so it is the forwarding budget of the block: a `forward` walking its
//! upstreams stops when it is spent, and an upstream exchange in flight
//! is cut at it (never past forward's own 5 s).

use std::time::Duration;

use crate::corefile::args::{parse_duration, Args};
use crate::corefile::blocks::Directive;
use crate::corefile::problem::ConfigError;
use crate::corefile::words::{duration, Block};

/// CoreDNS's default: one millisecond past forward's 5 s.
pub const DEFAULT: Duration = Duration::from_millis(5001);

/// Reads one `cancel` directive.
pub fn parse(d: &Directive, errors: &mut Vec<ConfigError>) -> Option<Duration> {
    if !Args::from(d).count(0, 1, errors) {
        return None;
    }
    let Some(w) = d.args.first() else {
        return Some(DEFAULT);
    };
    if w.text.starts_with('-') {
        errors.push(ConfigError::new(
            &w.pos,
            format!("cancel: invalid negative duration: \"{}\"", w.text),
        ));
        return None;
    }
    match parse_duration(&w.text).filter(|t| !t.is_zero()) {
        Some(t) => Some(t),
        None => {
            errors.push(ConfigError::new(
                &w.pos,
                format!("cancel: invalid duration: \"{}\"", w.text),
            ));
            None
        }
    }
}

/// `check`'s line for a block's `cancel`.
pub(crate) fn print(b: &mut Block, cancel: Option<Duration>) {
    if let Some(t) = cancel {
        b.line(1, format_args!("cancel {}", duration(t)));
    }
}
