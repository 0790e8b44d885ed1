//! A SkyDNS record as external-dns writes it under the prefix (CoreDNS's
//! `msg.Service`): JSON with `host`, `port`, `priority`, `weight`, `text`,
//! `mail`, `ttl`, `targetstrip` and `group`, kept with the key it was
//! found at. Also the mapping between names and keys (`x1.skydns.local`
//! ⇄ `/skydns/local/skydns/x1`), wildcards, and `group`'s filter.

use std::net::IpAddr;
use std::sync::Arc;

use serde::Deserialize;

/// One record's JSON (unknown fields are ignored, as Go's decoder does).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct Service {
    pub host: String,
    pub port: i64,
    pub priority: i64,
    pub weight: i64,
    pub text: String,
    pub mail: bool,
    pub ttl: u32,
    pub targetstrip: i64,
    pub group: String,
}

/// What a key of the mirror holds: its record, or why its value is not
/// one (a lookup that meets it fails, as CoreDNS's does).
pub type Entry = Result<Service, String>;

/// A record found for a question: its service and its key.
#[derive(Debug, Clone)]
pub struct Found {
    pub key: Arc<str>,
    pub service: Service,
}

/// What a service's `host` is (CoreDNS's `HostType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostKind {
    /// An address: an A or AAAA record.
    Addr(IpAddr),
    /// A name: a CNAME, SRV or MX target.
    Name,
    /// No address and text: a TXT record.
    Text,
}

impl Service {
    /// Reads a key's value.
    pub fn parse(value: &[u8]) -> Entry {
        serde_json::from_slice(value).map_err(|e| e.to_string())
    }

    /// Whether `host` is an address, a name or text.
    pub fn kind(&self) -> HostKind {
        match self.host.parse::<IpAddr>() {
            Ok(IpAddr::V6(v6)) => HostKind::Addr(v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4)),
            Ok(ip) => HostKind::Addr(ip),
            Err(_) if self.text.is_empty() => HostKind::Name,
            Err(_) => HostKind::Text,
        }
    }

    /// `host` as a target name, `targetstrip` labels taken off its left
    /// (all kept when there are not that many).
    pub fn target(&self) -> String {
        strip(&fqdn(&self.host), self.targetstrip)
    }
}

/// `name` with a final dot.
pub fn fqdn(name: &str) -> String {
    if name.ends_with('.') {
        name.to_string()
    } else {
        format!("{name}.")
    }
}

/// `name` (with its final dot) without its `n` leftmost labels; the
/// whole name when it has no more than `n`.
fn strip(name: &str, n: i64) -> String {
    let mut rest = name;
    for _ in 0..n.max(0) {
        match rest.split_once('.') {
            Some((_, r)) if !r.is_empty() => rest = r,
            _ => return name.to_string(),
        }
    }
    rest.to_string()
}

/// The labels of `name` (lower case, no final dot), root first.
fn reversed(name: &str) -> Vec<&str> {
    let mut labels: Vec<&str> = name
        .trim_end_matches('.')
        .split('.')
        .filter(|l| !l.is_empty())
        .collect();
    labels.reverse();
    labels
}

/// `/PREFIX/` followed by `labels`, `/`-separated, as Go's `path.Join`
/// cleans it (no doubled or trailing slashes).
fn join(prefix: &str, labels: &[&str]) -> String {
    let mut path = String::from("/");
    let parts = prefix.split('/').chain(labels.iter().copied());
    for part in parts.filter(|p| !p.is_empty()) {
        if path.len() > 1 {
            path.push('/');
        }
        path.push_str(part);
    }
    path
}

/// The key of `name` under `prefix`: `x1.skydns.local.` → `/skydns/local/skydns/x1`.
pub fn path(name: &str, prefix: &str) -> String {
    join(prefix, &reversed(name))
}

/// [`path`] cut before the first wildcard label (`*` or `any`), and
/// whether there was one: the keys below are then matched label by label.
pub fn wildcard_path(name: &str, prefix: &str) -> (String, bool) {
    let labels = reversed(name);
    match labels.iter().position(|l| *l == "*" || *l == "any") {
        Some(i) => (join(prefix, &labels[..i]), true),
        None => (join(prefix, &labels), false),
    }
}

/// The name of `key` (its first component, the prefix, dropped):
/// `/skydns/local/skydns/x1` → `x1.skydns.local.`.
pub fn domain(key: &str) -> String {
    let mut parts: Vec<&str> = key.split('/').collect();
    if parts.last() == Some(&"") {
        parts.pop();
    }
    let labels: Vec<&str> = parts.iter().skip(2).rev().copied().collect();
    format!("{}.", labels.join("."))
}

/// Whether `key` matches the wildcard name whose key is `name_parts`
/// (`*` and `any` match any component; a key longer than the name is
/// kept, one shorter is not).
pub fn matches_wildcard(key: &str, name_parts: &[&str]) -> bool {
    let key_parts: Vec<&str> = key.split('/').collect();
    name_parts
        .iter()
        .enumerate()
        .all(|(i, n)| *n == "*" || *n == "any" || key_parts.get(i) == Some(n))
}

