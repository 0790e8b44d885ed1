//! Kubernetes label selectors, as the `labels` and `namespace_labels`
//! options take them.
//!
//! ```text
//! selector    = requirement { "," requirement }
//! requirement = KEY ( "=" | "==" | "!=" ) VALUE
//!             | KEY ( "in" | "notin" ) "(" VALUE { "," VALUE } ")"
//!             | KEY | "!" KEY
//! KEY         = [ DNS-SUBDOMAIN "/" ] NAME      NAME: 1-63 of [A-Za-z0-9-_.], alphanumeric at both ends
//! VALUE       = "" | NAME
//! ```

use std::collections::BTreeMap;
use std::fmt;

/// One requirement of a selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Requirement {
    Equals(String, String),
    NotEquals(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    NotExists(String),
}

/// A parsed label selector; all requirements must hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selector(pub Vec<Requirement>);

impl Selector {
    /// Parses selector text, or says what is wrong with it.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut reqs = Vec::new();
        for part in split_top_level(text) {
            let part = part.trim();
            if part.is_empty() {
                return Err(format!("empty requirement in '{text}'"));
            }
            reqs.push(requirement(part)?);
        }
        Ok(Selector(reqs))
    }

    /// Whether `labels` satisfy every requirement.
    pub fn matches<K, V>(&self, labels: &BTreeMap<K, V>) -> bool
    where
        K: std::borrow::Borrow<str> + Ord,
        V: AsRef<str>,
    {
        let get = |k: &String| labels.get(k.as_str()).map(AsRef::as_ref);
        let among = |vs: &[String], v: &str| vs.iter().any(|x| x == v);
        self.0.iter().all(|r| match r {
            Requirement::Equals(k, v) => get(k) == Some(v.as_str()),
            Requirement::NotEquals(k, v) => get(k) != Some(v.as_str()),
            Requirement::In(k, vs) => get(k).is_some_and(|v| among(vs, v)),
            Requirement::NotIn(k, vs) => get(k).is_none_or(|v| !among(vs, v)),
            Requirement::Exists(k) => labels.contains_key(k.as_str()),
            Requirement::NotExists(k) => !labels.contains_key(k.as_str()),
        })
    }
}

/// The selector in Kubernetes' canonical spelling (`a=b,c in (x,y),!d`).
impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            match r {
                Requirement::Equals(k, v) => write!(f, "{k}={v}")?,
                Requirement::NotEquals(k, v) => write!(f, "{k}!={v}")?,
                Requirement::In(k, vs) => write!(f, "{k} in ({})", vs.join(","))?,
                Requirement::NotIn(k, vs) => write!(f, "{k} notin ({})", vs.join(","))?,
                Requirement::Exists(k) => write!(f, "{k}")?,
                Requirement::NotExists(k) => write!(f, "!{k}")?,
            }
        }
        Ok(())
    }
}

