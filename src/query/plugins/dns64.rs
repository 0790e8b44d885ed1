//! `dns64`: AAAA records synthesized from A records (RFC 6147) for names
//! with none, so IPv6-only clients reach IPv4 hosts through NAT64.
//!
//! ```text
//!  AAAA IN from an IPv6 client (or any client: allow_ipv4)
//!    └─ answer as usual ─► NXDOMAIN, or AAAA records (unless translate_all): unchanged
//!                        └► otherwise ask A the same way ─► no A record: the AAAA reply unchanged
//!                                                         └► each A becomes an AAAA under the prefix
//! ```
//!
//! Not a plugin of the chain: the block's plugin after the answer
//! ([`AfterAnswer`], built by its setup's [`Setup::after_answer`]). Cluster
//! names, hosts and cache hits are translated on the worker (the router
//! asks A and calls [`Dns64::synthesize`]); a forwarded AAAA question
//! carries its [`Dns64`] in the job's continuation and the forwarding task
//! asks A the same way before replying (`forward::Forwarding::complete`).
//! This file only translates: it asks nothing itself. Its
//! `coredns_dns64_requests_translated_total` is the plugin's
//! [`AfterAnswer::exposed`].
pub mod setup;

use std::fmt::Write as _;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use hickory_proto::op::{Query, ResponseCode};
use hickory_proto::rr::rdata::AAAA;
use hickory_proto::rr::{DNSClass, RData, Record, RecordType};

use crate::corefile::words::Block;
use crate::metrics::catalogue::{Family, DNS64_TRANSLATED};
use crate::metrics::exposed::Exposed;
use crate::metrics::Plugin;
use crate::query::plugins::after::AfterAnswer;
use crate::query::plugins::chain::Setup;
use crate::query::plugins::dns64::setup::Dns64Config;
use crate::query::reply::Answer;

/// The TTL cap when the AAAA reply carried no SOA (RFC 6147 §5.1.7).
const NO_SOA_TTL: u32 = 600;

/// One block's `dns64`, with its `coredns_dns64_requests_translated_total`.
#[derive(Debug)]
pub struct Dns64 {
    pub cfg: Dns64Config,
    pub translated: Arc<Translated>,
}

/// `coredns_dns64_requests_translated_total` of one block.
#[derive(Debug)]
pub struct Translated {
    /// The block's `server` label.
    pub server: String,
    pub count: AtomicU64,
}

impl Dns64 {
    pub fn new(cfg: Dns64Config, server: String) -> Dns64 {
        Dns64 {
            cfg,
            translated: Arc::new(Translated {
                server,
                count: AtomicU64::new(0),
            }),
        }
    }

    /// Whether the question is one DNS64 may answer: AAAA in class IN.
    pub fn question(query: &Query) -> bool {
        query.query_type() == RecordType::AAAA && query.query_class() == DNSClass::IN
    }

    /// Whether `client` gets synthesized answers (IPv6 clients, or all with `allow_ipv4`).
    pub fn serves(&self, client: IpAddr) -> bool {
        self.cfg.allow_ipv4 || client.is_ipv6()
    }

    /// Whether the reply to an AAAA question calls for synthesis: not
    /// NXDOMAIN, and no usable AAAA record (IPv4-mapped ones do not count,
    /// RFC 6147 §5.1.4) unless `translate_all`. Other errors count as an
    /// empty answer (§5.1.2).
    pub fn wanted(&self, aaaa: &Answer) -> bool {
        if aaaa.rcode == ResponseCode::NXDomain {
            return false;
        }
        self.cfg.translate_all
            || !aaaa
                .answers
                .iter()
                .any(|r| matches!(r.data, RData::AAAA(a) if !is_mapped(a.0)))
    }

