//! `whoami`, CoreDNS's plugin that tells a client how it is seen: a query
//! that reaches it (nothing before it in the block answered) gets NOERROR
//! with AA, an empty answer, and in the additional section the client's
//! address (`QNAME 0 A|AAAA IP`) and the source port and transport it
//! asked from (`_udp.QNAME 0 SRV 0 0 PORT .`, `_tcp.` over TCP), in the
//! question's class. The reply is the client's own: never memoized.
//! `whoami` takes no arguments and runs last, when neither `cache` nor
//! `forward` takes the name.

use std::net::IpAddr;
use std::sync::Arc;

use hickory_proto::op::Query;
use hickory_proto::rr::rdata::{A, AAAA, SRV};
use hickory_proto::rr::{Name, RData, Record};

use crate::corefile::args::Args;
use crate::corefile::blocks::Directive;
use crate::corefile::problem::ConfigError;
use crate::corefile::words::Block;
use crate::metrics::Plugin;
use crate::query::plugins::chain::{Answering, Client, Setup, Stage};
use crate::query::plugins::verdict::Verdict;
use crate::query::reply::Answer;

/// `whoami`, as a server block holds it.
#[derive(Debug)]
pub struct Whoami;

/// Reads `whoami` (no arguments).
pub fn parse(d: &Directive, errors: &mut Vec<ConfigError>) -> Arc<dyn Setup> {
    Args::from(d).count(0, 0, errors);
    Arc::new(Whoami)
}

impl Setup for Whoami {
    fn name(&self) -> &'static str {
        "whoami"
    }

    fn build(&self, _: &str) -> Box<dyn Answering> {
        Box::new(Whoami)
    }

    fn print(&self, b: &mut Block) {
        b.line(1, "whoami");
    }
}

impl Answering for Whoami {
    fn stage(&self) -> Stage {
        Stage::Last
    }

    fn plugin(&self) -> Plugin {
        Plugin::None
    }

    fn answer(&self, query: &Query, client: &Client, out: &mut Answer) -> Verdict {
        answer(query, client.ip, client.wire.port, client.wire.tcp, out);
        Verdict::Answered
    }

    fn passes_address(&self, _: &Name) -> bool {
        true
    }
}

/// Writes the whoami reply to `query` from `client` at `port` into `out`.
fn answer(query: &Query, client: IpAddr, port: u16, tcp: bool, out: &mut Answer) {
    out.clear_records();
    out.authoritative = true;
    let (qname, class) = (query.name(), query.query_class());
    let address = match client {
        IpAddr::V4(ip) => RData::A(A(ip)),
        IpAddr::V6(ip) => match ip.to_ipv4_mapped() {
            Some(v4) => RData::A(A(v4)),
            None => RData::AAAA(AAAA(ip)),
        },
    };
    let mut rr = Record::from_rdata(qname.clone(), 0, address);
    rr.dns_class = class;
    out.additional.push(rr);
    let proto = if tcp { "_tcp" } else { "_udp" };
    if let Ok(owner) = Name::from_ascii(proto).and_then(|p| p.append_name(qname)) {
        let srv = RData::SRV(SRV::new(0, 0, port, Name::root()));
        let mut rr = Record::from_rdata(owner, 0, srv);
        rr.dns_class = class;
        out.additional.push(rr);
    }
}
