use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use super::sessions::Sessions;
use super::*;

fn v2(command: u8, family: u8, body: &[u8]) -> Vec<u8> {
    let mut h = V2.to_vec();
    h.push(0x20 | command);
    h.push(family);
    h.extend_from_slice(&u16::try_from(body.len()).expect("short").to_be_bytes());
    h.extend_from_slice(body);
    h
}

fn v4_body() -> Vec<u8> {
    vec![203, 0, 113, 7, 10, 0, 0, 1, 0x9c, 0x40, 0, 53]
}

fn addr(s: &str) -> SocketAddr {
    s.parse().expect("address")
}

#[test]
fn v2_gives_the_source_and_its_length_and_nothing_past_it() {
    let mut bytes = v2(1, 0x12, &v4_body());
    bytes.extend_from_slice(b"DNS");
    let got = header(&bytes, Carrier::Datagram);
    assert_eq!(
        got,
        Header::Present {
            len: 28,
            client: Some(addr("203.0.113.7:40000"))
        }
    );
    let mut six = vec![0u8; 36];
    six[..16].copy_from_slice(&"2001:db8::7".parse::<std::net::Ipv6Addr>().expect("v6").octets());
    six[32..34].copy_from_slice(&5353u16.to_be_bytes());
    let got = header(&v2(1, 0x21, &six), Carrier::Stream);
    assert_eq!(
        got,
        Header::Present {
            len: 52,
            client: Some(addr("[2001:db8::7]:5353"))
        }
    );
}

#[test]
fn v2_local_and_unspec_keep_the_sender() {
    assert_eq!(
        header(&v2(0, 0x00, &[]), Carrier::Stream),
        Header::Present { len: 16, client: None }
    );
    assert_eq!(
        header(&v2(1, 0x00, &[]), Carrier::Datagram),
        Header::Present { len: 16, client: None }
    );
}

#[test]
fn v2_refuses_the_other_transport_bad_versions_and_short_blocks() {
    assert!(matches!(
        header(&v2(1, 0x11, &v4_body()), Carrier::Datagram),
        Header::Invalid(_)
    ));
    assert!(matches!(
        header(&v2(1, 0x12, &v4_body()), Carrier::Stream),
        Header::Invalid(_)
    ));
    assert!(matches!(
        header(&v2(1, 0x12, &[1, 2, 3]), Carrier::Datagram),
        Header::Invalid(_)
    ));
    assert!(matches!(
        header(&v2(5, 0x12, &v4_body()), Carrier::Datagram),
        Header::Invalid(_)
    ));
    let mut bad_version = v2(1, 0x12, &v4_body());
    bad_version[12] = 0x11;
    assert!(matches!(header(&bad_version, Carrier::Datagram), Header::Invalid(_)));
    let mut long = v2(1, 0x12, &v4_body());
    long[14..16].copy_from_slice(&600u16.to_be_bytes());
    assert!(matches!(header(&long, Carrier::Stream), Header::Invalid(_)));
}

#[test]
fn a_stream_start_still_coming_is_partial() {
    let whole = v2(1, 0x11, &v4_body());
    for cut in [0, 5, 12, 15, 20] {
        assert_eq!(header(&whole[..cut], Carrier::Stream), Header::Partial, "cut {cut}");
    }
    assert_eq!(header(b"PROX", Carrier::Stream), Header::Partial);
    assert_eq!(header(b"PROXY TCP4 1.2.3.4", Carrier::Stream), Header::Partial);
}

#[test]
fn v1_lines() {
    let line = b"PROXY TCP4 198.51.100.9 10.0.0.1 41000 53\r\n\x00\x1d";
    assert_eq!(
        header(line, Carrier::Stream),
        Header::Present {
            len: 43,
            client: Some(addr("198.51.100.9:41000"))
        }
    );
    let six = b"PROXY TCP6 2001:db8::9 ::1 41000 53\r\n";
    assert_eq!(
        header(six, Carrier::Stream),
        Header::Present {
            len: six.len(),
            client: Some(addr("[2001:db8::9]:41000"))
        }
    );
    assert_eq!(
        header(b"PROXY UNKNOWN\r\n", Carrier::Stream),
        Header::Present { len: 15, client: None }
    );
    for bad in [
        &b"PROXY TCP4 2001:db8::9 ::1 1 53\r\n"[..],
        b"PROXY TCP4 1.2.3.4 5.6.7.8 99999 53\r\n",
        b"PROXY TCP5 1.2.3.4 5.6.7.8 1 53\r\n",
        b"PROXY TCP4 1.2.3.4\r\n",
    ] {
        assert!(matches!(header(bad, Carrier::Stream), Header::Invalid(_)), "{bad:?}");
    }
    let endless = [b"PROXY ".as_slice(), &[b'x'; 120]].concat();
    assert!(matches!(header(&endless, Carrier::Stream), Header::Invalid(_)));
    // v1 is never read from a datagram: those bytes are a query (that will not parse)
    assert_eq!(header(line, Carrier::Datagram), Header::Absent);
}

