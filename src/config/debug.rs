//! `debug`: debug log lines on, process-wide, as CoreDNS turns its debug
//! logging on when any server block has `debug`: `errors` patterns at level
//! `debug` print their count lines, and the plugins' debug events
//! (`local`, `rewrite`, `template`, `forward`, `transfer`, ...) are logged
//! unless `RUST_LOG` says otherwise. It takes no arguments.

use crate::corefile::args::Args;
use crate::corefile::blocks::Directive;
use crate::corefile::problem::ConfigError;

/// Reads one `debug` directive: true when written as it must be.
/// `check`'s line, when the block has `debug`.
pub(crate) fn print(b: &mut crate::corefile::words::Block, on: bool) {
    if on {
        b.line(1, "debug");
    }
}

pub fn parse(d: &Directive, errors: &mut Vec<ConfigError>) -> bool {
    Args::from(d).count(0, 0, errors)
}
