//! What a served query reports, kept beside its reply's bytes: the
//! metrics (`coredns_dns_*`), the query log and `dnstap` are told of it
//! when the reply is sent, and a replay (memo, cache hit) reports the
//! summary of the reply it copies.

use hickory_proto::op::{Query, ResponseCode};

use super::answer::Answer;
use crate::metrics::{Expansion, Plugin};
use crate::query::log::setup::LogStyle;
use crate::query::request::edns::ClientEdns;

/// What a written reply reports to metrics and the query log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Summary {
    pub rcode: ResponseCode,
    pub truncated: bool,
    pub log: Option<LogStyle>,
    /// What the metrics record (see [`crate::metrics::Served`]).
    pub zone: u16,
    pub plugin: Plugin,
    pub qtype: u8,
    pub dnssec_ok: bool,
    pub expansion: Option<Expansion>,
}

impl Summary {
    /// The summary of the reply written for `answer` to `query` (none: a
    /// message without a question), `truncated` when the writer set TC.
    pub fn of(answer: &Answer, truncated: bool, query: Option<&Query>, edns: Option<ClientEdns>) -> Summary {
        Summary {
            rcode: answer.rcode,
            truncated,
            log: answer.tags.log,
            zone: answer.tags.zone,
            plugin: answer.tags.plugin,
            qtype: query.map_or(u8::MAX, |q| crate::metrics::type_slot(q.query_type())),
            dnssec_ok: edns.is_some_and(|e| e.dnssec_ok),
            expansion: answer.tags.expansion,
        }
    }
}
