//! `loop [{ exit }]`: a probe sent to ourselves at start detects a
//! forwarding loop.

use crate::corefile::args::Args;
use crate::corefile::blocks::Directive;
use crate::corefile::options::{self, Opt};
use crate::corefile::problem::ConfigError;

/// `loop [{ exit }]`: whether a detected loop ends the process.
pub fn loop_exit(d: &Directive, errors: &mut Vec<ConfigError>) -> bool {
    Args::from(d).count(0, 0, errors);
    let mut exit = false;
    let options: &[Opt<bool>] = &[Opt::new("exit", (0, 0), |_, exit, _| *exit = true)];
    options::read("loop", &d.options, options, &mut exit, errors);
    exit
}
