//! Options as data: each directive lists the options of its block once,
//! as a table of [`Opt`] (name, how many arguments, what it does with
//! them), and [`read`] walks the block's lines through it. Argument
//! counts are checked here, and an option that is not in the table gets
//! one message form, naming the nearest valid option when there is one:
//!
//! ```text
//! Corefile:4:9: cache: unknown option 'prefech' (did you mean 'prefetch'? supported: success, denial, prefetch)
//! ```

use super::args::Args;
use super::blocks::Line;
use super::problem::ConfigError;

/// Any number of arguments (an [`Opt`]'s upper bound).
pub const MANY: usize = usize::MAX;

/// One option of a directive's block, read into the directive's `C`.
pub struct Opt<C> {
    pub name: &'static str,
    /// The fewest and most arguments it takes ([`MANY`] for no bound).
    pub args: (usize, usize),
    /// Reads the option's arguments (their count already checked).
    pub read: fn(&Args<'_>, &mut C, &mut Vec<ConfigError>),
    /// Whether messages list it as supported (not an option CoreDNS has
    /// that clusterdns refuses with a reason of its own).
    pub listed: bool,
}

impl<C> Opt<C> {
    /// An option of `min..=max` arguments read by `read`.
    pub const fn new(
        name: &'static str,
        (min, max): (usize, usize),
        read: fn(&Args<'_>, &mut C, &mut Vec<ConfigError>),
    ) -> Self {
        Opt {
            name,
            args: (min, max),
            read,
            listed: true,
        }
    }

    /// A CoreDNS option clusterdns refuses: `read` reports why, and
    /// messages do not list it as supported.
    pub const fn refused(name: &'static str, read: fn(&Args<'_>, &mut C, &mut Vec<ConfigError>)) -> Self {
        Opt {
            name,
            args: (0, MANY),
            read,
            listed: false,
        }
    }
}

/// Reads every line of `lines` (the block of directive `directive`)
/// through `table` into `cfg`.
pub fn read<C>(directive: &str, lines: &[Line], table: &[Opt<C>], cfg: &mut C, errors: &mut Vec<ConfigError>) {
    for line in lines {
        read_line(directive, line, table, cfg, errors);
    }
}

/// Reads one option line through `table`; false when the option is not
/// in it (reported as unknown).
pub fn read_line<C>(
    directive: &str,
    line: &Line,
    table: &[Opt<C>],
    cfg: &mut C,
    errors: &mut Vec<ConfigError>,
) -> bool {
    let a = Args::from(line);
    let Some(opt) = table.iter().find(|o| o.name == a.name.text) else {
        unknown(directive, &a, table.iter().filter(|o| o.listed).map(|o| o.name), errors);
        return false;
    };
    if a.count(opt.args.0, opt.args.1, errors) {
        (opt.read)(&a, cfg, errors);
    }
    true
}

/// `DIRECTIVE: unknown option 'X' (did you mean 'Y'? supported: ...)` at
/// the option, `names` being the options `DIRECTIVE` takes (none: "it
/// takes none").
pub fn unknown<'n>(
    directive: &str,
    a: &Args<'_>,
    names: impl Iterator<Item = &'n str> + Clone,
    errors: &mut Vec<ConfigError>,
) {
    let other = a.name.text.as_str();
    let listed: Vec<&str> = names.clone().collect();
    let hint = match nearest(other, names) {
        Some(near) => format!("did you mean '{near}'? supported: "),
        None => "supported: ".to_string(),
    };
    let message = if listed.is_empty() {
        format!("{directive}: unknown option '{other}' (it takes none)")
    } else {
        format!("{directive}: unknown option '{other}' ({hint}{})", listed.join(", "))
    };
    errors.push(ConfigError::new(a.pos(), message));
}

/// The name of `names` closest to `typed` in edits, if it is close
/// enough to be a typo of it (at most a third of its letters, and 2).
pub fn nearest<'n>(typed: &str, names: impl Iterator<Item = &'n str>) -> Option<&'n str> {
    let limit = (typed.chars().count() / 3).clamp(1, 2);
    names
        .map(|n| (edits(typed, n), n))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, n)| n)
}

/// Levenshtein distance between `a` and `b`, by characters.
fn edits(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitution = diagonal + usize::from(ca != *cb);
            diagonal = row[j + 1];
            row[j + 1] = substitution.min(row[j] + 1).min(row[j + 1] + 1);
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_typo_names_the_option_it_misspells() {
        let names = ["success", "denial", "prefetch", "serve_stale"];
        assert_eq!(nearest("prefech", names.iter().copied()), Some("prefetch"));
        assert_eq!(nearest("serve-stale", names.iter().copied()), Some("serve_stale"));
        assert_eq!(nearest("denail", names.iter().copied()), Some("denial"));
        assert_eq!(nearest("bogus", names.iter().copied()), None);
        assert_eq!(nearest("x", ["ttl"].iter().copied()), None);
    }

    #[test]
    fn edits_counts_insertions_deletions_and_substitutions() {
        assert_eq!(edits("", "abc"), 3);
        assert_eq!(edits("kitten", "sitting"), 3);
        assert_eq!(edits("same", "same"), 0);
    }
}
