//! `rewrite` at query time: the question is changed before the plugins
//! see it ([`Rewrite::apply`]), and the answer is changed back before the
//! client sees it ([`Revert::answer`]); the client's own question is
//! always the one echoed. EDNS0 rules change only what a forwarded query
//! carries upstream ([`upstream_request`]).
//!
//! ```text
//!  question ─► rules in order (stop: the first that applies ends the list)
//!              ├─ name/type/class: a new question, and how to undo it
//!              ├─ ttl, cname: kept for the reply
//!              └─ edns0: kept for the upstream request
//!  reply ◄─ cname targets re-resolved ◄─ names, values and TTLs reverted
//! ```

pub mod print;
pub mod setup;

use std::net::SocketAddr;

use hickory_proto::op::{Edns, Message, Query, ResponseCode};

use hickory_proto::rr::{Name, RData, Record, RecordType};

use crate::metrics::Transport;
use crate::query::metadata::Metadata;
use crate::query::plugins::rewrite::setup::rule::{EdnsAction, EdnsRule, Matcher, RewriteRule, RuleKind};
use crate::query::reply::Answer;

mod edns_option;

/// One server block's `rewrite` rules.
#[derive(Debug, Clone)]
pub struct Rewrite {
    pub rules: Vec<RewriteRule>,
}

impl From<Vec<RewriteRule>> for Rewrite {
    fn from(rules: Vec<RewriteRule>) -> Self {
        Rewrite { rules }
    }
}

/// How a string in the reply is mapped back.
#[derive(Debug, Clone)]
enum Mapping {
    /// `answer name|value FROM TO`.
    Regex(regex::Regex, String),
    /// The rewritten name (and names below it) back to the asked one.
    Remap { from: String, to: String },
    /// A suffix back to the asked suffix.
    Suffix { from: String, to: String },
}

/// What to do to the reply.
#[derive(Debug, Clone)]
enum Undo {
    Name(Mapping),
    Value(Mapping),
    Ttl(u32, u32),
    Cname(Matcher, String),
    Rcode(ResponseCode, ResponseCode),
}

/// What the rules changed, to be undone on the reply (and the EDNS0
/// options a forwarded request gets).
#[derive(Debug, Clone, Default)]
pub struct Revert {
    undo: Vec<Undo>,
    /// Each edns0 rule with its `stop`.
    pub edns: Vec<(EdnsAction, EdnsRule, bool)>,
}

/// `name` rewritten by `matcher` and `to` (groups `{N}` filled in), or
/// `None` when it does not match. `name` is lowercase and fully qualified.
pub fn rewrite_name(matcher: &Matcher, to: &str, name: &str) -> Option<String> {
    match matcher {
        Matcher::Exact(from) => (name == from).then(|| to.to_string()),
        Matcher::Prefix(p) => name.strip_prefix(p.as_str()).map(|rest| format!("{to}{rest}")),
        Matcher::Suffix(s) => name.strip_suffix(s.as_str()).map(|rest| format!("{rest}{to}")),
        Matcher::Substring(s) => name.contains(s.as_str()).then(|| name.replace(s.as_str(), to)),
        Matcher::Regex(re) => re.captures(name).map(|caps| fill_groups(to, &caps)),
    }
}

fn fill_groups(template: &str, caps: &regex::Captures<'_>) -> String {
    let mut out = template.to_string();
    for (i, m) in caps.iter().enumerate() {
        out = out.replace(&format!("{{{i}}}"), m.map_or("", |m| m.as_str()));
    }
    out
}

fn matches(matcher: &Matcher, name: &str) -> bool {
    rewrite_name(matcher, "", name).is_some()
}

impl Mapping {
    fn apply(&self, src: &str) -> Option<String> {
        match self {
            Mapping::Regex(re, to) => re.captures(src).map(|caps| fill_groups(to, &caps)),
            Mapping::Remap { from, to } if src == from => Some(to.clone()),
            Mapping::Remap { from, to } => src
                .strip_suffix(from.as_str())
                .filter(|head| head.ends_with('.'))
                .map(|head| format!("{head}{to}")),
            Mapping::Suffix { from, to } => src.strip_suffix(from.as_str()).map(|head| format!("{head}{to}")),
        }
    }
}

/// Why the question could not be rewritten (CoreDNS answers SERVFAIL).
#[derive(Debug, thiserror::Error)]
#[error("invalid name after rewrite: {0}")]
pub struct InvalidName(pub String);

