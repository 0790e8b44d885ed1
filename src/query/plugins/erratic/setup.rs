//! `erratic [{ drop [N]; truncate [N]; delay [N [DURATION]]; large }]`:
//! without `drop`, one query in 2 is dropped unless `delay` or `truncate`
//! is given; `drop` alone keeps 2, `truncate` alone means 2, `delay` alone
//! 2 and 100ms, as CoreDNS reads them. Words after `erratic` (the
//! integration tests write `erratic . {`) are ignored, as there.

use std::sync::Arc;
use std::time::Duration;

use super::options::ErraticConfig;
use crate::corefile::args::Args;
use crate::corefile::blocks::Directive;
use crate::corefile::options::{self, Opt};
use crate::corefile::problem::ConfigError;
use crate::query::plugins::chain::Setup;

/// What the block's lines set: the options, and whether `drop` was given
/// an amount.
#[derive(Default)]
struct Reading {
    cfg: ErraticConfig,
    dropped: bool,
}

/// The options of the block.
const OPTIONS: &[Opt<Reading>] = &[
    Opt::new("drop", (0, 1), |a, r, errors| {
        r.dropped |= !a.args.is_empty();
        r.cfg.drop = amount(a, r.cfg.drop, errors);
    }),
    Opt::new("truncate", (0, 1), |a, r, errors| r.cfg.truncate = amount(a, 2, errors)),
    Opt::new("delay", (0, 2), |a, r, errors| {
        r.cfg.delay = amount(a, 2, errors);
        r.cfg.duration = duration(a, errors);
    }),
    Opt::new("large", (0, 0), |_, r, _| r.cfg.large = true),
];

/// Reads `erratic` and its block (a later one replaces it).
pub fn parse(d: &Directive, errors: &mut Vec<ConfigError>) -> Arc<dyn Setup> {
    Arc::new(erratic(d, errors))
}

/// `erratic`'s options.
fn erratic(d: &Directive, errors: &mut Vec<ConfigError>) -> ErraticConfig {
    // arguments (`erratic . {`) are ignored, as CoreDNS does
    let mut r = Reading::default();
    options::read("erratic", &d.options, OPTIONS, &mut r, errors);
    if (r.cfg.delay > 0 || r.cfg.truncate > 0) && !r.dropped {
        r.cfg.drop = 0;
    }
    r.cfg
}

/// The line's AMOUNT (a whole number, at least 0), `default` without one.
fn amount(a: &Args<'_>, default: u64, errors: &mut Vec<ConfigError>) -> u64 {
    let Some(word) = a.args.first() else { return default };
    match word.text.parse::<i32>() {
        Ok(n) if n >= 0 => n as u64,
        _ => {
            let message = format!("erratic: {}: '{}' is not an amount (0 or more)", a.name.text, word.text);
            errors.push(ConfigError::new(&word.pos, message));
            default
        }
    }
}

/// `delay`'s DURATION, 100ms without one.
fn duration(a: &Args<'_>, errors: &mut Vec<ConfigError>) -> Duration {
    let default = Duration::from_millis(100);
    match a.args.get(1) {
        None => default,
        Some(_) => a.duration(1, errors).unwrap_or(default),
    }
}

#[cfg(test)]
mod tests {
    use crate::config::tests::loaded as load;

    /// `check`'s lines of the block's `erratic`, one option a line.
    fn erratic(body: &str) -> Result<Vec<String>, Vec<String>> {
        let text = format!("example.org:53 {{\n{body}\n}}\n");
        load(&text).map(|c| {
            c.servers[0]
                .printed("erratic")
                .lines()
                .map(|l| l.trim().to_string())
                .collect()
        })
    }

    /// CoreDNS's TestParseErratic: (drop, delay, truncate) of each row.
    #[test]
    fn amounts_as_coredns_reads_them() {
        let rows = [
            ("erratic", (2, 0, 0)),
            ("erratic {\ndrop 2\ndelay 3 1ms\n}", (2, 3, 0)),
            ("erratic {\ntruncate 2\ndelay 3 1ms\n}", (0, 3, 2)),
            ("erratic {\ndrop 3\ndelay\n}", (3, 2, 0)),
            ("erratic {\ndrop 3\ntruncate\n}", (3, 0, 2)),
            ("erratic {\ndrop\n}", (2, 0, 0)),
        ];
        for (body, (drop, delay, truncate)) in rows {
            let lines = erratic(body).expect(body);
            let want = [format!("drop {drop}"), format!("truncate {truncate}")];
            assert_eq!(lines[1..3], want, "{body}");
            assert!(lines[3].starts_with(&format!("delay {delay} ")), "{body}: {lines:?}");
        }
        assert_eq!(erratic("erratic {\ndelay 3 1ms\n}").expect("loads")[3], "delay 3 1ms");
        assert!(
            erratic("erratic . {\ndrop 0\n}").is_ok(),
            "words after erratic are ignored"
        );
        for bad in [
            "erratic {\ndrop -1\n}",
            "erratic {\ndelay -1\n}",
            "erratic {\ndelay 1 2 4\n}",
            "erratic {\ndelay 15.a\n}",
            "erratic {\ndrop 3\ndelay 3 bla\n}",
            "erratic {\ntruncate 15.a\n}",
            "erratic {\nsomething-else\n}",
        ] {
            assert!(erratic(bad).is_err(), "{bad}");
        }
    }
}
