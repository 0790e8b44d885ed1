//! Kubernetes label selectors, as the `labels` option takes them.
//!
//! ```text
//! selector    = requirement { "," requirement }
//! requirement = KEY ( "=" | "==" | "!=" ) VALUE
//!             | KEY ( "in" | "notin" ) "(" VALUE { "," VALUE } ")"
//!             | KEY | "!" KEY
//! ```

use std::collections::BTreeMap;

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
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.0.iter().all(|r| match r {
            Requirement::Equals(k, v) => labels.get(k) == Some(v),
            Requirement::NotEquals(k, v) => labels.get(k) != Some(v),
            Requirement::In(k, vs) => labels.get(k).is_some_and(|v| vs.contains(v)),
            Requirement::NotIn(k, vs) => labels.get(k).is_none_or(|v| !vs.contains(v)),
            Requirement::Exists(k) => labels.contains_key(k),
            Requirement::NotExists(k) => !labels.contains_key(k),
        })
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
            let (k, v) = (key_of(k.trim())?, v.trim().to_string());
            return Ok(if neg {
                Requirement::NotEquals(k, v)
            } else {
                Requirement::Equals(k, v)
            });
        }
    }
    let words: Vec<&str> = part.splitn(3, char::is_whitespace).filter(|w| !w.is_empty()).collect();
    match words.as_slice() {
        [key] => Ok(Requirement::Exists(key_of(key)?)),
        [key, op, rest] if *op == "in" || *op == "notin" => {
            let list = rest
                .trim()
                .strip_prefix('(')
                .and_then(|r| r.strip_suffix(')'))
                .ok_or_else(|| format!("'{part}': expected '(v1, v2, ...)' after {op}"))?;
            let values = list.split(',').map(|v| v.trim().to_string()).collect();
            let key = key_of(key)?;
            Ok(if *op == "in" {
                Requirement::In(key, values)
            } else {
                Requirement::NotIn(key, values)
            })
        }
        _ => Err(format!("'{part}' is not a label requirement")),
    }
}

fn key_of(key: &str) -> Result<String, String> {
    let ok = !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c));
    if ok {
        Ok(key.to_string())
    } else {
        Err(format!("'{key}' is not a label key"))
    }
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
    }
}
