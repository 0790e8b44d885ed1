//! `bufsize [SIZE]` (SIZE 512..=4096, default 1232): caps the EDNS
//! payload a request advertises.

use crate::corefile::args::Args;
use crate::corefile::blocks::Directive;
use crate::corefile::problem::ConfigError;

/// `bufsize` without a size: the DNS flag day 2020 payload.
pub const BUFSIZE_DEFAULT: u16 = 1232;

/// `bufsize [SIZE]`: the largest EDNS payload a request may advertise.
pub fn bufsize(d: &Directive, errors: &mut Vec<ConfigError>) -> Option<u16> {
    let a = Args::from(d);
    if !a.count(0, 1, errors) {
        return None;
    }
    let Some(w) = a.args.first() else {
        return Some(BUFSIZE_DEFAULT);
    };
    match w.text.parse::<u16>() {
        Ok(n) if (512..=4096).contains(&n) => Some(n),
        _ => {
            errors.push(ConfigError::new(
                &w.pos,
                format!("bufsize: '{}' is not a size between 512 and 4096", w.text),
            ));
            None
        }
    }
}
