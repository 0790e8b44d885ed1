//! Unit tests of the byte-level replay: where the TTLs are, that patching
//! them touches nothing else (OPT's TTL field holds EDNS flags), and that
//! `loadbalance`'s byte shuffle keeps the records whole.

use hickory_proto::op::{MessageType, Metadata, OpCode, Query, ResponseCode};
use hickory_proto::rr::{Name, RData, RecordType};

use super::*;
use crate::query::reply::echo::Echo;
use crate::query::reply::wire::write;
use crate::query::reply::{self, Zone};
use crate::query::request::edns::ClientEdns;

fn name(s: &str) -> Name {
    Name::from_ascii(s).expect("name")
}

/// `answer` written as `finish` writes it for `qname` A, with EDNS (DO set).
fn reply(qname: &str, answer: &Answer) -> Vec<u8> {
    let meta = Metadata::new(7, MessageType::Query, OpCode::Query);
    let query = Query::query(name(qname), RecordType::A);
    let echo = Echo {
        meta: &meta,
        query: Some(&query),
        edns: Some(ClientEdns {
            payload: 1232,
            dnssec_ok: true,
            nsid: false,
        }),
    };
    let mut out = Vec::new();
    write(&mut out, &echo, answer, 1232);
    out
}

fn positive(ttl: u32, n: u8) -> Answer {
    let owner = name("www.example.org.");
    let target = name("web.example.org.");
    let mut a = Answer::default();
    a.answers.push(reply::cname(&owner, ttl, target.clone()));
    for i in 1..=n {
        let ip = std::net::IpAddr::from([192, 0, 2, i]);
        a.answers.extend(reply::address(&target, ttl, ip, RecordType::A));
    }
    a.additional.push(reply::txt(&target, ttl, "extra"));
    a
}

fn negative(ttl: u32) -> Answer {
    let mut a = Answer {
        rcode: ResponseCode::NXDomain,
        ..Answer::default()
    };
    a.authority.push(reply::soa(&Zone::new(name("example.org.")), ttl, 1));
    a
}

#[test]
fn every_ttl_is_found_and_patched_and_nothing_else_changes() {
    for (answer, records) in [(positive(30, 3), 5), (negative(30), 1)] {
        let before = reply("www.example.org.", &answer);
        let walked = walk(&before).expect("walks to the end");
        assert_eq!(walked.ttls.len(), records, "every record but OPT");
        let mut after = before.clone();
        patch_ttls(&mut after, &walked.ttls, 17).expect("in bounds");
        let parsed = crate::fuzzing::parse_strict(&after).expect("strict");
        let ttls: Vec<u32> = parsed
            .answers
            .iter()
            .chain(&parsed.authorities)
            .chain(parsed.additionals.iter().filter(|r| r.record_type() != RecordType::OPT))
            .map(|r| r.ttl)
            .collect();
        assert_eq!(ttls, vec![17; records]);
        let edns = parsed.edns.as_ref().expect("OPT kept");
        assert!(edns.flags().dnssec_ok, "OPT's TTL field (the DO bit) untouched");
        assert_eq!(edns.max_payload(), 1232);
        if let Some(soa) = parsed.authorities.first() {
            let RData::SOA(soa) = &soa.data else { panic!("SOA") };
            assert_eq!(soa.minimum, 30, "the SOA's MINIMUM is data, not a TTL");
        }
        let changed = before.iter().zip(&after).filter(|(a, b)| a != b).count();
        assert!(changed <= 2 * records, "only TTL bytes differ ({changed})");
    }
}

#[test]
fn ttls_decrease_as_patched() {
    let before = reply("www.example.org.", &negative(300));
    let walked = walk(&before).expect("walks");
    let mut out = before.clone();
    let mut last = u32::MAX;
    for left in [299, 120, 1, 0] {
        patch_ttls(&mut out, &walked.ttls, left).expect("patched");
        let parsed = crate::fuzzing::parse_strict(&out).expect("strict");
        let ttl = parsed.authorities[0].ttl;
        assert!(ttl < last, "{ttl} after {last}");
        last = ttl;
    }
}

#[test]
fn a_reply_that_does_not_parse_to_its_end_is_not_walked() {
    let mut r = reply("www.example.org.", &positive(30, 2));
    r.push(0);
    assert_eq!(walk(&r), None);
    r.truncate(r.len() - 8);
    assert_eq!(walk(&r), None);
    assert_eq!(walk(&[0; 11]), None);
    let mut looped = reply("www.example.org.", &positive(30, 2));
    looped[12] = 0xFF; // a label length no name may have
    assert_eq!(walk(&looped), None);
}

