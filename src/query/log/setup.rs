//! The `log` directive: for which names, in which format, and which
//! classes of answers (as CoreDNS's log plugin reads it).
//!
//! ```text
//! log [NAMES...] [FORMAT] { class success|denial|error|all... }
//! ```
//!
//! FORMAT is the last argument when there are two or more and it holds a
//! `{`; `{common}` and `{combined}` inside it stand for CoreDNS's two
//! formats. Formats are kept in a process-wide table and named by their
//! index there, so a block's [`LogStyle`] stays a small `Copy` value that
//! rides along with every answer.

use std::sync::{Arc, Mutex};

use hickory_proto::rr::Name;

use crate::corefile::args::{choice, zone};
use crate::corefile::blocks::Directive;
use crate::corefile::options::{self, Opt, MANY};
use crate::corefile::problem::ConfigError;
use crate::query::metadata::Metadata;

/// The classes `log { class ... }` takes.
const CLASSES: [&str; 4] = ["success", "denial", "error", "all"];

/// CoreDNS's `{common}` format.
pub const COMMON: &str =
    "{remote}:{port} - {>id} \"{type} {class} {name} {proto} {size} {>do} {>bufsize}\" {rcode} {>rflags} {rsize} {duration}";

/// `log`: for which names, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogConfig {
    /// Empty: every name of the block.
    pub names: Vec<Name>,
    pub style: LogStyle,
}

/// The format and the classes of answers logged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogStyle {
    /// The format's index in the process-wide table ([`format`]); 0 is `{common}`.
    pub format: u32,
    pub success: bool,
    pub denial: bool,
    pub error: bool,
}

/// CoreDNS's `{combined}` format.
pub fn combined() -> String {
    format!("{COMMON} \"{{>opcode}}\"")
}

/// A format, and the block's `metadata` its `{/LABEL}`s read (none: `-`).
type Format = (Arc<str>, Option<Arc<Metadata>>);

fn table() -> &'static Mutex<Vec<Format>> {
    static TABLE: Mutex<Vec<Format>> = Mutex::new(Vec::new());
    &TABLE
}

/// The index of format `text` in the process-wide table (added if new).
pub fn intern(text: &str) -> u32 {
    intern_with(text, None)
}

/// The index of format `text` read with `metadata` (added if new).
fn intern_with(text: &str, metadata: Option<&Arc<Metadata>>) -> u32 {
    let Ok(mut t) = table().lock() else { return 0 };
    if t.is_empty() {
        t.push((Arc::from(COMMON), None));
    }
    let same = |(f, m): &Format| &**f == text && m.as_deref() == metadata.map(|m| &**m);
    let at = t.iter().position(same).unwrap_or_else(|| {
        t.push((Arc::from(text), metadata.cloned()));
        t.len() - 1
    });
    u32::try_from(at).unwrap_or(0)
}

/// Format `id` as read by a block with `metadata`: its index.
pub fn with_metadata(id: u32, metadata: &Arc<Metadata>) -> u32 {
    intern_with(&format(id), Some(metadata))
}

/// The format text of index `id` (`{common}` for an unknown one).
pub fn format(id: u32) -> Arc<str> {
    formatted(id).0
}

/// The format of index `id` and the `metadata` it reads.
pub fn formatted(id: u32) -> Format {
    let t = table().lock().ok();
    t.and_then(|t| t.get(id as usize).cloned())
        .unwrap_or_else(|| (Arc::from(COMMON), None))
}

/// The format as a Corefile writes it: `{common}`, `{combined}`, or the text.
pub fn written(id: u32) -> String {
    let text = format(id);
    if &*text == COMMON {
        "{common}".into()
    } else if *text == *combined() {
        "{combined}".into()
    } else {
        text.to_string()
    }
}

pub fn parse(d: &Directive, errors: &mut Vec<ConfigError>) -> LogConfig {
    let mut cfg = LogConfig {
        names: Vec::new(),
        style: LogStyle {
            format: 0,
            success: true,
            denial: true,
            error: true,
        },
    };
    let mut names = &d.args[..];
    // As CoreDNS: the last of two or more arguments is the format when it
    // holds a `{`; a lone `{common}`/`{combined}` is read as a format too.
    let format = match names.split_last() {
        Some((last, rest)) if last.text.contains('{') && (!rest.is_empty() || last.text.starts_with('{')) => {
            names = rest;
            Some(last.text.as_str())
        }
        _ => None,
    };
    if let Some(f) = format {
        let text = f.replace("{common}", COMMON).replace("{combined}", &combined());
        cfg.style.format = intern(&text);
    }
    cfg.names.extend(names.iter().filter_map(|w| zone(w, errors)));
    let mut classes: Vec<&'static str> = Vec::new();
    let options: &[Opt<Vec<&'static str>>] = &[Opt::new("class", (1, MANY), |a, classes, errors| {
        let choices = CLASSES.map(|c| (c, c));
        classes.extend(a.args.iter().filter_map(|w| choice(w, "class", &choices, errors)));
    })];
    options::read("log", &d.options, options, &mut classes, errors);
    if !classes.is_empty() && !classes.contains(&"all") {
        cfg.style.success = classes.contains(&"success");
        cfg.style.denial = classes.contains(&"denial");
        cfg.style.error = classes.contains(&"error");
    }
    cfg
}