impl Rewrite {
    /// Applies the rules to `query`: the question to answer instead and
    /// what to undo, or `None` when no rule applied.
    pub fn apply(&self, query: &Query) -> Result<Option<(Query, Revert)>, InvalidName> {
        let mut q = query.clone();
        let mut revert = Revert::default();
        let mut applied = false;
        let mut name = q.name().to_lowercase().to_ascii();
        for rule in &self.rules {
            let done = match &rule.kind {
                RuleKind::Name {
                    matcher,
                    to,
                    auto,
                    answers,
                } => match rewrite_name(matcher, to, &name) {
                    Some(new) => {
                        let parsed = Name::from_ascii(&new).map_err(|_| InvalidName(new.clone()))?;
                        q.set_name(parsed);
                        revert.name_undo(matcher, to, *auto, answers, &name, &new);
                        name = new;
                        true
                    }
                    None => false,
                },
                RuleKind::Type { from, to } if q.query_type() == *from => {
                    q.set_query_type(*to);
                    true
                }
                RuleKind::Class { from, to } if q.query_class() == *from => {
                    q.set_query_class(*to);
                    true
                }
                RuleKind::Ttl { matcher, min, max } if matches(matcher, &name) => {
                    revert.undo.push(Undo::Ttl(*min, *max));
                    true
                }
                RuleKind::Rcode { matcher, from, to } if matches(matcher, &name) => {
                    revert.undo.push(Undo::Rcode(*from, *to));
                    true
                }
                RuleKind::Cname { matcher, to } => {
                    revert.undo.push(Undo::Cname(matcher.clone(), to.clone()));
                    true
                }
                RuleKind::Edns0 { action, option, .. } => {
                    revert.edns.push((*action, option.clone(), rule.stop));
                    true
                }
                _ => false,
            };
            applied |= done;
            if done && rule.stop && !undecided(rule, rest(&self.rules, rule)) {
                break;
            }
        }
        Ok(applied.then_some((q, revert)))
    }
}

/// The rules after `rule` in `rules`.
fn rest<'a>(rules: &'a [RewriteRule], rule: &RewriteRule) -> &'a [RewriteRule] {
    let at = rules
        .iter()
        .position(|r| std::ptr::eq(r, rule))
        .map_or(rules.len(), |i| i + 1);
    &rules[at..]
}

/// Whether `stop` after `rule` waits for the request: an edns0 replace,
/// append or unset applies only when the request holds (or lacks) the
/// option, which [`upstream_request`] sees; when only edns0 rules follow,
/// they are kept and it decides (as CoreDNS: a rule that changed nothing
/// does not stop the list).
fn undecided(rule: &RewriteRule, after: &[RewriteRule]) -> bool {
    matches!(&rule.kind, RuleKind::Edns0 { action, .. } if *action != EdnsAction::Set)
        && after.iter().all(|r| matches!(r.kind, RuleKind::Edns0 { .. }))
}

impl Revert {
    fn name_undo(
        &mut self,
        matcher: &Matcher,
        to: &str,
        auto: bool,
        answers: &[crate::query::plugins::rewrite::setup::rule::AnswerRule],
        asked: &str,
        rewritten: &str,
    ) {
        if auto {
            let mapping = match matcher {
                Matcher::Suffix(suffix) => Mapping::Suffix {
                    from: to.to_string(),
                    to: suffix.clone(),
                },
                _ => Mapping::Remap {
                    from: rewritten.to_string(),
                    to: asked.to_string(),
                },
            };
            self.undo.push(Undo::Name(mapping.clone()));
            self.undo.push(Undo::Value(mapping));
        }
        for a in answers {
            let mapping = Mapping::Regex(a.pattern.clone(), a.to.clone());
            self.undo.push(if a.value {
                Undo::Value(mapping)
            } else {
                Undo::Name(mapping)
            });
        }
    }

    /// Maps names, values and TTLs of every record back, the rules
    /// undone last first (as CoreDNS does).
    pub fn answer(&self, out: &mut Answer) {
        for undo in self.undo.iter().rev() {
            if let Undo::Rcode(from, to) = undo {
                if out.rcode == *from {
                    out.rcode = *to;
                }
            }
        }
        if self.undo.iter().all(|u| matches!(u, Undo::Cname(..) | Undo::Rcode(..))) {
            return;
        }
        for r in out
            .answers
            .iter_mut()
            .chain(&mut out.authority)
            .chain(&mut out.additional)
        {
            self.record(r);
        }
    }