/// CoreDNS's `msg.Group`: when the shortest keys carry a `group`, only
/// the services of that group (or of none) are kept; shortest keys that
/// disagree keep everything.
pub fn group(found: Vec<Found>) -> Vec<Found> {
    let Some(first) = found.first() else { return found };
    let depth = |f: &Found| f.key.matches('/').count();
    let (mut group, mut slashes) = (first.service.group.clone(), depth(first));
    // As CoreDNS: the depths after the first shorter key without a group
    // are never measured (they count as 0 below).
    let mut measured = found.len();
    for (i, f) in found.iter().enumerate() {
        if depth(f) < slashes {
            if f.service.group.is_empty() {
                measured = i + 1;
                break;
            }
            slashes = depth(f);
            group = f.service.group.clone();
        }
    }
    if group.is_empty() {
        return found;
    }
    let level = |i: usize, f: &Found| if i < measured { depth(f) } else { 0 };
    let disagree = found
        .iter()
        .enumerate()
        .any(|(i, f)| !f.service.group.is_empty() && level(i, f) == slashes && f.service.group != group);
    if disagree {
        return found;
    }
    found
        .into_iter()
        .filter(|f| f.service.group.is_empty() || f.service.group == group)
        .collect()
}

/// `text` in strings of at most 255 bytes (a TXT record's pieces).
pub fn split255(text: &str) -> Vec<Vec<u8>> {
    if text.is_empty() {
        return vec![Vec::new()];
    }
    text.as_bytes().chunks(255).map(<[u8]>::to_vec).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// CoreDNS's msg/path_test.go and the README's examples.
    #[test]
    fn names_and_keys() {
        assert_eq!(
            path("service.staging.skydns.local.", "skydns"),
            "/skydns/local/skydns/staging/service"
        );
        assert_eq!(path("x1.skydns.local.", "/skydns"), "/skydns/local/skydns/x1");
        assert_eq!(
            domain("/skydns/local/skydns/staging/service"),
            "service.staging.skydns.local."
        );
        assert_eq!(domain("/skydns/local/skydns/x1/"), "x1.skydns.local.");
        assert_eq!(
            wildcard_path("prod.*.skydns.test.", "skydns"),
            ("/skydns/test/skydns".to_string(), true)
        );
        let parts: Vec<&str> = "/skydns/test/skydns/*/prod".split('/').collect();
        assert!(matches_wildcard("/skydns/test/skydns/region1/prod/server1/a", &parts));
        assert!(!matches_wildcard("/skydns/test/skydns/region1/dev/server1/a", &parts));
        assert!(!matches_wildcard("/skydns/test/skydns/region1", &parts));
    }

    /// CoreDNS's msg/service_test.go: targetstrip, split255, HostType.
    #[test]
    fn targets_text_and_kinds() {
        let s = |host: &str, strip: i64| Service {
            host: host.into(),
            targetstrip: strip,
            ..Service::default()
        };
        assert_eq!(s("a.b.c", 1).target(), "b.c.");
        assert_eq!(s("a.b.c", 5).target(), "a.b.c.");
        assert_eq!(
            split255(&"0".repeat(600)).iter().map(Vec::len).collect::<Vec<_>>(),
            [255, 255, 90]
        );
        assert_eq!(s("10.0.0.1", 0).kind(), HostKind::Addr("10.0.0.1".parse().expect("ip")));
        assert_eq!(
            s("::ffff:10.0.0.1", 0).kind(),
            HostKind::Addr("10.0.0.1".parse().expect("ip"))
        );
        assert_eq!(s("name.example", 0).kind(), HostKind::Name);
        let txt = Service {
            text: "t".into(),
            ..Service::default()
        };
        assert_eq!(txt.kind(), HostKind::Text);
    }

    /// CoreDNS's msg/service_test.go TestGroup.
    #[test]
    fn groups_as_coredns() {
        let f = |key: &str, group: &str| Found {
            key: key.into(),
            service: Service {
                host: "127.0.0.1".into(),
                group: group.into(),
                ..Service::default()
            },
        };
        let keys = |v: Vec<Found>| v.iter().map(|f| f.key.to_string()).collect::<Vec<_>>();
        // one group at the top: all of it
        assert_eq!(keys(group(vec![f("/a", "g"), f("/a/b", "g")])).len(), 2);
        // shortest key's group filters the others
        let got = group(vec![f("/a", "g"), f("/a/b", "h"), f("/a/c", "")]);
        assert_eq!(keys(got), ["/a", "/a/c"]);
        // disagreement at the shortest level: all
        assert_eq!(group(vec![f("/a", "g"), f("/b", "h")]).len(), 2);
        // no group on the shortest: all
        assert_eq!(group(vec![f("/a/b", "g"), f("/a", "")]).len(), 2);
    }
}
