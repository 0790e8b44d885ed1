//! The `errors` directive as CoreDNS's errors plugin reads it: where
//! errors go (`stdout` only, CoreDNS's legacy destination), `stacktrace`,
//! and `consolidate` rules that fold a flood of alike errors into one line
//! per period.
//!
//! ```text
//! errors [stdout] {
//!     stacktrace
//!     consolidate DURATION REGEXP [error|warning|info|debug] [show_first]
//! }
//! ```

use std::time::Duration;

use crate::corefile::args::{parse_duration, Args};
use crate::corefile::blocks::Directive;
use crate::corefile::lexer::Word;
use crate::corefile::options::{self, Opt};
use crate::corefile::problem::ConfigError;

/// The longest REGEXP accepted (CoreDNS's limit against huge patterns).
const MAX_REGEXP: usize = 10_000;

/// `errors`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ErrorsConfig {
    /// `stacktrace`: a panic while answering logs its backtrace too.
    pub stacktrace: bool,
    /// `consolidate` rules, tried in order; the first whose pattern matches
    /// an error takes it.
    pub consolidate: Vec<Consolidate>,
}

/// One `consolidate DURATION REGEXP [LEVEL] [show_first]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Consolidate {
    pub period: Duration,
    /// The pattern as written (Go's RE2 syntax, which the `regex` crate reads).
    pub pattern: String,
    pub level: Level,
    /// The first error of a period is logged at once, in full.
    pub show_first: bool,
}

/// The level a consolidated line is logged at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Error,
    Warning,
    Info,
    /// Printed only with CoreDNS's `debug` plugin, which clusterdns does
    /// not have: such lines are counted, never written.
    Debug,
}

impl Level {
    pub fn name(self) -> &'static str {
        match self {
            Level::Error => "error",
            Level::Warning => "warning",
            Level::Info => "info",
            Level::Debug => "debug",
        }
    }

    /// The tag CoreDNS's log package puts in front of a line.
    pub fn tag(self) -> &'static str {
        match self {
            Level::Error => "[ERROR]",
            Level::Warning => "[WARNING]",
            Level::Info => "[INFO]",
            Level::Debug => "[DEBUG]",
        }
    }

    fn parse(word: &str) -> Option<Level> {
        [Level::Error, Level::Warning, Level::Info, Level::Debug]
            .into_iter()
            .find(|l| l.name() == word)
    }
}

/// Reads one `errors` directive.
pub fn parse(d: &Directive, errors: &mut Vec<ConfigError>) -> ErrorsConfig {
    let a = Args::from(d);
    if a.count(0, 1, errors) {
        if let Some(w) = d.args.first().filter(|w| w.text != "stdout") {
            errors.push(ConfigError::new(
                &w.pos,
                format!(
                    "errors: '{}' is not a destination (errors go to the log; only 'stdout' is accepted)",
                    w.text
                ),
            ));
        }
    }
    let mut cfg = ErrorsConfig::default();
    options::read("errors", &d.options, OPTIONS, &mut cfg, errors);
    cfg
}

/// The options of an `errors` block.
const OPTIONS: &[Opt<ErrorsConfig>] = &[
    Opt::new("stacktrace", (0, 0), |_, cfg, _| cfg.stacktrace = true),
    Opt::new("consolidate", (2, 4), |o, cfg, errors| {
        cfg.consolidate.extend(consolidate(o, errors))
    }),
];

/// `consolidate`'s `[LEVEL] [show_first]`: each at most once, the level
/// first.
fn level_and_show_first(words: &[Word], errors: &mut Vec<ConfigError>) -> Option<(Option<Level>, bool)> {
    let (mut level, mut show_first) = (None, false);
    for w in words {
        let fault = match (Level::parse(&w.text), w.text.as_str()) {
            (Some(_), _) if level.is_some() => Some("more than one log level".to_string()),
            (Some(_), _) if show_first => Some("the log level must come before show_first".to_string()),
            (Some(l), _) => {
                level = Some(l);
                None
            }
            (None, "show_first") if show_first => Some("show_first twice".to_string()),
            (None, "show_first") => {
                show_first = true;
                None
            }
            (None, other) => Some(format!(
                "unknown option '{other}' (supported: error, warning, info, debug, then show_first)"
            )),
        };
        if let Some(why) = fault {
            errors.push(ConfigError::new(&w.pos, format!("errors: consolidate: {why}")));
            return None;
        }
    }
    Some((level, show_first))
}

/// `consolidate DURATION REGEXP [LEVEL] [show_first]`: the level, if
/// written, before `show_first`, at most once each (as CoreDNS).
fn consolidate(o: &Args<'_>, errors: &mut Vec<ConfigError>) -> Option<Consolidate> {
    let (when, re) = (&o.args[0], &o.args[1]);
    // Go's time.ParseDuration: a unit is required (a bare `1` is refused).
    let has_unit = when.text == "0" || when.text.chars().any(|c| c.is_ascii_alphabetic());
    let Some(period) = parse_duration(&when.text).filter(|_| has_unit) else {
        errors.push(ConfigError::new(
            &when.pos,
            format!(
                "errors: consolidate '{}' is not a duration with a unit (e.g. 1m)",
                when.text
            ),
        ));
        return None;
    };
    if re.text.len() > MAX_REGEXP {
        errors.push(ConfigError::new(
            &re.pos,
            format!(
                "errors: consolidate pattern too long ({} > {MAX_REGEXP})",
                re.text.len()
            ),
        ));
        return None;
    }
    if let Err(e) = regex::Regex::new(&re.text) {
        let first = e.to_string().lines().last().unwrap_or_default().to_string();
        errors.push(ConfigError::new(
            &re.pos,
            format!("errors: consolidate '{}' is not a regular expression: {first}", re.text),
        ));
        return None;
    }
    let (level, show_first) = level_and_show_first(&o.args[2..], errors)?;
    Some(Consolidate {
        period,
        pattern: re.text.clone(),
        level: level.unwrap_or(Level::Error),
        show_first,
    })
}

/// The option lines `check` prints for `cfg`.
pub fn effective(
    cfg: &ErrorsConfig,
    quote: impl Fn(&str) -> String,
    duration: impl Fn(Duration) -> String,
) -> Vec<String> {
    let mut lines = Vec::new();
    if cfg.stacktrace {
        lines.push("stacktrace".to_string());
    }
    for c in &cfg.consolidate {
        let mut line = format!(
            "consolidate {} {} {}",
            duration(c.period),
            quote(&c.pattern),
            c.level.name()
        );
        if c.show_first {
            line.push_str(" show_first");
        }
        lines.push(line);
    }
    lines
}