    /// Replaces `out` (the reply to AAAA) by the translation of `a` (the
    /// reply to A for the same name): A records become AAAA under the
    /// prefix (TTL at most the AAAA reply's SOA TTL, else 600), other
    /// records and the authority and additional sections pass unchanged.
    /// Without any A record `out` is left as it was; returns whether it
    /// was translated.
    pub fn synthesize(&self, out: &mut Answer, a: &Answer) -> bool {
        if !a.answers.iter().any(|r| matches!(r.data, RData::A(_))) {
            return false;
        }
        let cap = out
            .authority
            .iter()
            .find(|r| r.record_type() == RecordType::SOA)
            .map_or(NO_SOA_TTL, |soa| soa.ttl);
        let (log, zone, nsid) = (out.tags.log, out.tags.zone, out.tags.nsid.take());
        out.clear(); // not memoizable: every translated reply is counted
        (out.tags.log, out.tags.zone, out.tags.plugin, out.tags.nsid) = (log, zone, Plugin::Dns64, nsid);
        out.recursion_available = a.recursion_available;
        out.truncated = a.truncated;
        for r in &a.answers {
            match &r.data {
                RData::A(v4) => {
                    let data = RData::AAAA(AAAA(self.translate(v4.0)));
                    out.answers
                        .push(Record::from_rdata(r.name.clone(), r.ttl.min(cap), data));
                }
                _ => out.answers.push(r.clone()),
            }
        }
        out.authority.extend(a.authority.iter().cloned());
        out.additional.extend(a.additional.iter().cloned());
        self.translated.count.fetch_add(1, Ordering::Relaxed);
        true
    }

    /// RFC 6052 §2.2: the IPv4 address embedded under the prefix, its bits
    /// 64..71 (the "u" octet) left zero.
    pub fn translate(&self, v4: Ipv4Addr) -> Ipv6Addr {
        let mut bytes = self.cfg.prefix.octets();
        let start = usize::from(self.cfg.length / 8);
        let mut at = start;
        for octet in v4.octets() {
            if at == 8 {
                at += 1; // skip the u octet
            }
            if let Some(b) = bytes.get_mut(at) {
                *b = octet;
            }
            at += 1;
        }
        Ipv6Addr::from(bytes)
    }
}

/// `::ffff:0:0/96`.
fn is_mapped(addr: Ipv6Addr) -> bool {
    addr.to_ipv4_mapped().is_some()
}

impl AfterAnswer for Dns64 {
    fn takes(&self, query: &Query) -> bool {
        Dns64::question(query)
    }

    fn serves(&self, client: IpAddr) -> bool {
        Dns64::serves(self, client)
    }

    /// IPv4 clients get no translation unless `allow_ipv4`.
    fn reads_client(&self) -> bool {
        !self.cfg.allow_ipv4
    }

    fn wanted(&self, answer: &Answer) -> bool {
        Dns64::wanted(self, answer)
    }

    /// A for the AAAA question's name.
    fn second(&self, query: &Query) -> Query {
        Query::query(query.name().clone(), RecordType::A)
    }

    fn amend(&self, out: &mut Answer, second: &Answer) -> bool {
        self.synthesize(out, second)
    }

    fn exposed(&self) -> Option<Arc<dyn Exposed>> {
        Some(self.translated.clone())
    }
}

/// `coredns_dns64_requests_translated_total{server}` (blocks sharing a
/// `server` label are summed into one series where `/metrics` renders it).
impl Exposed for Translated {
    fn families(&self) -> &'static [Family] {
        &[DNS64_TRANSLATED]
    }

    fn series(&self, i: usize, s: &mut String) {
        if i == 0 {
            let n = self.count.load(Ordering::Relaxed);
            let _ = writeln!(s, "{}{{server=\"{}\"}} {n}", DNS64_TRANSLATED.name, self.server);
        }
    }
}

