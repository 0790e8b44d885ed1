//! `rewrite`: rules that change the question before the plugins see it,
//! and the answer back before the client does.
//!
//! ```text
//! rewrite [continue|stop] name [exact|prefix|suffix|substring|regex] FROM TO
//!                              [answer auto | answer name FROM TO | answer value FROM TO ...]
//! rewrite [continue|stop] type FROM TO              rewrite [continue|stop] class FROM TO
//! rewrite [continue|stop] ttl [MATCH] NAME SECONDS|[MIN]-[MAX]
//! rewrite [continue|stop] cname [MATCH] FROM TO
//! rewrite [continue|stop] rcode [MATCH] NAME FROM-RCODE TO-RCODE
//! rewrite [continue|stop] edns0 local set|replace|append CODE DATA|{qname}|{qtype}|{client_ip}|{client_port}|{protocol} [revert]
//! rewrite [continue|stop] edns0 nsid set|replace|append [revert]
//! rewrite [continue|stop] edns0 subnet set|replace|append V4-BITS V6-BITS [revert]
//! rewrite [continue|stop] edns0 local unset CODE | edns0 nsid unset | edns0 subnet unset
//! rewrite [continue|stop] { name ...  answer ... }  -- the lines joined into one rule
//! ```
//!
//! Names other than regexes are lowercased and made fully qualified, as
//! CoreDNS does (`prefix foo bar` matches `foo.<anything>`). `stop` (the
//! default) ends the rule list at the first rule that applied.
pub mod edns;
pub mod rule;

use hickory_proto::rr::{DNSClass, RecordType};

use crate::corefile::blocks::Directive;
use crate::corefile::lexer::{Pos, Word};
use crate::corefile::problem::ConfigError;
use crate::query::plugins::rewrite::setup::rule::{AnswerRule, Matcher, RewriteRule, RuleKind};

/// Lowercase and fully qualified, as CoreDNS's `plugin.Name().Normalize()`.
pub fn normalize(text: &str) -> String {
    let lower = text.to_lowercase();
    if lower.ends_with('.') {
        lower
    } else {
        lower + "."
    }
}

/// Parses one `rewrite` directive (its block lines, when it has no rule
/// on its own line, are appended to its arguments as CoreDNS does).
pub fn parse(d: &Directive, errors: &mut Vec<ConfigError>) -> Option<RewriteRule> {
    let mut words: Vec<&Word> = d.args.iter().collect();
    if words.len() < 2 {
        for line in &d.options {
            words.push(&line.name);
            words.extend(line.args.iter());
        }
    } else if let Some(line) = d.options.first() {
        errors.push(ConfigError::new(
            &line.name.pos,
            "rewrite: a rule on the directive line takes no block",
        ));
    }
    let (stop, words) = match words.first().map(|w| w.text.to_lowercase()) {
        Some(m) if m == "stop" || m == "continue" => (m == "stop", &words[1..]),
        _ => (true, &words[..]),
    };
    let Some((field, rest)) = words.split_first() else {
        errors.push(ConfigError::new(
            &d.name.pos,
            "rewrite: no rule (e.g. 'rewrite name FROM TO')",
        ));
        return None;
    };
    let kind = match field.text.to_lowercase().as_str() {
        "name" => name_rule(field, rest, errors)?,
        "type" | "class" => type_or_class(field, rest, errors)?,
        "ttl" => ttl_rule(field, rest, errors)?,
        "cname" => {
            let (matcher, to, extra) = matched(field, rest, errors)?;
            if let Some(w) = extra.first() {
                errors.push(ConfigError::new(&w.pos, "rewrite: too many arguments for a cname rule"));
                return None;
            }
            RuleKind::Cname { matcher, to }
        }
        "edns0" => crate::query::plugins::rewrite::setup::edns::parse(field, rest, errors)?,
        "rcode" => rcode_rule(field, rest, errors)?,
        "answer" => {
            errors.push(ConfigError::new(
                &field.pos,
                "rewrite: response rewrites must begin with a name rule",
            ));
            return None;
        }
        other => {
            errors.push(ConfigError::new(
                &field.pos,
                format!(
                    "rewrite: invalid rule type '{other}' (supported: name, type, class, ttl, cname, rcode, edns0)"
                ),
            ));
            return None;
        }
    };
    Some(RewriteRule { stop, kind })
}