#[test]
fn the_byte_shuffle_keeps_records_whole_and_reorders_them() {
    let answer = positive(30, 6);
    let r = reply("www.example.org.", &answer);
    let walked = walk(&r).expect("walks");
    let (slots, len) = shuffle_slots(&answer, &walked).expect("one owner, one type");
    assert_eq!((slots.len(), len), (6, 4));
    let addresses = |bytes: &[u8]| -> Vec<String> {
        let m = crate::fuzzing::parse_strict(bytes).expect("strict");
        m.answers.iter().skip(1).map(|r| r.data.to_string()).collect()
    };
    let original = addresses(&r);
    let mut orders = std::collections::HashSet::new();
    for _ in 0..50 {
        let mut out = r.clone();
        shuffle(&mut out, &slots, usize::from(len));
        let mut got = addresses(&out);
        orders.insert(got.clone());
        got.sort();
        let mut want = original.clone();
        want.sort();
        assert_eq!(got, want, "the same addresses");
    }
    assert!(orders.len() > 1, "the order changes");
}

#[test]
fn addresses_of_two_owners_are_not_shuffled_as_bytes() {
    let mut answer = Answer::default();
    for (owner, i) in [("a.example.org.", 1), ("b.example.org.", 2)] {
        let ip = std::net::IpAddr::from([192, 0, 2, i]);
        answer
            .answers
            .extend(reply::address(&name(owner), 30, ip, RecordType::A));
    }
    let r = reply("a.example.org.", &answer);
    let walked = walk(&r).expect("walks");
    assert_eq!(shuffle_slots(&answer, &walked), None);
    assert_eq!(
        shuffle_slots(
            &positive(30, 1),
            &walk(&reply("www.example.org.", &positive(30, 1))).expect("walks")
        ),
        Some((Vec::new(), 0))
    );
}

mod replay {
    //! `Handler::handle` over a block that forwards behind a `cache`
    //! holding entries put here: the first hit is routed and learned, the
    //! next ones replayed (seen in the worker's table).

    use std::net::SocketAddr;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use hickory_proto::op::{Edns, Message, MessageType, OpCode, Query, ResponseCode};
    use hickory_proto::rr::{Name, RecordType};

    use crate::metrics::{Metrics, Transport};
    use crate::query::defer::Sink;
    use crate::query::forward::cache::Cache;
    use crate::query::forward::Forwarding;
    use crate::query::reply::{self, Zone};
    use crate::query::{Block, Handler, Router, Scratch};

    fn handler(rt: &tokio::runtime::Runtime, extra: &str) -> Handler {
        let text = format!(".:53 {{\n    forward . 127.0.0.1:9\n    cache 30\n    {extra}\n}}\n");
        let config = crate::config::load_str(std::path::Path::new("Corefile"), &text, 53).expect("loads");
        let server = &config.servers[0];
        let _runtime = rt.enter();
        let metrics = Arc::new(Metrics::default());
        let forwarding = Forwarding::of(server.forwarding(), "dns://:53".into(), metrics.clone()).expect("forwards");
        let block = Block {
            forwarding: Some(Arc::new(forwarding)),
            loadbalance: server.loadbalance.clone().map(Arc::new),
            plugins: crate::query::plugins::chain::Chain::build(&server.plugins, "dns://:53"),
            ..Block::new(server.zones.clone())
        };
        Handler::new(Router::new(vec![block], Vec::new()), metrics)
    }

    fn cache(h: &Handler) -> Arc<Forwarding> {
        h.router.load().blocks[0].forwarding.clone().expect("forwarding")
    }

    /// Puts the upstream's answer to `name` A (DO set): an address, or
    /// NXDOMAIN with the SOA.
    fn put(h: &Handler, name: &str, nx: bool) {
        let q = Query::query(Name::from_ascii(name).expect("name"), RecordType::A);
        let mut m = Message::new(1, MessageType::Response, OpCode::Query);
        m.add_query(q.clone());
        if nx {
            m.metadata.response_code = ResponseCode::NXDomain;
            m.authorities.push(reply::soa(
                &Zone::new(Name::from_ascii("example.org.").expect("zone")),
                60,
                1,
            ));
        } else {
            m.answers
                .extend(reply::address(q.name(), 300, [192, 0, 2, 1].into(), RecordType::A));
        }
        let f = cache(h);
        let c = f.cache.as_ref().expect("cache");
        c.put(Cache::key(&q, true, false), &q, &m);
    }

