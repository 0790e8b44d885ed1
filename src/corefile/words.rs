//! The words and lines `clusterdns check` prints with: a server block's
//! lines, durations as Go writes them, names, quoting.

use std::fmt::{Display, Write as _};
use std::time::Duration;

use hickory_proto::rr::Name;

/// Lines of one server block, indented by depth.
pub struct Block(pub(crate) String);

impl Block {
    pub(crate) fn line(&mut self, depth: usize, text: impl Display) {
        let _ = writeln!(self.0, "{:w$}{text}", "", w = 4 * depth);
    }

    /// `name args {` + `options` + `}`, or `name args` when there are none.
    pub(crate) fn directive(&mut self, head: String, options: &[String]) {
        if options.is_empty() {
            self.line(1, head);
            return;
        }
        self.line(1, format_args!("{head} {{"));
        for o in options {
            self.line(2, o);
        }
        self.line(1, "}");
    }
}

/// A duration as Go writes it in a Corefile (`500ms`, `30s`, `5m`, `1h`).
pub fn duration(d: Duration) -> String {
    let ms = d.as_millis();
    match d.as_secs() {
        _ if !d.subsec_nanos().is_multiple_of(1_000_000) => format!("{}us", d.as_micros()),
        _ if !ms.is_multiple_of(1000) => format!("{ms}ms"),
        0 => "0s".into(),
        s if s % 3600 == 0 => format!("{}h", s / 3600),
        s if s % 60 == 0 => format!("{}m", s / 60),
        s => format!("{s}s"),
    }
}

pub(crate) fn names(zones: &[Name]) -> String {
    zones.iter().map(ToString::to_string).collect::<Vec<_>>().join(" ")
}

/// `word ARGS...` with a space only when there are arguments.
pub(crate) fn with(word: &str, args: &str) -> String {
    if args.is_empty() {
        word.to_string()
    } else {
        format!("{word} {args}")
    }
}

pub(crate) fn on_off(on: bool) -> &'static str {
    if on {
        "on"
    } else {
        "off"
    }
}

/// A Corefile word: quoted when it holds a space, a quote or nothing.
pub(crate) fn quote(text: &str) -> String {
    if text.is_empty() || text.contains([' ', '"', '\t', '{', '}', '#']) {
        format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
    } else {
        text.to_string()
    }
}