/// `[MATCH] FROM TO ...`: the matcher, TO, and what follows.
fn matched<'a>(
    field: &Word,
    args: &'a [&'a Word],
    errors: &mut Vec<ConfigError>,
) -> Option<(Matcher, String, &'a [&'a Word])> {
    let kinds = ["exact", "prefix", "suffix", "substring", "regex"];
    let (kind, from, to, rest) = match args {
        [a, b] => ("exact".to_string(), *a, *b, &args[2..]),
        [k, a, b, ..] if kinds.contains(&k.text.to_lowercase().as_str()) => (k.text.to_lowercase(), *a, *b, &args[3..]),
        [k, _, _, ..] => {
            errors.push(ConfigError::new(
                &k.pos,
                format!(
                    "rewrite: {} rule supports only exact, prefix, suffix, substring and regex matching, got '{}'",
                    field.text, k.text
                ),
            ));
            return None;
        }
        _ => {
            errors.push(ConfigError::new(
                &field.pos,
                format!("rewrite: too few arguments for a {} rule ([MATCH] FROM TO)", field.text),
            ));
            return None;
        }
    };
    let matcher = match kind.as_str() {
        "exact" => Matcher::Exact(normalize(&from.text)),
        "prefix" => Matcher::Prefix(normalize(&from.text)),
        "suffix" => Matcher::Suffix(normalize(&from.text)),
        "substring" => Matcher::Substring(normalize(&from.text)),
        _ => Matcher::Regex(regex_with_groups(from, to, errors)?),
    };
    Some((matcher, normalize(&to.text), rest))
}

/// A regex whose replacement `to` uses no more `{N}` groups than it has.
fn regex_with_groups(from: &Word, to: &Word, errors: &mut Vec<ConfigError>) -> Option<regex::Regex> {
    let re = crate::corefile::values::regex(from, errors)?;
    let used = (0..=100).filter(|i| to.text.contains(&format!("{{{i}}}"))).count();
    if used > re.captures_len() - 1 {
        errors.push(ConfigError::new(
            &to.pos,
            format!(
                "rewrite: '{}' uses more groups than the pattern '{}' has",
                to.text, from.text
            ),
        ));
        return None;
    }
    Some(re)
}

/// One answer rule of a name rule, `tail` its words after `answer`: the
/// words after it, and whether it was `auto` (else it is in `answers`).
fn answer_rule<'a, 'b>(
    answer_at: &Pos,
    tail: &'a [&'b Word],
    answers: &mut Vec<AnswerRule>,
    errors: &mut Vec<ConfigError>,
) -> Option<(&'a [&'b Word], bool)> {
    match tail {
        [w, more @ ..] if w.text == "auto" => Some((more, true)),
        [w, from, to, more @ ..] if w.text == "name" || w.text == "value" => {
            answers.push(AnswerRule {
                value: w.text == "value",
                pattern: regex_with_groups(from, to, errors)?,
                to: normalize(&to.text),
            });
            Some((more, false))
        }
        [w, ..] if w.text == "name" || w.text == "value" => {
            errors.push(ConfigError::new(
                &w.pos,
                format!("rewrite: answer {} needs FROM and TO", w.text),
            ));
            None
        }
        _ => {
            let at = tail.first().map_or(answer_at, |w| &w.pos);
            errors.push(ConfigError::new(
                at,
                "rewrite: answer takes auto, name FROM TO or value FROM TO",
            ));
            None
        }
    }
}

fn name_rule(field: &Word, args: &[&Word], errors: &mut Vec<ConfigError>) -> Option<RuleKind> {
    let (matcher, to, mut rest) = matched(field, args, errors)?;
    let mut auto = matches!(matcher, Matcher::Exact(_));
    let mut answers = Vec::new();
    let mut auto_seen = false;
    while let Some((first, mut tail)) = rest.split_first() {
        // After the first answer rule the word `answer` may be left out
        // (`answer value FROM TO name FROM TO`), as CoreDNS reads it.
        let started = auto_seen || !answers.is_empty();
        if first.text != "answer" && started {
            tail = rest;
        } else if first.text != "answer" {
            errors.push(ConfigError::new(
                &first.pos,
                format!(
                    "rewrite: unexpected '{}' (expected 'answer auto|name|value ...')",
                    first.text
                ),
            ));
            return None;
        }
        let (more, is_auto) = answer_rule(&first.pos, tail, &mut answers, errors)?;
        if is_auto {
            (auto, auto_seen) = (true, true);
        }
        rest = more;
    }
    let explicit = answers.iter().any(|a| !a.value);
    if auto_seen && explicit {
        errors.push(ConfigError::new(
            &field.pos,
            "rewrite: 'answer auto' cannot be combined with 'answer name'",
        ));
        return None;
    }
    Some(RuleKind::Name {
        matcher,
        to,
        auto,
        answers,
    })
}

