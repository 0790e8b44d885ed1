//! The DNS-01 challenges of `tls { acme }`, answered on every DNS listener
//! of the process: while an ACME order waits for validation, the ACME
//! server asks `_acme-challenge.DOMAIN TXT` and gets the key
//! authorization's digest ([`present`]), authoritatively, TTL 0. Other
//! questions pass. The challenges are the process's own (CoreDNS's
//! solver is one per instance too), so a reload that rebuilds every
//! router keeps them. The plugin is in every block's chain only when some
//! block of the Corefile has `tls { acme }` (`config` adds it): a
//! Corefile without `acme` pays nothing.

use std::sync::RwLock;

use hickory_proto::op::Query;
use hickory_proto::rr::{DNSClass, Name, RecordType};

use crate::corefile::words::Block;
use crate::metrics::Plugin;
use crate::query::plugins::chain::{Answering, Client, Setup, Stage};
use crate::query::plugins::verdict::Verdict;
use crate::query::reply::{self, Answer};

/// The first label of every DNS-01 challenge name.
const LABEL: &[u8] = b"_acme-challenge";

/// The challenges being validated: (name, TXT value), one entry per
/// presentation (a name may carry several values at once: a wildcard and
/// its base name share one).
static PRESENTED: RwLock<Vec<(Name, String)>> = RwLock::new(Vec::new());

/// Answers `name`'s TXT queries with `value` until [`clean_up`].
pub fn present(name: &Name, value: &str) {
    if let Ok(mut all) = PRESENTED.write() {
        all.push((name.to_lowercase(), value.to_string()));
    }
}

/// Stops answering one presentation of `value` at `name`.
pub fn clean_up(name: &Name, value: &str) {
    let name = name.to_lowercase();
    if let Ok(mut all) = PRESENTED.write() {
        if let Some(i) = all.iter().position(|(n, v)| *n == name && v == value) {
            all.remove(i);
        }
    }
}

/// The values presented at `name`, sorted.
fn values(name: &Name) -> Vec<String> {
    let name = name.to_lowercase();
    let mut found: Vec<String> = match PRESENTED.read() {
        Ok(all) => all.iter().filter(|(n, _)| *n == name).map(|(_, v)| v.clone()).collect(),
        Err(_) => Vec::new(),
    };
    found.sort();
    found.dedup();
    found
}

/// The challenge answerer, as every server block holds it when the
/// Corefile has `tls { acme }` (printed by `tls` itself, not here).
#[derive(Debug)]
pub struct Challenges;

impl Setup for Challenges {
    fn name(&self) -> &'static str {
        "tls"
    }

    fn build(&self, _: &str) -> Box<dyn Answering> {
        Box::new(Challenges)
    }

    fn print(&self, _: &mut Block) {}
}

impl Answering for Challenges {
    fn stage(&self) -> Stage {
        Stage::Early
    }

    fn plugin(&self) -> Plugin {
        Plugin::Tls
    }

    fn answer(&self, query: &Query, _: &Client, out: &mut Answer) -> Verdict {
        if !challenge(query) {
            return Verdict::Next;
        }
        let qname = query.name();
        let found = values(qname);
        if found.is_empty() {
            return Verdict::Next;
        }
        out.clear_records();
        out.authoritative = true;
        out.answers.extend(found.iter().map(|v| reply::txt(qname, 0, v)));
        Verdict::Answered
    }

    fn passes_address(&self, _: &Name) -> bool {
        true
    }

    /// A challenge name's TXT: a cached answer from before the challenge
    /// was presented must not be replayed.
    fn may_answer_later(&self, query: &Query) -> bool {
        challenge(query)
    }
}

/// Whether `query` asks for a DNS-01 challenge's TXT record.
fn challenge(query: &Query) -> bool {
    let first = query.name().iter().next();
    first.is_some_and(|l| l.eq_ignore_ascii_case(LABEL))
        && query.query_type() == RecordType::TXT
        && query.query_class() == DNSClass::IN
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corefile::expr::Wire;
    use std::str::FromStr;

    fn ask(name: &str, qtype: RecordType) -> (Verdict, Vec<String>) {
        let query = Query::query(Name::from_str(name).expect("name"), qtype);
        let client = Client {
            ip: std::net::Ipv4Addr::LOCALHOST.into(),
            wire: Wire::default(),
            subnet: None,
        };
        let mut out = Answer::default();
        let v = Challenges.answer(&query, &client, &mut out);
        (v, out.answers.iter().map(|r| r.data.to_string()).collect())
    }

    #[test]
    fn presented_values_answer_until_cleaned_up() {
        let name = Name::from_str("_acme-challenge.unit-test.example.").expect("name");
        assert!(matches!(
            ask("_acme-challenge.unit-test.example.", RecordType::TXT).0,
            Verdict::Next
        ));
        present(&name, "b-value");
        present(&name, "a-value");
        present(&name, "a-value");
        let (v, texts) = ask("_ACME-Challenge.Unit-Test.example.", RecordType::TXT);
        assert!(matches!(v, Verdict::Answered));
        assert_eq!(texts, ["a-value", "b-value"]);
        assert!(matches!(
            ask("_acme-challenge.unit-test.example.", RecordType::A).0,
            Verdict::Next
        ));
        assert!(matches!(ask("unit-test.example.", RecordType::TXT).0, Verdict::Next));
        clean_up(&name, "a-value");
        assert_eq!(ask("_acme-challenge.unit-test.example.", RecordType::TXT).1.len(), 2);
        clean_up(&name, "a-value");
        clean_up(&name, "b-value");
        assert!(matches!(
            ask("_acme-challenge.unit-test.example.", RecordType::TXT).0,
            Verdict::Next
        ));
    }
}
