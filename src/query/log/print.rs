//! How `clusterdns check` prints `log`: every option with its value,
//! defaults written out, so the printout loads again to the same values.

use crate::corefile::words::{names, quote, with, Block};
use crate::query::log::setup::LogConfig;

pub(crate) fn log(b: &mut Block, l: &LogConfig) {
    let written = crate::query::log::setup::written(l.style.format);
    let format = if written.contains([' ', '"', '\t']) {
        quote(&written)
    } else {
        written
    };
    let s = l.style;
    let classes: Vec<&str> = [(s.success, "success"), (s.denial, "denial"), (s.error, "error")]
        .iter()
        .filter(|(on, _)| *on)
        .map(|(_, c)| *c)
        .collect();
    let classes = if classes.len() == 3 { vec!["all"] } else { classes };
    let head = with("log", format!("{} {format}", names(&l.names)).trim_start());
    b.directive(head, &[format!("class {}", classes.join(" "))]);
}