fn split_top_level(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

fn requirement(part: &str) -> Result<Requirement, String> {
    if let Some(key) = part.strip_prefix('!') {
        return Ok(Requirement::NotExists(key_of(key.trim())?));
    }
    for (op, neg) in [("!=", true), ("==", false), ("=", false)] {
        if let Some((k, v)) = part.split_once(op) {
            let (k, v) = (key_of(k.trim())?, value_of(v.trim())?);
            return Ok(if neg {
                Requirement::NotEquals(k, v)
            } else {
                Requirement::Equals(k, v)
            });
        }
    }
    // `KEY`, or `KEY in (V, ...)` / `KEY notin (V, ...)`, the parenthesis
    // with or without a space before it (as Kubernetes' lexer reads it)
    let part = part.trim();
    let (key, rest) = part
        .split_once(char::is_whitespace)
        .map_or((part, ""), |(k, r)| (k, r.trim_start()));
    if rest.is_empty() {
        return Ok(Requirement::Exists(key_of(key)?));
    }
    let operator = |op| {
        let list = rest.strip_prefix(op)?;
        list.starts_with([' ', '\t', '(']).then(|| (op, list.trim()))
    };
    let (op, list) = ["notin", "in"]
        .into_iter()
        .find_map(operator)
        .ok_or_else(|| format!("'{part}' is not a label requirement"))?;
    let list = list
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(|| format!("'{part}': expected '(v1, v2, ...)' after {op}"))?;
    // `()` is the set holding the empty value, as in Kubernetes
    let values = list.split(',').map(|v| value_of(v.trim())).collect::<Result<_, _>>()?;
    let key = key_of(key)?;
    Ok(if op == "in" {
        Requirement::In(key, values)
    } else {
        Requirement::NotIn(key, values)
    })
}

/// A label key: an optional DNS subdomain prefix and `/`, then a name.
fn key_of(key: &str) -> Result<String, String> {
    let (prefix, name) = key.rsplit_once('/').map_or((None, key), |(p, n)| (Some(p), n));
    let prefix_ok = prefix.is_none_or(|p| {
        p.len() <= 253
            && p.split('.').all(|l| {
                !l.is_empty()
                    && l.bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                    && !l.starts_with('-')
                    && !l.ends_with('-')
            })
    });
    if prefix_ok && !name.is_empty() && is_name(name) {
        Ok(key.to_string())
    } else {
        Err(format!("'{key}' is not a label key"))
    }
}

/// A label value: empty, or a name of at most 63 characters.
fn value_of(value: &str) -> Result<String, String> {
    if value.is_empty() || is_name(value) {
        Ok(value.to_string())
    } else {
        Err(format!("'{value}' is not a label value"))
    }
}

/// 1-63 of `[A-Za-z0-9-_.]`, alphanumeric at both ends.
fn is_name(s: &str) -> bool {
    let b = s.as_bytes();
    let inner = |c: &u8| c.is_ascii_alphanumeric() || b"-_.".contains(c);
    matches!((b.first(), b.last()), (Some(f), Some(l)) if f.is_ascii_alphanumeric() && l.is_ascii_alphanumeric())
        && b.len() <= 63
        && b.iter().all(inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn parses_and_matches_every_form() {
        let s = Selector::parse("app=web, tier in (a, b), !legacy, env!=dev, owner").expect("valid selector");
        assert_eq!(s.0.len(), 5);
        assert!(s.matches(&labels(&[("app", "web"), ("tier", "b"), ("owner", "x")])));
        assert!(!s.matches(&labels(&[("app", "web"), ("tier", "c"), ("owner", "x")])));
        assert!(!s.matches(&labels(&[
            ("app", "web"),
            ("tier", "a"),
            ("owner", "x"),
            ("legacy", "1")
        ])));
        assert!(!s.matches(&labels(&[
            ("app", "web"),
            ("tier", "a"),
            ("owner", "x"),
            ("env", "dev")
        ])));
        let notin = Selector::parse("tier notin (a)").expect("valid selector");
        assert!(notin.matches(&labels(&[])));
        assert!(!notin.matches(&labels(&[("tier", "a")])));
    }

    #[test]
    fn rejects_garbage() {
        assert!(Selector::parse("a b c d").is_err());
        assert!(Selector::parse("x in a,b").is_err());
        assert!(Selector::parse("=v").is_err());
        assert!(Selector::parse("").is_err());
        assert!(Selector::parse("a=b c").is_err(), "a space in a value");
        assert!(Selector::parse("a=-b").is_err(), "a value must start alphanumeric");
        assert!(Selector::parse("a in (b").is_err(), "an open set");
        assert!(Selector::parse("a inx (b)").is_err(), "no such operator");
        assert!(Selector::parse("a=b=c").is_err());
        assert!(Selector::parse("Bad_Prefix.io/a").is_err(), "an upper-case prefix");
        assert!(
            Selector::parse(&format!("a={}", "x".repeat(64))).is_err(),
            "a value over 63"
        );
        assert!(Selector::parse("a=").is_ok(), "an empty value");
        // as Kubernetes reads them: `()` holds the empty value, `in(` needs no space
        let empty = Selector::parse("a in ()").expect("the empty value's set");
        assert!(empty.matches(&labels(&[("a", "")])) && !empty.matches(&labels(&[("a", "x")])));
        assert!(Selector::parse("a in(x,y)").is_ok() && Selector::parse("a notin(x)").is_ok());
        assert!(Selector::parse("kubernetes.io/metadata.name=x").is_ok());
    }

    #[test]
    fn prints_canonically_and_reparses_the_same() {
        let text = "a=b, c != d,e in (x, y),f notin (z),g,!h";
        let s = Selector::parse(text).expect("valid selector");
        assert_eq!(s.to_string(), "a=b,c!=d,e in (x,y),f notin (z),g,!h");
        assert_eq!(Selector::parse(&s.to_string()), Ok(s));
    }
}
