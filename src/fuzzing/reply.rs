//! What every reply the query path writes must be, whichever property
//! produced it ([`super::path`] for the whole path, [`super::hits`] for
//! cache-hit replays): strict, echoing the query's ID and question,
//! within the client's limit, and byte for byte what hickory's encoder
//! writes for the same answer.

use hickory_proto::op::Message;

use super::strict::parse_strict;
use crate::metrics::Transport;
use crate::query::reply::echo::Echo;
use crate::query::reply::wire::hickory;
use crate::query::request::{self, Triage};
use crate::query::Scratch;

/// The properties of any reply `out` to `data` over `transport`.
pub fn reply_holds(data: &[u8], out: &[u8], query: Option<&Message>, transport: Transport) {
    let parsed = parse_strict(out).unwrap_or_else(|e| panic!("reply over {transport:?}: {e}"));
    assert_eq!(out[..2], data[..2], "the reply's ID is the query's");
    let limit = match transport {
        Transport::Udp => 1232,
        Transport::Tcp => 65535,
    };
    assert!(out.len() <= limit, "{} bytes over {transport:?}", out.len());
    let Some(query) = query else { return };
    if let (Some(q), Some(r), 1) = (query.queries.first(), parsed.queries.first(), query.queries.len()) {
        assert!(q.name().eq_case(r.name()), "the question is echoed with its spelling");
        assert_eq!(q.query_type(), r.query_type(), "the question's type is echoed");
    }
    if query.edns.is_none() && transport == Transport::Udp {
        assert!(out.len() <= 512, "no EDNS: at most 512 bytes");
    }
}

/// Calls `f` with what the query path echoed in its reply to `data` (the
/// header, the question, the client's EDNS under the answer's `bufsize`)
/// and the reply's size limit over `transport`: what an encoder needs to
/// write the reply again from `scratch.answer`.
pub fn with_echo<R>(data: &[u8], scratch: &Scratch, transport: Transport, f: impl FnOnce(&Echo<'_>, usize) -> R) -> R {
    let (meta, query, edns) = match request::check(data) {
        Triage::Query(r) => (
            r.meta,
            Some(r.query),
            request::edns::capped(r.edns, scratch.answer.tags.bufsize),
        ),
        Triage::Reject { meta, query, edns, .. } => (meta, query, edns),
        Triage::Drop => panic!("a dropped query was answered"),
    };
    let echo = Echo {
        meta: &meta,
        query: query.as_ref(),
        edns,
    };
    f(&echo, request::edns::limit(transport, edns))
}

/// The reply the query path wrote for `data` is what hickory's encoder
/// writes for the answer it built.
pub fn hickory_writes_the_same(data: &[u8], scratch: &Scratch, transport: Transport) {
    let mut hickory = Vec::new();
    with_echo(data, scratch, transport, |echo, limit| {
        hickory::write_with_hickory(&mut hickory, echo, &scratch.answer, limit)
    });
    assert!(
        hickory == scratch.out,
        "over {transport:?}, hickory writes other bytes:\n{:?}\nours:\n{:?}",
        Message::from_vec(&hickory),
        Message::from_vec(&scratch.out)
    );
}
