//! The `tsig` plugin on the wire: requests signed here as a client signs
//! them (RFC 8945 §4.3), each outcome of the table in `mod.rs`, the
//! opcode rows of CoreDNS's TestServeDNS the table runner cannot send, and
//! arbitrary bytes never panicking. Real clients (dig, kdig) sign and
//! verify in tests/tsig.rs.

use hickory_proto::op::{Message, MessageType, OpCode, Query};
use hickory_proto::rr::{Name, RecordType};
use ring::hmac;

use super::setup::{KeyConfig, Require, Secret, TsigConfig};
use super::wire::{self, Variables};
use super::{Admit, Tsig, BADKEY, BADSIG, BADTIME};

const SECRET: &[u8] = b"0123456789abcdef0123456789abcdef";
const NOW: u64 = 1_800_000_000;
const SHA256: &[u8] = b"\x0bhmac-sha256\x00";
const KEY: &[u8] = b"\x04test\x03key\x00";

fn tsig(zone: &str, types: Require<u16>, opcodes: Require<u8>) -> Tsig {
    let cfg = TsigConfig {
        zones: vec![Name::from_ascii(zone).expect("zone")],
        keys: vec![KeyConfig {
            name: Name::from_ascii("test.key.").expect("key"),
            secret: Secret(SECRET.into()),
        }],
        files: Vec::new(),
        require: types,
        require_opcode: opcodes,
    };
    Tsig::with(None, &cfg)
}

fn all<T>() -> Require<T> {
    Require {
        all: true,
        listed: Vec::new(),
    }
}

fn query(opcode: OpCode, qtype: RecordType) -> Vec<u8> {
    let mut m = Message::new(0x1234, MessageType::Query, opcode);
    m.add_query(Query::query(Name::from_ascii("test.example.").expect("name"), qtype));
    m.to_vec().expect("encode")
}

/// `msg` signed as a client signs it, with `secret` under `key`/`alg` at
/// `time`, its MAC cut to `mac_len` bytes.
fn sign(msg: &[u8], key: &[u8], alg: &[u8], secret: &[u8], time: u64, mac_len: usize) -> Vec<u8> {
    let hkey = hmac::Key::new(hmac::HMAC_SHA256, secret);
    let arcount = u16::from_be_bytes([msg[10], msg[11]]);
    let header = wire::header(msg, 0x1234, arcount).expect("header");
    let vars = Variables {
        key,
        algorithm: alg,
        time,
        fudge: 300,
        error: 0,
        other: &[],
    };
    let mac = wire::digest(&hkey, None, &header, msg, &vars);
    let mut out = msg.to_vec();
    wire::append(&mut out, &vars, &mac.as_ref()[..mac_len], 0x1234);
    out
}

fn signed(msg: &[u8]) -> Vec<u8> {
    sign(msg, KEY, SHA256, SECRET, NOW, 32)
}

/// The rcode, and the TSIG error of the reply's TSIG record if it has one.
fn outcome(reply: &[u8]) -> (u8, Option<u16>) {
    let rcode = reply[3] & 0x0F;
    let req = wire::Request::of(reply).expect("reply reads");
    let error = match req.tsig {
        Ok(Some(t)) => Some(t.error),
        _ => None,
    };
    (rcode, error)
}

#[test]
fn a_verified_request_goes_on_unsigned_and_its_reply_verifies() {
    let t = tsig(".", all(), Require::default());
    let plain = query(OpCode::Query, RecordType::A);
    let mut out = Vec::new();
    let Admit::Signed(s) = t.admit(&signed(&plain), NOW + 10, &mut out) else {
        panic!("not verified")
    };
    assert_eq!(s.request, plain, "the TSIG record is taken off, ARCOUNT back");
    // The reply: the request echoed as a reply, signed, verified as a client does.
    let mut reply = plain.clone();
    reply[2] |= 0x80;
    s.signer.sign_at(&mut reply, NOW + 11);
    let r = wire::Request::of(&reply).expect("reads");
    let rr = r.tsig.expect("well formed").expect("signed");
    assert_eq!((rr.error, rr.time, rr.original_id), (0, NOW + 11, 0x1234));
    let request_mac = &signed(&plain)[plain.len()..];
    let mac_at = request_mac.len() - 38; // the request's 32-byte MAC, before ID, error, other len
    let hkey = hmac::Key::new(hmac::HMAC_SHA256, SECRET);
    let header = wire::header(&reply, 0x1234, 0).expect("header");
    let vars = Variables {
        key: KEY,
        algorithm: SHA256,
        time: rr.time,
        fudge: rr.fudge,
        error: 0,
        other: &[],
    };
    let prior = &request_mac[mac_at..mac_at + 32];
    let want = wire::digest(&hkey, Some(prior), &header, &reply[..rr.start], &vars);
    assert_eq!(&reply[rr.mac.clone()], want.as_ref());
}

