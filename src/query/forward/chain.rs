//! Whether an upstream's NOERROR answer answers its question, as CoreDNS's
//! cache decides before storing it (RFC 1034 3.6.2, RFC 2308 2.2): for a
//! type other than CNAME and ANY, a record of the queried type must sit at
//! the end of the CNAME chain that starts at the question name. An owner
//! with two distinct CNAME targets or a loop has no end, so answers
//! nothing. A non-answer is cached as NODATA when an SOA bounds it, and not
//! at all without one (an incomplete recursion from a forwarder).

use hickory_proto::op::Query;
use hickory_proto::rr::{DNSClass, Name, RData, Record, RecordType};

/// Whether `answers` (non-empty, from a NOERROR reply) answer `query`.
pub fn answers_question(query: &Query, answers: &[Record]) -> bool {
    let class = query.query_class();
    let in_class = |r: &Record| class == DNSClass::ANY || r.dns_class == class;
    let name = query.name();
    match query.query_type() {
        RecordType::ANY => answers.iter().any(|r| in_class(r) && r.name == *name),
        RecordType::CNAME => matches!(target(answers, name, &in_class), Some(Some(_))),
        // no CNAME at all (most answers): the chain ends where it starts
        qtype if !answers.iter().any(|r| r.record_type() == RecordType::CNAME) => answers
            .iter()
            .any(|r| r.record_type() == qtype && in_class(r) && r.name == *name),
        qtype => match terminal(answers, name, &in_class) {
            Some(end) => answers
                .iter()
                .any(|r| r.record_type() == qtype && in_class(r) && r.name == end),
            None => false,
        },
    }
}

/// The end of the CNAME chain from `name`; `None` for a loop or an owner
/// with two distinct targets.
fn terminal(answers: &[Record], name: &Name, in_class: &dyn Fn(&Record) -> bool) -> Option<Name> {
    let mut seen: Vec<Name> = Vec::new();
    let mut at = name.clone();
    // A chain longer than the answer section has revisited an owner.
    for _ in 0..=answers.len() {
        if seen.contains(&at) {
            return None;
        }
        match target(answers, &at, in_class)? {
            None => return Some(at),
            Some(next) => {
                seen.push(at);
                at = next;
            }
        }
    }
    None
}

/// The one CNAME target of `owner`: `Some(None)` when it has none, `None`
/// when it has two distinct ones (duplicates of one target are one).
fn target(answers: &[Record], owner: &Name, in_class: &dyn Fn(&Record) -> bool) -> Option<Option<Name>> {
    let mut found: Option<&Name> = None;
    for r in answers.iter().filter(|r| r.name == *owner && in_class(r)) {
        let RData::CNAME(c) = &r.data else { continue };
        match found {
            Some(t) if *t != c.0 => return None,
            _ => found = Some(&c.0),
        }
    }
    Some(found.cloned())
}
