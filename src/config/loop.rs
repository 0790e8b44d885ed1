//! `loop [{ exit }]`: a probe sent to ourselves at start detects a
//! forwarding loop.

use super::args::Args;
use super::blocks::Directive;
use super::options::{self, Opt};
use super::problem::ConfigError;

/// `loop [{ exit }]`: whether a detected loop ends the process.
pub fn loop_exit(d: &Directive, errors: &mut Vec<ConfigError>) -> bool {
    Args::from(d).count(0, 0, errors);
    let mut exit = false;
    let options: &[Opt<bool>] = &[Opt::new("exit", (0, 0), |_, exit, _| *exit = true)];
    options::read("loop", &d.options, options, &mut exit, errors);
    exit
}