#[test]
fn each_failure_has_its_rcode_and_tsig_error() {
    let t = tsig(".", all(), Require::default());
    let plain = query(OpCode::Query, RecordType::A);
    let mut out = Vec::new();
    let mut ask = |msg: &[u8], now: u64| match t.admit(msg, now, &mut out) {
        Admit::Answered => outcome(&out),
        Admit::Plain => panic!("plain"),
        Admit::Signed(_) => panic!("verified"),
    };
    assert_eq!(ask(&plain, NOW), (5, None), "unsigned: REFUSED");
    let mut bad = signed(&plain);
    let mac_end = bad.len() - 6;
    bad[mac_end - 1] ^= 1;
    assert_eq!(ask(&bad, NOW), (9, Some(BADSIG)), "a wrong MAC");
    let other = sign(&plain, KEY, SHA256, b"another secret", NOW, 32);
    assert_eq!(ask(&other, NOW), (9, Some(BADSIG)), "a wrong secret");
    let nobody = sign(&plain, b"\x06nobody\x00", SHA256, SECRET, NOW, 32);
    assert_eq!(ask(&nobody, NOW), (9, Some(BADKEY)), "an unknown key");
    let md5 = sign(
        &plain,
        KEY,
        b"\x08hmac-md5\x07sig-alg\x03reg\x03int\x00",
        SECRET,
        NOW,
        32,
    );
    assert_eq!(ask(&md5, NOW), (9, Some(BADKEY)), "an algorithm not served");
    assert_eq!(
        ask(&sign(&plain, KEY, SHA256, SECRET, NOW, 8), NOW),
        (9, Some(BADSIG)),
        "MAC cut below 10"
    );
    assert_eq!(ask(&signed(&plain), NOW + 301), (9, Some(BADTIME)), "late");
    assert_eq!(ask(&signed(&plain), NOW - 301), (9, Some(BADTIME)), "early");
    let mut after = signed(&plain);
    after.extend_from_slice(&[0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0]); // a record after the TSIG
    after[11] += 1;
    assert_eq!(ask(&after, NOW), (1, None), "a TSIG record not last: FORMERR");
}

#[test]
fn badtime_is_signed_with_the_servers_time() {
    let t = tsig(".", Require::default(), Require::default());
    let mut out = Vec::new();
    let msg = signed(&query(OpCode::Query, RecordType::A));
    assert!(matches!(t.admit(&msg, NOW + 1000, &mut out), Admit::Answered));
    let rr = wire::Request::of(&out).expect("reads").tsig.expect("ok").expect("tsig");
    assert_eq!(
        (rr.error, rr.time, rr.mac.len()),
        (BADTIME, NOW, 32),
        "the client's time, a MAC"
    );
    let other = &out[rr.other.clone()];
    let server = other.iter().fold(0u64, |a, b| (a << 8) | u64::from(*b));
    assert_eq!(server, NOW + 1000, "the server's time in Other Data");
}

#[test]
fn a_udp_reply_the_tsig_record_would_push_past_the_limit_is_cut_with_tc() {
    let t = tsig(".", Require::default(), Require::default());
    let plain = query(OpCode::Query, RecordType::A);
    let Admit::Signed(s) = t.admit(&signed(&plain), NOW, &mut Vec::new()) else {
        panic!("not verified")
    };
    let mut reply = plain.clone();
    reply[2] |= 0x80;
    reply[7] = 1; // one answer, padded out to 480 bytes (a TXT record)
    reply.extend_from_slice(&[0xC0, 12, 0, 16, 0, 1, 0, 0, 0, 60, 0, 0]);
    let rdata = reply.len();
    reply.push(255);
    reply.resize(480, b'x');
    let rdlen = u16::try_from(480 - rdata).expect("fits").to_be_bytes();
    reply[rdata - 2..rdata].copy_from_slice(&rdlen);
    assert!(
        wire::Request::of(&reply).is_some_and(|r| r.tsig.is_ok()),
        "a well-formed reply"
    );
    let mut tcp = reply.clone();
    assert!(s.signed(true, false, &mut tcp));
    assert_eq!(tcp[2] & 0x02, 0, "over TCP: whole");
    assert!(tcp.len() > 512);
    let mut udp = reply.clone();
    assert!(s.signed(true, true, &mut udp));
    assert!(udp.len() <= 512 && udp[2] & 0x02 != 0, "over UDP: cut, TC set");
    assert_eq!(
        &udp[4..12],
        &[0, 1, 0, 0, 0, 0, 0, 1],
        "the question and the TSIG record"
    );
    let rr = wire::Request::of(&udp)
        .expect("reads")
        .tsig
        .expect("ok")
        .expect("signed");
    assert_eq!(rr.mac.len(), 32);
}

