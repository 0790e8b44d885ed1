//! `transfer` of a `file` zone, against the real binary: a zone of
//! thousands of records goes out by AXFR in several messages (CoreDNS's
//! test/file_xfr_test.go TestLargeAXFR, with a query pipelined behind it
//! on the same connection); `kdig ... AXFR` from an address not in `to` is
//! refused; BIND (`named`) as a real secondary loads the zone, then
//! follows the zone file's new serial when NOTIFY tells it; and an SRV
//! keeps the case the zone file writes, in answers and transfers.

mod common;

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::zones::axfr;
use common::{installed, needs, read_frame, temp_dir, udp_raw, Server};
use hickory_proto::op::Message;
use hickory_proto::rr::{Name, RData, Record, RecordType};

fn corefile(zone_file: &Path, to: &str) -> String {
    format!(
        "example.com:0 {{\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    file {} {{\n        reload 100ms\n    }}\n    transfer {{\n        to {to}\n    }}\n}}\n",
        zone_file.display()
    )
}

/// A zone of `n` AAAA records below the apex, with serial `serial`.
fn zone(serial: u32, n: usize, address: &str) -> String {
    let mut text = format!("example.com. 60 IN SOA ns.example.com. admin.example.com. {serial} 60 60 60 60\n");
    text.push_str("example.com. 60 IN NS ns.example.com.\nns.example.com. 60 IN A 127.0.0.1\n");
    text.push_str(&format!("www.example.com. 60 IN A {address}\n"));
    for i in 0..n {
        text.push_str(&format!("{i}.example.com. 60 IN AAAA 2001:db8::1\n"));
    }
    text
}

#[test]
fn a_large_file_zone_goes_out_in_several_messages_and_the_connection_stays_open() {
    const AAAAS: usize = 6553; // CoreDNS's TestLargeAXFR
    let dir = temp_dir("xfer-file-large");
    let file = dir.join("db.example.com");
    std::fs::write(&file, zone(1, AAAAS, "192.0.2.1")).expect("write zone");
    let server = Server::start(&dir, &corefile(&file, "*"));
    let mut s = TcpStream::connect(server.dns).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    let axfr = common::query(1, "example.com.", RecordType::AXFR, None);
    let aaaa = common::query(2, "0.example.com.", RecordType::AAAA, None);
    s.write_all(&[common::framed(&axfr), common::framed(&aaaa)].concat())
        .expect("send both");
    let (mut records, mut messages) = (Vec::new(), 0);
    while records.len() < 2
        || records.last().map(|r: &hickory_proto::rr::Record| r.record_type()) != Some(RecordType::SOA)
    {
        let frame = read_frame(&mut s).expect("a transfer message");
        assert!(frame.len() <= 65_535);
        let m = Message::from_vec(&frame).expect("decodable");
        assert_eq!(
            m.metadata.id, 1,
            "the transfer's messages come before the pipelined query's reply"
        );
        records.extend(m.answers);
        messages += 1;
        assert!(messages < 1000, "the transfer never ends");
    }
    assert!(messages > 1, "{} records fit no single message", records.len());
    assert_eq!(records.first().map(|r| r.record_type()), Some(RecordType::SOA));
    // 2 SOA, 1 NS, the NS's A, www's A and every AAAA.
    assert_eq!(records.len(), AAAAS + 5);
    let reply = Message::from_vec(&read_frame(&mut s).expect("the pipelined reply")).expect("decodable");
    assert_eq!(reply.metadata.id, 2);
    assert_eq!(reply.answers.len(), 1);
    assert_eq!(reply.answers[0].record_type(), RecordType::AAAA);
}