#[test]
fn dns_bytes_are_absent() {
    assert_eq!(header(&[0x12, 0x34, 1, 0, 0, 1], Carrier::Datagram), Header::Absent);
    assert_eq!(header(&[0, 29, 0x12, 0x34], Carrier::Stream), Header::Absent);
}

#[test]
fn policy_follows_allow_and_default_as_coredns() {
    let ip = |s: &str| s.parse::<IpAddr>().expect("ip");
    let mut p = Proxyproto {
        allow: Vec::new(),
        default: None,
        session_ttl: Duration::ZERO,
        max_sessions: MAX_SESSIONS,
    };
    assert_eq!(p.policy(ip("192.0.2.1")), Policy::Use);
    p.default = Some(Policy::Reject);
    assert_eq!(p.policy(ip("192.0.2.1")), Policy::Reject);
    p.allow = vec![crate::corefile::args::Net::parse("10.0.0.0/8").expect("net")];
    assert_eq!(p.policy(ip("10.1.2.3")), Policy::Use);
    assert_eq!(p.policy(ip("::ffff:10.1.2.3")), Policy::Use);
    assert_eq!(p.policy(ip("192.0.2.1")), Policy::Reject);
    p.default = None;
    assert_eq!(p.policy(ip("192.0.2.1")), Policy::Ignore);
}

#[test]
fn sessions_expire_renew_and_stay_bounded() {
    let (t0, ttl) = (Instant::now(), Duration::from_secs(28));
    let mut s = Sessions::default();
    s.remember(addr("10.0.0.1:1000"), addr("203.0.113.1:5000"), t0, ttl, 3);
    assert_eq!(
        s.client(addr("10.0.0.1:1000"), t0 + Duration::from_secs(20), ttl),
        Some(addr("203.0.113.1:5000"))
    );
    // renewed at 20 s and at 40 s: gone 28 s later
    assert!(s
        .client(addr("10.0.0.1:1000"), t0 + Duration::from_secs(40), ttl)
        .is_some());
    assert!(s
        .client(addr("10.0.0.1:1000"), t0 + Duration::from_secs(69), ttl)
        .is_none());
    for i in 0..100u16 {
        s.remember(
            addr(&format!("10.0.1.{}:1", i % 250)),
            addr("203.0.113.2:1"),
            t0,
            ttl,
            3,
        );
        assert!(s.len() <= 3);
    }
}

fn load(text: &str) -> Result<crate::config::Config, Vec<String>> {
    crate::config::load_str(std::path::Path::new("Corefile"), text, 53)
        .map_err(|e| e.0.iter().map(ToString::to_string).collect())
}

#[test]
fn bad_options_are_errors_at_their_place_and_check_prints_what_applies() {
    let text = ".:53 {\n proxyproto {\n  allow 10.0.0.0/33 nonet\n  default maybe\n  udp_session_tracking soon 0\n  other\n }\n proxyproto\n}\n";
    let want = [
        "Corefile:3:9: proxyproto: allow: '10.0.0.0/33' is not a network (e.g. 192.168.1.1/32)",
        "Corefile:3:21: proxyproto: allow: 'nonet' is not a network (e.g. 192.168.1.1/32)",
        "Corefile:4:11: proxyproto: default: 'maybe' is not one of use, ignore, reject, skip",
        "Corefile:5:24: udp_session_tracking: 'soon' is not a duration (e.g. 5s)",
        "Corefile:5:29: proxyproto: udp_session_tracking: '0' is not a positive number of sessions",
        "Corefile:6:3: proxyproto: unknown option 'other' (supported: allow, default, udp_session_tracking)",
        "Corefile:8:2: proxyproto: only one per server block",
    ];
    assert_eq!(load(text).err().unwrap_or_default(), want);
    let cfg = load(".:53 {\n proxyproto {\n  allow 10.0.0.0/8\n  udp_session_tracking 28s\n }\n}\n").expect("loads");
    let printed = cfg.to_string();
    assert!(
        printed.contains("    proxyproto {\n        allow 10.0.0.0/8\n        default ignore\n        udp_session_tracking 28s 10240\n    }\n"),
        "{printed}"
    );
    let again = printed.lines().skip(2).collect::<Vec<_>>().join("\n");
    assert_eq!(load(&again).expect("the printout loads").to_string(), printed);
}
