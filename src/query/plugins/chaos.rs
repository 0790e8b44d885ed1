//! `chaos`: TXT questions of class CH about the server itself.
//!
//! | name                             | answer                                   |
//! |----------------------------------|------------------------------------------|
//! | `version.bind`, `version.server` | the configured version                   |
//! | `authors.bind`                   | one TXT record per author                |
//! | `hostname.bind`, `id.server`     | this host's name                         |
//!
//! Anything else (another name, type or class) passes on; TTL 0, as CoreDNS.
pub mod setup;

use hickory_proto::op::Query;
use hickory_proto::rr::{DNSClass, Name, RecordType};

use crate::corefile::words::{quote, Block};
use crate::metrics::Plugin;
use crate::query::plugins::chain::{Answering, Client, Setup, Stage};
use crate::query::plugins::chaos::setup::ChaosConfig;
use crate::query::plugins::verdict::Verdict;
use crate::query::reply::{self, Answer};

/// A TXT string holds at most 255 bytes.
const TXT_MAX: usize = 255;

/// The `chaos` plugin of one server block.
pub struct Chaos {
    cfg: ChaosConfig,
    hostname: String,
}

impl Chaos {
    pub fn new(cfg: ChaosConfig) -> Chaos {
        let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .ok()
            .map(|h| h.trim().to_string())
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "localhost".to_string());
        Chaos { cfg, hostname }
    }

    /// Answers `qname` if it is one of the names above, asked as CH TXT.
    pub fn answer(&self, qname: &Name, qtype: RecordType, qclass: DNSClass, out: &mut Answer) -> Verdict {
        if qclass != DNSClass::CH || qtype != RecordType::TXT {
            return Verdict::Next;
        }
        let texts: Vec<&str> = match qname.to_lowercase().to_ascii().as_str() {
            "version.bind." | "version.server." => vec![self.cfg.version.as_str()],
            "authors.bind." => self.cfg.authors.iter().map(String::as_str).collect(),
            "hostname.bind." | "id.server." => vec![self.hostname.as_str()],
            _ => return Verdict::Next,
        };
        for text in texts {
            let mut record = reply::txt(qname, 0, trim(text));
            record.dns_class = DNSClass::CH;
            out.answers.push(record);
        }
        Verdict::Answered
    }
}

impl Setup for ChaosConfig {
    fn name(&self) -> &'static str {
        "chaos"
    }

    fn build(&self, _: &str) -> Box<dyn Answering> {
        Box::new(Chaos::new(self.clone()))
    }

    fn print(&self, b: &mut Block) {
        let mut words = vec![quote(&self.version)];
        words.extend(self.authors.iter().map(|a| quote(a)));
        b.line(1, format_args!("chaos {}", words.join(" ")));
    }
}

impl Answering for Chaos {
    fn stage(&self) -> Stage {
        Stage::Early
    }

    fn plugin(&self) -> Plugin {
        Plugin::Chaos
    }

    fn answer(&self, query: &Query, _: &Client, out: &mut Answer) -> Verdict {
        Chaos::answer(self, query.name(), query.query_type(), query.query_class(), out)
    }

    /// Class CH only.
    fn passes_address(&self, _: &Name) -> bool {
        true
    }
}

/// `text` cut to what one TXT string holds, on a character boundary.
fn trim(text: &str) -> &str {
    let mut end = text.len().min(TXT_MAX);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(chaos: &Chaos, name: &str, qtype: RecordType, class: DNSClass) -> (Verdict, Vec<String>) {
        let mut out = Answer::default();
        let got = chaos.answer(&Name::from_ascii(name).expect("name"), qtype, class, &mut out);
        let texts = out.answers.iter().map(|r| r.data.to_string()).collect();
        (got, texts)
    }

    #[test]
    fn names_types_and_classes() {
        let chaos = Chaos::new(ChaosConfig {
            version: "v1".into(),
            authors: vec!["a@x".into(), "b@y".into()],
        });
        assert_eq!(
            ask(&chaos, "version.bind.", RecordType::TXT, DNSClass::CH),
            (Verdict::Answered, vec!["v1".to_string()])
        );
        assert_eq!(ask(&chaos, "VERSION.server.", RecordType::TXT, DNSClass::CH).1, ["v1"]);
        assert_eq!(
            ask(&chaos, "authors.bind.", RecordType::TXT, DNSClass::CH).1,
            ["a@x", "b@y"]
        );
        assert_eq!(ask(&chaos, "id.server.", RecordType::TXT, DNSClass::CH).1.len(), 1);
        assert_eq!(
            ask(&chaos, "version.bind.", RecordType::TXT, DNSClass::IN).0,
            Verdict::Next
        );
        assert_eq!(
            ask(&chaos, "version.bind.", RecordType::A, DNSClass::CH).0,
            Verdict::Next
        );
        assert_eq!(
            ask(&chaos, "other.bind.", RecordType::TXT, DNSClass::CH).0,
            Verdict::Next
        );
        assert_eq!(trim(&"é".repeat(200)).len(), 254);
    }
}