fn type_or_class(field: &Word, args: &[&Word], errors: &mut Vec<ConfigError>) -> Option<RuleKind> {
    let [from, to] = args else {
        let at = args.get(2).map_or(&field.pos, |w| &w.pos);
        errors.push(ConfigError::new(
            at,
            format!("rewrite: {} rules take exactly FROM and TO", field.text),
        ));
        return None;
    };
    if field.text.eq_ignore_ascii_case("type") {
        let parse = |w: &Word, errors: &mut Vec<ConfigError>| match w.text.to_uppercase().parse::<RecordType>() {
            Ok(t) if !matches!(t, RecordType::Unknown(_)) => Some(t),
            _ => {
                errors.push(ConfigError::new(&w.pos, format!("rewrite: invalid type '{}'", w.text)));
                None
            }
        };
        let (from, to) = (parse(from, errors), parse(to, errors));
        return Some(RuleKind::Type { from: from?, to: to? });
    }
    let parse = |w: &Word, errors: &mut Vec<ConfigError>| {
        let upper = Word {
            text: w.text.to_uppercase(),
            ..(*w).clone()
        };
        match crate::corefile::values::class(&upper, errors)? {
            Some(c) => Some(c),
            None => Some(DNSClass::ANY),
        }
    };
    let (from, to) = (parse(from, errors), parse(to, errors));
    Some(RuleKind::Class { from: from?, to: to? })
}

fn ttl_rule(field: &Word, args: &[&Word], errors: &mut Vec<ConfigError>) -> Option<RuleKind> {
    // Reuse the matcher's FROM TO shape with the TTL in TO's place.
    let (matcher, _, extra) = matched(field, args, errors)?;
    if let Some(w) = extra.first() {
        errors.push(ConfigError::new(&w.pos, "rewrite: too many arguments for a ttl rule"));
        return None;
    }
    let ttl = args.last()?;
    let num = |s: &str, empty: u32| -> Option<u32> {
        if s.is_empty() {
            return Some(empty);
        }
        s.parse::<u32>().ok().filter(|n| *n <= i32::MAX as u32)
    };
    let range = match ttl.text.split_once('-') {
        Some((lo, hi)) => num(lo, 0).zip(num(hi, i32::MAX as u32)),
        None => num(&ttl.text, u32::MAX)
            .filter(|_| !ttl.text.is_empty())
            .map(|n| (n, n)),
    };
    match range {
        Some((min, max)) if min <= max && ttl.text != "-" => Some(RuleKind::Ttl { matcher, min, max }),
        _ => {
            errors.push(ConfigError::new(
                &ttl.pos,
                format!(
                    "rewrite: invalid TTL '{}' (SECONDS or [MIN]-[MAX], 0..2147483647)",
                    ttl.text
                ),
            ));
            None
        }
    }
}

/// `rcode [MATCH] NAME FROM TO`: rcodes by name (any case) or number 0..23.
fn rcode_rule(field: &Word, args: &[&Word], errors: &mut Vec<ConfigError>) -> Option<RuleKind> {
    if !(3..=4).contains(&args.len()) {
        let at = args.get(4).map_or(&field.pos, |w| &w.pos);
        errors.push(ConfigError::new(at, "rewrite: rcode rules take [MATCH] NAME FROM TO"));
        return None;
    }
    let (head, codes) = args.split_at(args.len() - 2);
    let (matcher, _, _) = matched(field, &[head, &codes[..1]].concat(), errors)?;
    let code = |w: &Word, errors: &mut Vec<ConfigError>| {
        let by_number = w.text.parse::<u16>().ok().filter(|n| *n <= 23);
        let by_name = crate::corefile::values::rcode_by_name(&w.text.to_uppercase());
        let found = by_number
            .or(by_name)
            .map(<hickory_proto::op::ResponseCode as From<u16>>::from);
        if found.is_none() {
            errors.push(ConfigError::new(&w.pos, format!("rewrite: invalid rcode '{}'", w.text)));
        }
        found
    };
    let (from, to) = (code(codes[0], errors), code(codes[1], errors));
    Some(RuleKind::Rcode {
        matcher,
        from: from?,
        to: to?,
    })
}

#[cfg(test)]
mod tests;