#[test]
fn kdig_from_an_address_not_in_to_is_refused() {
    let Some(kdig) = needs("transfer_file kdig", installed("kdig"), "apt-get install knot-dnsutils") else {
        return;
    };
    let dir = temp_dir("xfer-file-kdig");
    let file = dir.join("db.example.com");
    std::fs::write(&file, zone(1, 3, "192.0.2.1")).expect("write zone");
    let server = Server::start(&dir, &corefile(&file, "127.0.0.2"));
    let ask = |from: &str| {
        let out = Command::new(&kdig)
            .args([
                "-b",
                from,
                "-p",
                &server.dns.port().to_string(),
                "@127.0.0.1",
                "example.com.",
                "AXFR",
            ])
            .output()
            .expect("run kdig");
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    };
    let listed = ask("127.0.0.2");
    assert!(
        listed.contains("www.example.com.") && listed.contains("2001:db8::1"),
        "{listed}"
    );
    assert_eq!(listed.matches("\tSOA\t").count(), 2, "SOA first and last:\n{listed}");
    let other = ask("127.0.0.3");
    assert!(other.contains("REFUSED"), "{other}");
}

struct Named(Child);

impl Drop for Named {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// What `named` answers for www.example.com A, polled until it is `want`
/// or 20 s pass.
fn named_until(port: u16, want: &str) -> String {
    let server = SocketAddr::from(([127, 0, 0, 1], port));
    let started = Instant::now();
    loop {
        let q = common::query(3, "www.example.com.", RecordType::A, None);
        let reply = udp_raw(server, &q).and_then(|b| Message::from_vec(&b).ok());
        let got = reply
            .and_then(|m| m.answers.first().map(|r| r.data.to_string()))
            .unwrap_or_default();
        if got == want || started.elapsed() > Duration::from_secs(20) {
            return got;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The TSIG key named and clusterdns share in the signed case.
const KEY: &str = "key.test.";
const SECRET: &str = "NoTCJU+DMqFWywaPyxSijrDEA/eC3nK0xi3AMEZuPVk=";

#[test]
fn bind_follows_a_file_zone_by_notify() {
    bind_follows("transfer_file bind", false);
}

/// named asks with TSIG (its SOA checks and transfers signed) and
/// clusterdns requires it: named verifies each message it is sent
/// (RFC 8945 §5.3.1), else it keeps no zone.
#[test]
fn bind_follows_a_file_zone_over_signed_transfers() {
    bind_follows("transfer_file bind tsig", true);
}

fn bind_follows(test: &str, signed: bool) {
    let Some(named) = needs(test, installed("named"), "apt-get install bind9") else {
        return;
    };
    let dir = temp_dir(if signed {
        "xfer-file-bind-tsig"
    } else {
        "xfer-file-bind"
    });
    let file = dir.join("db.example.com");
    std::fs::write(&file, zone(1, 3, "192.0.2.1")).expect("write zone");
    let port = common::free_port();
    let mut corefile = corefile(&file, &format!("127.0.0.1:{port}"));
    let (key, primary_key) = if signed {
        let tsig = format!("    tsig {{\n        secret {KEY} {SECRET}\n        require AXFR IXFR\n    }}\n}}\n");
        corefile = corefile.trim_end().trim_end_matches('}').to_string() + &tsig;
        let key = format!("key \"{KEY}\" {{\n    algorithm hmac-sha256;\n    secret \"{SECRET}\";\n}};\n");
        (key, format!(" key \"{KEY}\""))
    } else {
        (String::new(), String::new())
    };
    let server = Server::start(&dir, &corefile);
    let conf = format!(
        "{key}options {{\n    directory \"{d}\";\n    pid-file \"{d}/named.pid\";\n    listen-on port {port} {{ 127.0.0.1; }};\n    listen-on-v6 {{ none; }};\n    recursion no;\n    dnssec-validation no;\n    notify no;\n}};\ncontrols {{ }};\nzone \"example.com\" {{\n    type secondary;\n    primaries {{ 127.0.0.1 port {}{primary_key}; }};\n    file \"example.com.db\";\n}};\n",
        server.dns.port(),
        d = dir.display()
    );
    std::fs::write(dir.join("named.conf"), conf).expect("write named.conf");
    let log = std::fs::File::create(dir.join("named.log")).expect("named log");
    let _named = Named(
        Command::new(named)
            .args(["-g", "-u", "root", "-c"])
            .arg(dir.join("named.conf"))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start named"),
    );
    let log = || std::fs::read_to_string(dir.join("named.log")).unwrap_or_default();
    assert_eq!(
        named_until(port, "192.0.2.1"),
        "192.0.2.1",
        "named loads the zone:\n{}",
        log()
    );
    // A new serial: the file plugin reloads, NOTIFY, named transfers again
    // (its own refresh would wait the SOA's 60 s).
    std::fs::write(&file, zone(2, 3, "192.0.2.2")).expect("rewrite zone");
    assert_eq!(named_until(port, "192.0.2.2"), "192.0.2.2", "named follows:\n{}", log());
    assert!(log().contains("received notify for zone 'example.com'"), "{}", log());
    if signed {
        assert!(
            log().contains("TSIG key.test"),
            "named says it transferred with the key:\n{}",
            log()
        );
    }
}

/// A zone that writes names in mixed case, its printer `who` (serial `serial`).
fn mixed_case(serial: u32, who: &str) -> String {
    format!(
        "$ORIGIN Example.com.\n@ 60 IN SOA NS Admin {serial} 60 60 60 60\n@ 60 IN NS NS\nNS 60 IN A 127.0.0.1\n{who}._ipp._tcp 60 IN SRV 0 0 631 Printer.Example.com.\nPrinter 60 IN A 192.0.2.7\nWWW 60 IN CNAME Printer\n"
    )
}

/// The one record of `rtype` in `records`.
fn only(records: &[Record], rtype: RecordType) -> &Record {
    let mut of = records.iter().filter(|r| r.record_type() == rtype);
    let r = of.next().unwrap_or_else(|| panic!("no {rtype} in {records:?}"));
    assert!(of.next().is_none(), "one {rtype} in {records:?}");
    r
}

fn assert_written(got: &Name, want: &str) {
    assert!(
        got.eq_case(&Name::from_ascii(want).expect("name")),
        "{got} is not written {want}"
    );
}

/// CoreDNS's zone_test.go TestInsertPreservesSRVCase over the wire: an
/// SRV's owner and target keep the zone file's case, asked in another case
/// and in a transfer, also after a reload; other owners and CNAME targets
/// are lowercased, as CoreDNS stores them.
#[test]
fn a_file_zone_answers_and_transfers_an_srv_in_the_case_its_file_writes() {
    let dir = temp_dir("xfer-file-case");
    let file = dir.join("db.example.com");
    std::fs::write(&file, mixed_case(1, "MyPrinter")).expect("write zone");
    let server = Server::start(&dir, &corefile(&file, "*"));
    let ask = |name: &str, rtype| {
        let reply = udp_raw(server.dns, &common::query(3, name, rtype, None)).expect("a reply");
        Message::from_vec(&reply).expect("decodable")
    };
    let srv = ask("myprinter._IPP._TCP.example.COM.", RecordType::SRV);
    let answer = only(&srv.answers, RecordType::SRV);
    assert_written(&answer.name, "MyPrinter._ipp._tcp.Example.com.");
    let RData::SRV(data) = &answer.data else {
        panic!("{answer}")
    };
    assert_written(&data.target, "Printer.Example.com.");
    assert_written(&only(&srv.additionals, RecordType::A).name, "printer.example.com.");
    let cname = ask("WWW.EXAMPLE.COM.", RecordType::CNAME);
    let answer = only(&cname.answers, RecordType::CNAME);
    assert_written(&answer.name, "www.example.com.");
    assert_eq!(answer.data.to_string(), "printer.example.com.");

    let records = axfr(server.dns, "example.com.");
    assert_written(&records[0].name, "example.com.");
    let srv = only(&records, RecordType::SRV);
    assert_written(&srv.name, "MyPrinter._ipp._tcp.Example.com.");
    assert_eq!(srv.data.to_string(), "0 0 631 Printer.Example.com.");
    assert_written(&only(&records, RecordType::CNAME).name, "www.example.com.");

    // The reloaded zone (new serial, another spelling) is read the same way.
    std::fs::write(&file, mixed_case(2, "YourPRINTER")).expect("rewrite zone");
    let started = Instant::now();
    let records = loop {
        let records = axfr(server.dns, "example.com.");
        if records[0].data.to_string().contains(" 2 60 ") || started.elapsed() > Duration::from_secs(20) {
            break records;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_written(
        &only(&records, RecordType::SRV).name,
        "YourPRINTER._ipp._tcp.Example.com.",
    );
}
