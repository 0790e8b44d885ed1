//! The writer against hickory's encoder: the same bytes for every
//! question over the demo cluster and for hand-built answers.

use hickory_proto::rr::rdata::opt::{EdnsCode, EdnsOption, NSIDPayload};
use std::net::SocketAddr;

use hickory_proto::op::{Edns, Message, MessageType, Metadata, OpCode, Query, ResponseCode};
use hickory_proto::rr::{Name, RecordType};

use super::hickory;
use super::*;
use crate::metrics::Transport;
use crate::query::request::edns::ClientEdns;
use crate::query::{defer::Sink, Scratch};

/// Questions over the demo cluster (a fixture dump, plus a headless
/// Service of 600 endpoints): every shape the cluster zone answers.
const QUESTIONS: &[(&str, RecordType)] = &[
    ("kubernetes.default.svc.cluster.local.", RecordType::A),
    ("KUBERNETES.Default.Svc.Cluster.Local.", RecordType::A),
    ("kubernetes.default.svc.cluster.local.", RecordType::AAAA),
    ("web.shop.svc.cluster.local.", RecordType::AAAA),
    ("web.shop.svc.cluster.local.", RecordType::SRV),
    ("web.shop.svc.cluster.local.", RecordType::ANY),
    ("_http._tcp.web.shop.svc.cluster.local.", RecordType::SRV),
    ("_HTTP._TCP.Web.Shop.svc.cluster.local.", RecordType::SRV),
    ("_tcp.web.shop.svc.cluster.local.", RecordType::A),
    ("many.big.svc.cluster.local.", RecordType::A),
    ("many.big.svc.cluster.local.", RecordType::AAAA),
    ("Many.Big.svc.cluster.local.", RecordType::SRV),
    ("many-4.many.big.svc.cluster.local.", RecordType::A),
    ("postgres.db.svc.cluster.local.", RecordType::A),
    ("postgres.db.svc.cluster.local.", RecordType::SRV),
    ("alertmanager-operated.monitoring.svc.cluster.local.", RecordType::SRV),
    ("payments.shop.svc.cluster.local.", RecordType::A),
    ("docs.shop.svc.cluster.local.", RecordType::A),
    ("docs.shop.svc.cluster.local.", RecordType::CNAME),
    ("nothere.shop.svc.cluster.local.", RecordType::A),
    ("www.example.com.shop.svc.cluster.local.", RecordType::AAAA),
    ("shop.svc.cluster.local.", RecordType::A),
    ("svc.cluster.local.", RecordType::TXT),
    ("cluster.local.", RecordType::SOA),
    ("cluster.local.", RecordType::NS),
    ("Cluster.Local.", RecordType::A),
    ("ns.dns.cluster.local.", RecordType::A),
    ("dns-version.cluster.local.", RecordType::TXT),
    ("10-1-2-3.default.pod.cluster.local.", RecordType::A),
    ("1.0.96.10.in-addr.arpa.", RecordType::PTR),
    ("10.0.96.10.IN-ADDR.ARPA.", RecordType::PTR),
    ("9.9.9.10.in-addr.arpa.", RecordType::PTR),
    (
        "4.3.2.1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.d.f.ip6.arpa.",
        RecordType::PTR,
    ),
    ("example.com.", RecordType::A),
    ("cluster.local.", RecordType::AXFR),
];

fn packet(name: &str, qtype: RecordType, edns: Option<(u16, bool, u8)>) -> Vec<u8> {
    let mut m = Message::new(0x1234, MessageType::Query, OpCode::Query);
    m.metadata.recursion_desired = true;
    m.add_query(Query::query(Name::from_ascii(name).expect("name"), qtype));
    if let Some((payload, dnssec_ok, version)) = edns {
        let mut e = Edns::new();
        e.set_max_payload(payload).set_dnssec_ok(dnssec_ok).set_version(version);
        m.set_edns(e);
    }
    m.to_vec().expect("encodes")
}

fn long_name() -> String {
    let label = "a".repeat(63);
    format!("{label}.{label}.{label}.svc.cluster.local.")
}