#[test]
fn a_mac_cut_to_half_the_hash_verifies() {
    let t = tsig(".", all(), Require::default());
    let msg = sign(&query(OpCode::Query, RecordType::A), KEY, SHA256, SECRET, NOW, 16);
    assert!(matches!(t.admit(&msg, NOW, &mut Vec::new()), Admit::Signed(_)));
}

/// TestServeDNS's rows the table runner cannot send (another opcode).
#[test]
fn coredns_opcode_rows() {
    let update = Require {
        all: false,
        listed: vec![5u8],
    };
    let t = tsig(".", Require::default(), update.clone());
    let mut out = Vec::new();
    // row 8: signed UPDATE, UPDATE required: verified
    let msg = signed(&query(OpCode::Update, RecordType::SOA));
    assert!(matches!(t.admit(&msg, NOW, &mut out), Admit::Signed(_)));
    // row 9: unsigned UPDATE, UPDATE required: REFUSED
    assert!(matches!(
        t.admit(&query(OpCode::Update, RecordType::SOA), NOW, &mut out),
        Admit::Answered
    ));
    assert_eq!(outcome(&out), (5, None));
    // row 11: signed NOTIFY, NOTIFY required: verified
    let notify = tsig(
        ".",
        Require::default(),
        Require {
            all: false,
            listed: vec![4],
        },
    );
    let msg = signed(&query(OpCode::Notify, RecordType::SOA));
    assert!(matches!(notify.admit(&msg, NOW, &mut out), Admit::Signed(_)));
    // row 12: signed UPDATE of type A, AXFR and UPDATE required: verified
    let both = tsig(
        ".",
        Require {
            all: false,
            listed: vec![252],
        },
        update,
    );
    let msg = signed(&query(OpCode::Update, RecordType::A));
    assert!(matches!(both.admit(&msg, NOW, &mut out), Admit::Signed(_)));
    // rows 2 and 3: outside the plugin's zones, signed or not: not looked at
    let other = tsig("another.domain.", all(), all());
    assert!(matches!(
        other.admit(&query(OpCode::Query, RecordType::A), NOW, &mut out),
        Admit::Plain
    ));
    assert!(matches!(other.admit(&msg, NOW, &mut out), Admit::Plain));
}

#[test]
fn arbitrary_bytes_never_panic() {
    let t = tsig(".", all(), all());
    let seed = signed(&query(OpCode::Query, RecordType::A));
    let mut rng = fastrand::Rng::with_seed(7);
    let mut out = Vec::new();
    for _ in 0..20_000 {
        let mut msg = seed.clone();
        for _ in 0..rng.usize(1..6) {
            let i = rng.usize(..msg.len());
            msg[i] = rng.u8(..);
        }
        msg.truncate(rng.usize(..=msg.len()));
        let _ = t.admit(&msg, NOW, &mut out);
    }
}

