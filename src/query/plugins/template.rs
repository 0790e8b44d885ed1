//! `template` at query time: the first template whose zone, class, type
//! and regex match renders the answer (CoreDNS's decision table):
//!
//! | situation                                              | result            |
//! |--------------------------------------------------------|-------------------|
//! | no template's zone holds the name                      | next plugin       |
//! | zone holds it, class or type differ                    | next template     |
//! | no regex matches, `fallthrough` covers the name        | next template     |
//! | no regex matches, no `fallthrough`                     | SERVFAIL          |
//! | an `expr` is false: as no regex matching               | next template / SERVFAIL |
//! | a `var` or `expr` fails to run                         | SERVFAIL          |
//! | a regex matches, `rcode SERVFAIL`                      | SERVFAIL          |
//! | a regex matches                                        | rendered records, rcode, AA |
//! | a rendered A/AAAA answer is a CNAME                    | its target is looked up too |
//!
//! A template that fails to run or renders something that is not a
//! record answers SERVFAIL and counts in `coredns_template_*_failures_total`.
//!
//! The block's templates are one of the chain's plugins before the
//! cluster ([`Stage::BeforeCluster`]), first of them as CoreDNS orders
//! them. What they answer depends on the client and the request (their
//! expressions), so no cache hit of their block is replayed.

pub mod print;
pub mod setup;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};

use hickory_proto::op::{Query, ResponseCode};
use hickory_proto::rr::{Name, RData, Record, RecordType};

use crate::corefile::expr;
use crate::corefile::gotmpl::{Data, Template};
use crate::corefile::words::Block;
use crate::metrics::catalogue::{counter, Family};
use crate::metrics::exposed::Exposed;
use crate::metrics::Plugin;
use crate::query::metadata::Metadata;
use crate::query::plugins::chain::{Answering, BuildContext, Client, Setup, Stage};
use crate::query::plugins::template::setup::{TemplateConfig, TemplatesConfig};
use crate::query::plugins::verdict::Verdict;
use crate::query::reply::Answer;
use conditions::Judged;

/// `coredns_template_*` of one server block: `(family, labels) → count`.
#[derive(Debug, Default)]
pub struct TemplateStats {
    pub server: String,
    series: Mutex<BTreeMap<(usize, String), u64>>,
}

const LABELS: &[&str] = &["server", "zone", "view", "class", "type"];
const RECORD_LABELS: &[&str] = &["server", "zone", "view", "class", "type", "section", "template"];

/// Its families (CoreDNS's), in the order `count` indexes them and
/// `/metrics` writes them.
pub const FAMILIES: [Family; 3] = [
    counter(
        "coredns_template_matches_total",
        "Counter of template regex matches.",
        LABELS,
    ),
    counter(
        "coredns_template_template_failures_total",
        "Counter of go template failures.",
        RECORD_LABELS,
    ),
    counter(
        "coredns_template_rr_failures_total",
        "Counter of mis-templated RRs.",
        RECORD_LABELS,
    ),
];

impl TemplateStats {
    fn count(&self, family: usize, labels: String) {
        if let Ok(mut s) = self.series.lock() {
            *s.entry((family, labels)).or_default() += 1;
        }
    }
}

/// A regex match's groups: `(text, group name)`.
type Groups = Vec<(Option<String>, Option<String>)>;

/// The zone of template `t` that the question (its name `lower`) is
/// under, when `t` takes the question's class and type.
fn takes<'a>(t: &'a TemplateConfig, lower: &Name, query: &Query) -> Option<&'a Name> {
    let zone = t
        .zones
        .iter()
        .filter(|z| z.zone_of(lower))
        .max_by_key(|z| z.num_labels())?;
    let (qclass, qtype) = (query.query_class(), query.query_type());
    let class_ok = t.class.is_none_or(|c| c == qclass) || qclass == hickory_proto::rr::DNSClass::ANY;
    let type_ok = t.qtype.is_none_or(|ty| ty == qtype) || qtype == RecordType::ANY;
    (class_ok && type_ok).then_some(zone)
}

/// Whether a name none of template `t`'s regexes match goes on to the next plugin
/// (`fallthrough`, for all zones or one `lower` is under).
fn falls_through(t: &TemplateConfig, lower: &Name) -> bool {
    t.fallthrough
        .as_ref()
        .is_some_and(|zones| zones.is_empty() || zones.iter().any(|z| z.zone_of(lower)))
}

/// The first of `t`'s regexes that matches `name` (none: `.*`), with its
/// groups as `(text, name)`.
fn matched(t: &TemplateConfig, name: &str) -> Option<(String, Groups)> {
    if t.regex.is_empty() {
        return Some((".*".to_string(), vec![(Some(name.to_string()), None)]));
    }
    t.regex.iter().find_map(|re| {
        let caps = re.captures(name)?;
        let groups = caps
            .iter()
            .zip(re.capture_names())
            .map(|(m, n)| (m.map(|m| m.as_str().to_string()), n.map(str::to_string)))
            .collect();
        Some((re.as_str().to_string(), groups))
    })
}

