//! `header { query|response set|clear FLAG... }`: one rule line or more,
//! each a selector, an action and at least one flag, all case-insensitive
//! as CoreDNS reads them. A second `header` in a block adds its rules
//! after the first one's.

use super::rules::{Rule, Rules, FLAGS};
use crate::corefile::blocks::{Directive, Line};
use crate::corefile::problem::ConfigError;

/// Reads one `header` directive into `rules`.
pub fn parse(d: &Directive, rules: &mut Rules, errors: &mut Vec<ConfigError>) {
    let empty = d.args.len() == 1 && d.args[0].text == "{}"; // `header {}`: one word
    if let Some(extra) = d.args.first().filter(|_| !empty) {
        errors.push(ConfigError::new(
            &extra.pos,
            "header: takes no arguments, only a block of rules (header { response set ra })",
        ));
        return;
    }
    if d.options.is_empty() {
        errors.push(ConfigError::new(
            &d.name.pos,
            "header: no rules; write at least one (header { query|response set|clear FLAG... })",
        ));
        return;
    }
    for line in &d.options {
        rule_line(line, rules, errors);
    }
}

/// `query|response set|clear FLAG...`
fn rule_line(line: &Line, rules: &mut Rules, errors: &mut Vec<ConfigError>) {
    let selector = line.name.text.to_ascii_lowercase();
    let into = match selector.as_str() {
        "query" => &mut rules.query,
        "response" => &mut rules.response,
        _ => {
            let message = format!("header: invalid selector '{}' (query or response)", line.name.text);
            errors.push(ConfigError::new(&line.name.pos, message));
            return;
        }
    };
    let Some((action, flags)) = line.args.split_first().filter(|(_, flags)| !flags.is_empty()) else {
        let message = format!("header: {selector} needs an action and at least one flag (set|clear FLAG...)");
        errors.push(ConfigError::new(&line.name.pos, message));
        return;
    };
    let set = match action.text.to_ascii_lowercase().as_str() {
        "set" => true,
        "clear" => false,
        _ => {
            let message = format!("header: unknown action '{}' (set or clear)", action.text);
            errors.push(ConfigError::new(&action.pos, message));
            return;
        }
    };
    for word in flags {
        let lower = word.text.to_ascii_lowercase();
        match FLAGS.iter().find(|(name, _)| *name == lower) {
            Some((_, flag)) => into.push(Rule { flag: *flag, set }),
            None => {
                let names: Vec<&str> = FLAGS.iter().map(|(n, _)| *n).collect();
                let message = format!("header: unknown flag '{}' (supported: {})", word.text, names.join(", "));
                errors.push(ConfigError::new(&word.pos, message));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::config::tests::{loaded as load, one_error_each};
    use crate::query::reply::header::rules::{Flag, Rule};

    /// CoreDNS's TestSetupHeader, accepted rows.
    #[test]
    fn rules_in_order_per_selector() {
        let text = ".:53 {\nheader {\nresponse set ra AA\nQuery clear rd\nresponse clear ra\n}\n}\n";
        let config = load(text).expect("loads");
        let rules = config.servers[0].header.clone().expect("header");
        let r = |flag, set| Rule { flag, set };
        assert_eq!(rules.query, [r(Flag::Rd, false)]);
        assert_eq!(
            rules.response,
            [r(Flag::Ra, true), r(Flag::Aa, true), r(Flag::Ra, false)]
        );
    }

    /// CoreDNS's TestSetupHeader, refused rows (clusterdns's wording).
    #[test]
    fn bad_rules_are_refused_where_they_are() {
        one_error_each(
            &[
                (".:53 {\nheader {}\n}\n", "/tmp/Corefile:2:1: header: no rules"),
                (".:53 {\nheader\n}\n", "/tmp/Corefile:2:1: header: no rules"),
                (
                    ".:53 {\nheader {\nfoo\n}\n}\n",
                    "/tmp/Corefile:3:1: header: invalid selector 'foo'",
                ),
                (
                    ".:53 {\nheader {\nresponse set\n}\n}\n",
                    "/tmp/Corefile:3:1: header: response needs an action",
                ),
                (
                    ".:53 {\nheader {\nquery foo\n}\n}\n",
                    "/tmp/Corefile:3:1: header: query needs an action",
                ),
                (
                    ".:53 {\nheader {\nquery foo rd\n}\n}\n",
                    "/tmp/Corefile:3:7: header: unknown action 'foo'",
                ),
                (
                    ".:53 {\nheader {\nquery set zz\n}\n}\n",
                    "/tmp/Corefile:3:11: header: unknown flag 'zz'",
                ),
                (
                    ".:53 {\nheader x {\nquery set rd\n}\n}\n",
                    "/tmp/Corefile:2:8: header: takes no arguments",
                ),
            ],
            load,
        );
    }
}