    fn ask(h: &Handler, s: &mut Scratch, id: u16, name: &str, at: Instant) -> Message {
        let mut m = Message::new(id, MessageType::Query, OpCode::Query);
        m.metadata.recursion_desired = true;
        m.add_query(Query::query(Name::from_ascii(name).expect("name"), RecordType::A));
        let mut e = Edns::new();
        e.set_max_payload(1232).set_dnssec_ok(true);
        m.set_edns(e);
        let bytes = m.to_vec().expect("encode");
        let peer: SocketAddr = "127.0.0.1:5000".parse().expect("addr");
        let sink = || -> Sink { panic!("a cache hit needs no sink") };
        assert!(h.handle(&bytes, peer, Transport::Udp, s, &sink, at), "answered now");
        crate::fuzzing::parse_strict(&s.out).expect("strict")
    }

    fn learned(s: &Scratch) -> usize {
        s.hits.entries.iter().map(|m| m.len()).sum()
    }

    #[test]
    fn hits_are_learned_then_replayed_with_ttls_counting_down() {
        let rt = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
        let h = handler(&rt, "");
        let mut s = Scratch::default();
        put(&h, "www.example.org.", false);
        put(&h, "nx.example.org.", true);
        let now = Instant::now();
        let first = ask(&h, &mut s, 1, "www.example.org.", now);
        assert_eq!(learned(&s), 1, "the routed hit is learned");
        assert_eq!(first.answers[0].ttl, 30);
        for (k, secs) in [(2u16, 3u64), (3, 7), (4, 29)] {
            let m = ask(&h, &mut s, k, "WWW.example.ORG.", now + Duration::from_secs(secs));
            assert_eq!(m.metadata.id, k);
            assert_eq!(m.queries[0].name().to_ascii(), "WWW.example.ORG.");
            assert_eq!(m.answers[0].ttl, 30 - secs as u32, "the time left");
            assert!(m.edns.as_ref().is_some_and(|e| e.flags().dnssec_ok), "OPT untouched");
        }
        let nx = ask(&h, &mut s, 5, "nx.example.org.", now);
        assert_eq!(
            (nx.metadata.response_code, nx.authorities[0].ttl),
            (ResponseCode::NXDomain, 30)
        );
        let nx = ask(&h, &mut s, 6, "nx.example.org.", now + Duration::from_secs(12));
        assert_eq!(nx.authorities[0].ttl, 18, "the SOA's TTL counts down too");
        assert_eq!(learned(&s), 2);
        let f = cache(&h);
        let stats = &f.cache.as_ref().expect("cache").stats;
        use crate::query::forward::cache::Stat;
        assert_eq!(
            (
                stats.get(Stat::Requests),
                stats.get(Stat::HitsSuccess),
                stats.get(Stat::HitsDenial)
            ),
            (6, 4, 2),
            "replays count as the routed hits do"
        );
        put(&h, "www.example.org.", false); // a refresh retires the learned entry
        let m = ask(&h, &mut s, 7, "www.example.org.", Instant::now());
        assert_eq!(m.answers[0].ttl, 30, "the new entry's TTL, not the retired one's");
        let m = ask(
            &h,
            &mut s,
            8,
            "www.example.org.",
            Instant::now() + Duration::from_secs(5),
        );
        assert_eq!(m.answers[0].ttl, 25, "learned again");
    }

    #[test]
    fn behind_hosts_what_it_passes_on_is_learned_until_it_reloads() {
        let rt = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
        let h = handler(
            &rt,
            "hosts {\n        192.0.2.99 mine.example.org\n        fallthrough\n    }",
        );
        let mut s = Scratch::default();
        put(&h, "www.example.org.", false);
        put(&h, "mine.example.org.", false);
        let now = Instant::now();
        for id in 0..3 {
            let m = ask(&h, &mut s, id, "www.example.org.", now);
            assert_eq!(m.answers.len(), 1, "a hit");
            let m = ask(&h, &mut s, id, "mine.example.org.", now);
            assert_eq!(m.answers[0].data.to_string(), "192.0.2.99", "from hosts");
        }
        assert_eq!(learned(&s), 1, "only the name hosts passed on");
        let seen = |s: &Scratch| -> Vec<u64> {
            let hits = s.hits.entries.iter().flat_map(|m| m.values());
            hits.flat_map(|hit| hit.changes.iter().map(|(_, n)| *n)).collect()
        };
        assert_eq!(seen(&s), [0]);
        let router = h.router.load();
        let hosts = &router.blocks[0].plugins.before_cluster[0];
        let reloads = hosts.changes().expect("hosts counts its reloads");
        reloads.fetch_add(1, std::sync::atomic::Ordering::Release);
        let m = ask(&h, &mut s, 9, "www.example.org.", now);
        assert_eq!(m.answers.len(), 1, "a hit");
        assert_eq!(seen(&s), [1], "not replayed after a reload: routed and learned again");
    }
}