impl Setup for Dns64Config {
    fn name(&self) -> &'static str {
        "dns64"
    }

    fn print(&self, b: &mut Block) {
        let mut options = vec![format!("prefix {}/{}", self.prefix, self.length)];
        options.extend(self.translate_all.then(|| "translate_all".to_string()));
        options.extend(self.allow_ipv4.then(|| "allow_ipv4".to_string()));
        b.directive("dns64".into(), &options);
    }

    fn after_answer(&self, server: &str) -> Option<Arc<dyn AfterAnswer>> {
        Some(Arc::new(Dns64::new(self.clone(), server.to_string())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(prefix: &str, length: u8) -> Dns64 {
        let cfg = Dns64Config {
            prefix: prefix.parse().expect("prefix"),
            length,
            translate_all: false,
            allow_ipv4: false,
        };
        Dns64::new(cfg, "dns://:53".into())
    }

    #[test]
    fn rfc_6052_examples_for_every_prefix_length() {
        // RFC 6052 §2.4, IPv4 address 192.0.2.33.
        let v4 = Ipv4Addr::new(192, 0, 2, 33);
        let cases = [
            ("2001:db8::", 32, "2001:db8:c000:221::"),
            ("2001:db8:100::", 40, "2001:db8:1c0:2:21::"),
            ("2001:db8:122::", 48, "2001:db8:122:c000:2:2100::"),
            ("2001:db8:122:300::", 56, "2001:db8:122:3c0:0:221::"),
            ("2001:db8:122:344::", 64, "2001:db8:122:344:c0:2:2100:0"),
            ("2001:db8:122:344::", 96, "2001:db8:122:344::192.0.2.33"),
            ("64:ff9b::", 96, "64:ff9b::192.0.2.33"),
        ];
        for (prefix, length, want) in cases {
            let got = with(prefix, length).translate(v4);
            assert_eq!(got, want.parse::<Ipv6Addr>().expect("want"), "{prefix}/{length}");
        }
    }

    #[test]
    fn wanted_only_without_usable_aaaa_and_not_for_nxdomain() {
        let d = with("64:ff9b::", 96);
        let owner = hickory_proto::rr::Name::from_ascii("x.example.").expect("name");
        let mut aaaa = Answer::default();
        assert!(d.wanted(&aaaa), "NODATA");
        aaaa.rcode = ResponseCode::ServFail;
        assert!(d.wanted(&aaaa), "other errors count as empty");
        aaaa.rcode = ResponseCode::NXDomain;
        assert!(!d.wanted(&aaaa));
        aaaa.rcode = ResponseCode::NoError;
        let mapped = RData::AAAA(AAAA("::ffff:192.0.2.1".parse().expect("v6")));
        aaaa.answers.push(Record::from_rdata(owner.clone(), 60, mapped));
        assert!(d.wanted(&aaaa), "an IPv4-mapped AAAA does not count");
        aaaa.answers.push(Record::from_rdata(
            owner,
            60,
            RData::AAAA(AAAA("2001:db8::1".parse().expect("v6"))),
        ));
        assert!(!d.wanted(&aaaa));
        let all = Dns64::new(
            Dns64Config {
                translate_all: true,
                ..d.cfg.clone()
            },
            String::new(),
        );
        assert!(all.wanted(&aaaa));
    }

    #[test]
    fn blocks_sharing_a_server_label_count_in_one_series() {
        let (a, b, other) = (with("64:ff9b::", 96), with("64:ff9b::", 96), with("64:ff9b::", 96));
        let other = Dns64::new(other.cfg.clone(), "dns://:54".into());
        a.translated.count.store(2, Ordering::Relaxed);
        b.translated.count.store(3, Ordering::Relaxed);
        other.translated.count.store(1, Ordering::Relaxed);
        let all: Vec<Arc<dyn Exposed>> = [&a, &other, &b].iter().filter_map(|d| d.exposed()).collect();
        let mut page = String::new();
        crate::metrics::exposed::render(&all, &mut page);
        let series: Vec<&str> = page.lines().filter(|l| l.starts_with(DNS64_TRANSLATED.name)).collect();
        assert_eq!(
            series,
            [
                "coredns_dns64_requests_translated_total{server=\"dns://:53\"} 5",
                "coredns_dns64_requests_translated_total{server=\"dns://:54\"} 1"
            ]
        );
    }
}