    fn record(&self, r: &mut Record) {
        for undo in self.undo.iter().rev() {
            match undo {
                Undo::Name(m) => {
                    if let Some(n) = m
                        .apply(&r.name.to_lowercase().to_ascii())
                        .and_then(|n| Name::from_ascii(n).ok())
                    {
                        r.name = n;
                    }
                }
                Undo::Value(m) if r.record_type() == RecordType::DNAME => {
                    // Kept as opaque data (hickory has no DNAME): decoded, mapped, encoded.
                    if let Some(n) = crate::zonefile::dname_target(r)
                        .and_then(|t| m.apply(&t.to_lowercase().to_ascii()))
                        .and_then(|n| Name::from_ascii(n).ok())
                    {
                        r.data = crate::zonefile::dname(&n);
                    }
                }
                Undo::Value(m) => {
                    if let Some(target) = value_mut(&mut r.data) {
                        if let Some(n) = m
                            .apply(&target.to_lowercase().to_ascii())
                            .and_then(|n| Name::from_ascii(n).ok())
                        {
                            *target = n;
                        }
                    }
                }
                Undo::Ttl(min, max) => r.ttl = r.ttl.clamp(*min, *max),
                Undo::Cname(..) | Undo::Rcode(..) => {}
            }
        }
    }

    /// `cname` rules: rewrites the targets of the CNAMEs in `out` and keeps
    /// the CNAMEs up to the first rewritten one (as CoreDNS: the chain
    /// after it is replaced); returns the new target whose records must follow.
    pub fn cname(&self, out: &mut Answer) -> Option<Name> {
        let mut target = None;
        let mut cut = usize::MAX;
        for undo in &self.undo {
            let Undo::Cname(matcher, to) = undo else { continue };
            for (i, r) in out.answers.iter_mut().enumerate() {
                let RData::CNAME(c) = &mut r.data else { continue };
                let old = c.0.to_lowercase().to_ascii();
                if let Some(new) = rewrite_name(matcher, to, &old).and_then(|n| Name::from_ascii(n).ok()) {
                    c.0 = new.clone();
                    target = Some(new);
                    cut = cut.min(i);
                }
            }
        }
        if target.is_some() {
            out.answers.truncate(cut.saturating_add(1));
            out.answers.retain(|r| matches!(r.data, RData::CNAME(_)));
        }
        target
    }
}

/// The name a record points to, which `answer value` rewrites (CoreDNS's
/// list: CNAME, DNAME, NS, MX, SRV, NAPTR, SOA's MNAME; DNAME, kept as
/// opaque data, is mapped in [`Revert::record`]).
fn value_mut(data: &mut RData) -> Option<&mut Name> {
    match data {
        RData::CNAME(c) => Some(&mut c.0),
        RData::NS(n) => Some(&mut n.0),
        RData::MX(mx) => Some(&mut mx.exchange),
        RData::SRV(srv) => Some(&mut srv.target),
        RData::NAPTR(n) => Some(&mut n.replacement),
        RData::SOA(soa) => Some(&mut soa.mname),
        _ => None,
    }
}

/// The message a rewritten query sends upstream: the client's request
/// with `query` as its question and `revert`'s EDNS0 rules applied
/// (`local`: the listener's address the query came in on, for
/// `{server_ip}` and `{server_port}`; unknown, those options are not set;
/// `metadata`: the block's, for `{PLUGIN/LABEL}`).
pub fn upstream_request(
    bytes: &[u8],
    query: &Query,
    (revert, metadata): (Option<&Revert>, Option<&Metadata>),
    peer: SocketAddr,
    local: Option<SocketAddr>,
    t: Transport,
) -> Vec<u8> {
    let Ok(mut m) = Message::from_vec(bytes) else {
        return bytes.to_vec();
    };
    // the labels are the name the client asked's, as CoreDNS's metadata
    // runs before rewrite; geoip's from the request's ECS address
    let asked = m
        .queries
        .first()
        .map_or_else(|| query.name().clone(), |q| q.name().clone());
    let subnet = metadata
        .filter(|m| m.reads_subnet())
        .and_then(|_| crate::query::metadata::subnet_of(&m));
    let metadata = metadata.map(|m| (m, &asked, subnet));
    m.queries = vec![query.clone()];
    for (action, rule, stop) in revert.map_or(&[][..], |r| &r.edns[..]) {
        let edns = m.edns.get_or_insert_with(|| {
            let mut e = Edns::new();
            e.set_max_payload(crate::query::reply::echo::OUR_PAYLOAD);
            e
        });
        let Some((code, option)) = edns_option::option_for(rule, query, (peer, local), t, metadata) else {
            continue;
        };
        let opts = &mut edns.options_mut().options;
        let present = opts.iter().position(|(c, _)| *c == code);
        let changed = match (present, action) {
            (Some(_), EdnsAction::Unset) => {
                opts.retain(|(c, _)| *c != code);
                true
            }
            (Some(i), EdnsAction::Set | EdnsAction::Replace) => {
                opts[i].1 = option;
                true
            }
            (None, EdnsAction::Set | EdnsAction::Append) => {
                opts.push((code, option));
                true
            }
            _ => false,
        };
        if changed && *stop {
            break;
        }
    }
    m.to_vec().unwrap_or_else(|_| bytes.to_vec())
}

#[cfg(test)]
mod tests;