#[test]
fn key_files_read_as_coredns_reads_them_and_each_mistake_is_located() {
    let dir = std::env::temp_dir().join(format!("clusterdns-tsig-keys-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let load = |keys: &str| {
        std::fs::write(dir.join("keys.conf"), keys).expect("write");
        let text = ".:53 {\n    tsig {\n        secrets keys.conf\n    }\n}\n";
        crate::config::load_str(&dir.join("Corefile"), text, 53)
            .map(|c| c.servers[0].tsig.clone().expect("tsig").keys)
            .map_err(|e| e.0.iter().map(ToString::to_string).collect::<Vec<_>>())
    };
    let good = "// keys\nkey \"A.Key\" {\n    algorithm hmac-sha256; # ignored\n    secret \"MDEyMzQ1Njc4OQ==\";\n};\n/* two */ key b.key. { secret \"YWJj\"; }";
    let keys = load(good).expect("loads");
    let names: Vec<String> = keys.iter().map(|k| k.name.to_string()).collect();
    assert_eq!(names, ["a.key.", "b.key."]);
    assert_eq!(&*keys[0].secret.0, b"0123456789");
    let file = dir.join("keys.conf").display().to_string();
    let cases = [
        (
            "key \"a.\" {\n  secret \"!!\";\n};",
            "2:10: tsig: the secret of key 'a.' is not base64",
        ),
        (
            "key \"a.\" {\n  algorithm hmac-sha256;\n};",
            "1:5: tsig: key 'a.' has no secret",
        ),
        (
            "key \"a.\" {\n  secrt \"YWJj\";\n};",
            "2:3: tsig: unexpected 'secrt', expected 'algorithm'",
        ),
        ("keys \"a.\" {};", "1:1: tsig: unexpected 'keys', expected 'key'"),
        (
            "key \"a.\" {\n  secret \"YWJj\"\n}",
            "3:1: tsig: unexpected '}', expected ';'",
        ),
        (
            "key \"a.\" { secret \"YWJj\"; };\nkey \"A.\" { secret \"YWJj\"; };",
            "2:5: tsig: key 'a.' redefined",
        ),
        ("key \"a.\" { secret \"YWJj\";", "1:25: tsig: unexpected end of file"),
    ];
    for (text, want) in cases {
        let errors = load(text).expect_err(text);
        let want = format!("{file}:{want}");
        assert!(
            errors.iter().any(|e| e.starts_with(&want)),
            "{text}:\n{errors:?}\nwant {want}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn setup_reads_coredns_syntax_and_reports_each_mistake() {
    let load = |body: &str| {
        let text = format!(".:53 {{\n    {body}\n}}\n");
        crate::config::load_str(std::path::Path::new("/tmp/Corefile"), &text, 53)
            .map_err(|e| e.0.iter().map(ToString::to_string).collect::<Vec<_>>())
    };
    let c = load(
        "tsig example.org {\n        secret K. YWJj\n        require A AXFR\n        require_opcode update\n    }",
    )
    .expect("loads");
    let t = c.servers[0].tsig.clone().expect("tsig");
    assert_eq!(t.zones[0].to_string(), "example.org.");
    assert_eq!(
        (t.require.listed.clone(), t.require_opcode.listed.clone()),
        (vec![1, 252], vec![5])
    );
    assert!(
        format!("{t:?}").contains("Secret(3 bytes)"),
        "Debug hides secrets: {t:?}"
    );
    let cases = [
        (
            "tsig {\n        secret K. YWJj\n        secret k. YWJj\n    }",
            "/tmp/Corefile:4:16: tsig: key 'k.' redefined",
        ),
        (
            "tsig {\n        require A BOGUS\n    }",
            "/tmp/Corefile:3:19: tsig: unknown query type 'BOGUS'",
        ),
        ("tsig\n    tsig", "/tmp/Corefile:3:5: tsig: only one per server block"),
        (
            "tsig {\n        secrets /nonexistent/keys\n    }",
            "/tmp/Corefile:3:17: tsig: cannot read /nonexistent/keys",
        ),
    ];
    for (body, want) in cases {
        let errors = load(body).expect_err(body);
        assert!(
            errors.iter().any(|e| e.starts_with(want)),
            "{body}:\n{errors:?}\nwant {want}"
        );
    }
    // a KEY that is not base64 loads, as CoreDNS loads it, and verifies nothing
    let c = load("tsig {\n        secret test.key. test-key\n    }").expect("loads");
    let cfg = c.servers[0].tsig.clone().expect("tsig");
    assert!(cfg.keys[0].secret.0.is_empty(), "{cfg:?}");
    let t = Tsig::with(None, &cfg);
    let plain = query(OpCode::Query, RecordType::A);
    let mut out = Vec::new();
    for secret in [&b""[..], b"test-key"] {
        let asked = sign(&plain, KEY, SHA256, secret, NOW, 32);
        assert!(matches!(t.admit(&asked, NOW, &mut out), Admit::Answered), "{secret:?}");
        assert_eq!(outcome(&out), (9, Some(BADSIG)), "{secret:?}");
    }
}
