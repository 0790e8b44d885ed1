//! How `clusterdns check` prints `header`: one line per rule, in order.

use super::rules::{Rule, Rules, FLAGS};
use crate::corefile::words::Block;

pub(crate) fn header(b: &mut Block, rules: Option<&Rules>) {
    let Some(rules) = rules else { return };
    let line = |selector: &str, r: &Rule| {
        let name = FLAGS.iter().find(|(_, f)| *f == r.flag).map_or("?", |(n, _)| *n);
        format!("{selector} {} {name}", if r.set { "set" } else { "clear" })
    };
    let lines: Vec<String> = (rules.query.iter().map(|r| line("query", r)))
        .chain(rules.response.iter().map(|r| line("response", r)))
        .collect();
    b.directive("header".into(), &lines);
}