/// Every question, with and without EDNS, over UDP and TCP, through
/// the whole query path: the reply (written here) parses strictly and
/// is byte for byte what hickory's encoder writes for the same answer.
#[test]
fn replies_are_the_bytes_hickory_writes() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    // The Record path: its answers are what hickory encodes here.
    let handler = crate::fuzzing::without_direct(&crate::fuzzing::demo_handler(root, false));
    let peer = SocketAddr::from(([10, 1, 2, 3], 5353));
    let long = long_name();
    let questions = QUESTIONS.iter().copied().chain([(long.as_str(), RecordType::A)]);
    let edns = [
        None,
        Some((1232, false, 0)),
        Some((4096, true, 0)),
        Some((512, false, 0)),
        Some((1232, false, 1)),
    ];
    let (mut checked, mut truncated) = (0, 0);
    for (name, qtype) in questions {
        for e in edns {
            let bytes = packet(name, qtype, e);
            for transport in [Transport::Udp, Transport::Tcp] {
                let mut scratch = Scratch::default();
                let now = std::time::Instant::now();
                assert!(handler.handle(&bytes, peer, transport, &mut scratch, &|| Sink::None, now));
                let what = format!("{name} {qtype} {e:?} {transport:?}");
                let reply = crate::fuzzing::parse_strict(&scratch.out).unwrap_or_else(|err| panic!("{what}: {err}"));
                truncated += usize::from(reply.metadata.truncation);
                let (mut hickory, mut ours) = (Vec::new(), Vec::new());
                crate::fuzzing::with_echo(&bytes, &scratch, transport, |echo, limit| {
                    hickory::write_with_hickory(&mut hickory, echo, &scratch.answer, limit);
                    encode(&mut ours, echo, &scratch.answer, limit).expect("written as bytes");
                });
                assert!(ours == scratch.out, "{what}: the query path wrote these bytes");
                assert!(
                    scratch.out == hickory,
                    "{what}:\n{reply}\nhickory's:\n{:?}",
                    Message::from_vec(&hickory)
                );
                checked += 1;
            }
        }
    }
    assert_eq!(checked, (QUESTIONS.len() + 1) * 5 * 2);
    assert!(
        truncated >= 4,
        "the big headless Service is truncated over UDP ({truncated})"
    );
}

/// Hand-built answers the demo does not produce: an extended error, an
/// rcode with high bits, TXT and HINFO, truncation at every size, and
/// more names than hickory keeps compression candidates for.
#[test]
fn unusual_answers_are_the_bytes_hickory_writes() {
    let meta = Metadata::new(7, MessageType::Query, OpCode::Query);
    let owner = Name::from_ascii("Svc-With-A-Long-Name.some-namespace.svc.cluster.local.").expect("name");
    let query = Query::query(owner.clone(), RecordType::ANY);
    let mut answer = Answer {
        ede: Some((18, "prohibited".into())),
        rcode: ResponseCode::BADVERS,
        ..Answer::default()
    };
    answer.answers.push(crate::query::reply::txt(&owner, 5, "some text"));
    answer.answers.push(crate::query::reply::hinfo_rfc8482(&owner));
    for i in 0..150u16 {
        let target = Name::from_ascii(format!(
            "host-{i}.svc-with-a-long-name.some-namespace.svc.cluster.local."
        ))
        .expect("name");
        answer
            .answers
            .push(crate::query::reply::srv(&owner, 5, 1, 80 + i, target.clone()));
        let addr = std::net::IpAddr::from([10, 0, (i >> 8) as u8, i as u8]);
        answer
            .additional
            .extend(crate::query::reply::address(&target, 5, addr, RecordType::A));
    }
    let zone = crate::query::reply::Zone::new(Name::from_ascii("cluster.local.").expect("zone"));
    answer.authority.push(crate::query::reply::soa(&zone, 5, 42));
    answer
        .authority
        .push(crate::query::reply::ns(&zone.name, 5, zone.ns_host.clone()));
    answer.tags.nsid = Some(std::sync::Arc::from(&b"replica-1"[..])); // sent only when asked
    for edns in [
        None,
        Some(ClientEdns {
            payload: 1232,
            dnssec_ok: true,
            nsid: false,
        }),
        Some(ClientEdns {
            payload: 1232,
            dnssec_ok: false,
            nsid: true,
        }),
    ] {
        let echo = Echo {
            meta: &meta,
            query: Some(&query),
            edns,
        };
        for limit in (100..1300).step_by(7).chain([20_000, 65_535]) {
            let (mut ours, mut hickory) = (Vec::new(), Vec::new());
            let t = encode(&mut ours, &echo, &answer, limit).expect("every type is known");
            assert_eq!(t, hickory::write_with_hickory(&mut hickory, &echo, &answer, limit));
            assert!(ours == hickory, "limit {limit}, {edns:?}");
            let parsed = crate::fuzzing::parse_strict(&ours).expect("parses strictly");
            let nsid = parsed.edns.as_ref().and_then(|e| e.option(EdnsCode::NSID).cloned());
            let want = edns
                .is_some_and(|e| e.nsid)
                .then(|| EdnsOption::NSID(NSIDPayload::new(&b"replica-1"[..]).expect("short")));
            assert_eq!(nsid, want, "limit {limit}, {edns:?}");
        }
    }
}