/// One server block's templates.
pub struct Templates {
    list: Vec<TemplateConfig>,
    pub stats: Arc<TemplateStats>,
    /// The block's `metadata` (`metadata()`, `.Meta`).
    pub metadata: Option<Arc<Metadata>>,
}

fn escape(label: &str) -> String {
    label.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

impl Templates {
    pub fn new(list: Vec<TemplateConfig>, server: String) -> Templates {
        Templates {
            list,
            stats: Arc::new(TemplateStats {
                server,
                series: Mutex::default(),
            }),
            metadata: None,
        }
    }

    /// Answers `query` from `client` (sent as `wire` says) into `out` when
    /// a template matches.
    pub fn answer(&self, query: &Query, asker: &Client, out: &mut Answer) -> Verdict {
        let (client, wire) = (asker.ip, asker.wire);
        // zone_of ignores case: most queries leave here without allocating.
        if !self
            .list
            .iter()
            .any(|t| t.zones.iter().any(|z| z.zone_of(query.name())))
        {
            return Verdict::Next;
        }
        let (lower, known) = (query.name().to_lowercase(), self.metadata.as_deref());
        let known = known.filter(|m| m.covers(&lower));
        let lookup = |label: &str| known.and_then(|m| m.value(label, &lower, client, asker.subnet));
        let meta: expr::Metadata = expr::Metadata(known.map(|_| &lookup as _));
        let name = lower.to_ascii();
        for t in &self.list {
            let Some(zone) = takes(t, &lower, query) else {
                continue;
            };
            let (qclass, qtype) = (query.query_class(), query.query_type());
            let Some((regex, groups)) = matched(t, &name) else {
                if falls_through(t, &lower) {
                    continue;
                }
                out.error(ResponseCode::ServFail);
                return Verdict::Answered;
            };
            let (class, qtype_name) = shown(t, query);
            let zone = zone.to_ascii();
            let mut data = Data {
                zone: &zone,
                name: &name,
                class: &class,
                qtype: &qtype_name,
                regex: &regex,
                matches: groups.iter().map(|(m, _)| m.clone().unwrap_or_default()).collect(),
                groups: group_map(&groups),
                remote: client.to_string(),
                question: (&name, u16::from(qtype), u16::from(qclass)),
                vars: Vec::new(),
                meta,
            };
            let judged = conditions::judge(t, query, (client, wire), &mut data);
            out.tags.memoizable &= !conditions::uses_client(t);
            match judged {
                Judged::Match => {}
                Judged::NoMatch if falls_through(t, &lower) => continue,
                Judged::NoMatch | Judged::Failed => {
                    out.error(ResponseCode::ServFail);
                    return Verdict::Answered;
                }
            }
            let verdict = self.render(t, &data, query, out);
            out.tags.memoizable &= !conditions::uses_client(t);
            return verdict;
        }
        Verdict::Next
    }

    fn render(&self, t: &TemplateConfig, data: &Data<'_>, query: &Query, out: &mut Answer) -> Verdict {
        let labels = format!(
            "zone=\"{}\",view=\"\",class=\"{}\",type=\"{}\"",
            escape(data.zone),
            data.class,
            data.qtype
        );
        self.stats.count(0, labels.clone());
        if t.rcode == ResponseCode::ServFail {
            out.error(ResponseCode::ServFail);
            return Verdict::Answered;
        }
        out.error(t.rcode);
        out.authoritative = true;
        out.tags.memoizable = ![&t.answer, &t.additional, &t.authority]
            .iter()
            .any(|list| list.iter().any(|x| x.uses_remote));
        for (section, list) in [
            ("answer", &t.answer),
            ("additional", &t.additional),
            ("authority", &t.authority),
        ] {
            for tmpl in list {
                match self.record(tmpl, data, section, &labels) {
                    Some(r) if section == "answer" => out.answers.push(r),
                    Some(r) if section == "additional" => out.additional.push(r),
                    Some(r) => out.authority.push(r),
                    None => {
                        out.error(ResponseCode::ServFail);
                        return Verdict::Answered;
                    }
                }
            }
        }
        out.ede = t.ederror.clone();
        if !matches!(query.query_type(), RecordType::A | RecordType::AAAA) {
            return Verdict::Answered;
        }
        let target = out.answers.iter().find_map(|r| match &r.data {
            RData::CNAME(c) => Some(c.0.clone()),
            _ => None,
        });
        match target {
            Some(target) if !out.answers.iter().any(|r| r.name == target) => Verdict::Chase(target),
            _ => Verdict::Answered,
        }
    }

    /// Runs one template and reads its output as a record (counting failures).
    fn record(&self, tmpl: &Template, data: &Data<'_>, section: &str, labels: &str) -> Option<Record> {
        let failure = |family: usize, why: &str| {
            tracing::debug!(target: "template", "{section} template {:?} for {}: {why}", tmpl.source, data.name);
            let full = format!("{labels},section=\"{section}\",template=\"{}\"", escape(&tmpl.source));
            self.stats.count(family, full);
        };
        let text = match tmpl.execute(data) {
            Ok(t) => t,
            Err(e) => {
                failure(1, &e);
                return None;
            }
        };
        match parse_rr(&text) {
            Ok(r) => Some(r),
            Err(e) => {
                failure(2, &e);
                None
            }
        }
    }
}

/// Named groups and every group by number, as `.Group` holds them.
fn group_map(groups: &[(Option<String>, Option<String>)]) -> Vec<(String, String)> {
    let mut map: Vec<(String, String)> = Vec::new();
    let mut set = |k: String, v: String| match map.iter_mut().find(|(key, _)| *key == k) {
        Some(slot) => slot.1 = v,
        None => map.push((k, v)),
    };
    for (i, (m, _)) in groups.iter().enumerate() {
        set(i.to_string(), m.clone().unwrap_or_default());
    }
    for (m, n) in groups {
        if let Some(n) = n {
            set(n.clone(), m.clone().unwrap_or_default());
        }
    }
    map
}

/// One zone-file record line (origin `.`, default TTL 3600, class IN), as
/// miekg/dns's `NewRR` reads it. hickory's reader has no DNAME: its type
/// word is read as ANAME (one name of data too) and made a DNAME after.
pub fn parse_rr(text: &str) -> Result<Record, String> {
    let text = text.trim();
    let mut words: Vec<&str> = text.split_whitespace().collect();
    // The type word: after the owner, and a TTL and class if given.
    let dname = (1..words.len().min(4)).find(|&i| words[i].eq_ignore_ascii_case("DNAME"));
    let line = match dname {
        Some(i) => {
            words[i] = "ANAME";
            words.join(" ")
        }
        None => text.to_string(),
    };
    let zone = format!("$TTL 3600\n{line}\n");
    let parser = hickory_proto::serialize::txt::Parser::new(zone, None, Some(Name::root()));
    let (_, sets) = parser.parse().map_err(|e| e.to_string())?;
    let mut record = sets
        .into_values()
        .find_map(|set| set.records_without_rrsigs().next().cloned())
        .ok_or_else(|| format!("no record in {text:?}"))?;
    if let (Some(_), RData::ANAME(a)) = (dname, &record.data) {
        record.data = crate::zonefile::dname(&a.0);
    }
    Ok(record)
}

mod conditions;
/// The class and type a template's answers name: the template's own for
/// an ANY question, else the question's.
fn shown(t: &TemplateConfig, query: &Query) -> (String, String) {
    let (qclass, qtype) = (query.query_class(), query.query_type());
    let class = t
        .class
        .filter(|_| qclass == hickory_proto::rr::DNSClass::ANY)
        .unwrap_or(qclass);
    let qtype = t.qtype.filter(|_| qtype == RecordType::ANY).unwrap_or(qtype);
    (class.to_string(), qtype.to_string())
}

#[cfg(test)]
mod tests;

impl Exposed for TemplateStats {
    fn families(&self) -> &'static [Family] {
        &FAMILIES
    }

    fn series(&self, i: usize, s: &mut String) {
        let (Some(family), Ok(series)) = (FAMILIES.get(i), self.series.lock()) else {
            return;
        };
        for ((_, labels), n) in series.range((i, String::new())..(i + 1, String::new())) {
            let _ = writeln!(s, "{}{{server=\"{}\",{labels}}} {n}", family.name, self.server);
        }
    }
}

impl Setup for TemplatesConfig {
    fn name(&self) -> &'static str {
        "template"
    }

    fn build_in(&self, ctx: &BuildContext<'_>) -> Box<dyn Answering> {
        let mut templates = Templates::new(self.0.clone(), ctx.server.to_string());
        templates.metadata = ctx.metadata.cloned();
        Box::new(templates)
    }

    fn print(&self, b: &mut Block) {
        self.0.iter().for_each(|t| print::template(b, t));
    }
}

impl Answering for Templates {
    fn stage(&self) -> Stage {
        Stage::BeforeCluster
    }

    fn plugin(&self) -> Plugin {
        Plugin::Template
    }

    fn answer(&self, query: &Query, client: &Client, out: &mut Answer) -> Verdict {
        Templates::answer(self, query, client, out)
    }

    /// Its expressions read the client and the request.
    fn replayable(&self) -> bool {
        false
    }

    fn exposed(&self) -> Option<Arc<dyn Exposed>> {
        Some(self.stats.clone())
    }
}
