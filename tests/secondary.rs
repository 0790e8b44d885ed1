//! `secondary` against a real primary: BIND's `named`, started here on
//! 127.0.0.1 on a port of its own with a zone file the test writes.
//! Before the first transfer the zone answers SERVFAIL (never NXDOMAIN);
//! then clusterdns serves what named sends, follows a new serial when
//! named's NOTIFY comes (the SOA's refresh is an hour: only the NOTIFY
//! can explain it) by IXFR (named keeps the difference of its reloaded
//! file: `ixfr-from-differences`), sends the zone on with `transfer`, follows a new
//! serial on the SOA's refresh timer alone, serves the last copy while
//! named is down until the SOA's expire, then answers SERVFAIL, and
//! serves again once named is back. Every wait polls the answer with a
//! bound; none sleeps a fixed time.

mod common;

use std::time::{Duration, Instant};

use common::named::{named_or_skip, Named};
use common::zones::{ask, axfr, until, LIMIT};
use common::{temp_dir, Server};
use hickory_proto::rr::{Record, RecordType};

/// The zone named serves: `www` at `address`, with the SOA `timers`
/// (refresh retry expire).
fn zone(serial: u32, address: &str, timers: &str) -> String {
    format!(
        "$TTL 60\nexample.com. IN SOA ns.example.com. admin.example.com. {serial} {timers} 60\n\
         example.com. IN NS ns.example.com.\nns.example.com. IN A 127.0.0.1\n\
         www.example.com. IN A {address}\nmail.example.com. IN MX 10 www.example.com.\n"
    )
}

/// What named serves.
const ZONE: &[&str] = &["example.com"];

fn corefile(named_port: u16) -> String {
    format!(
        "example.com:0 {{\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    prometheus 127.0.0.1:0\n    secondary {{\n        transfer from 127.0.0.1:{named_port}\n    }}\n    transfer {{\n        to *\n    }}\n}}\n"
    )
}

#[test]
fn a_zone_from_bind_is_served_and_follows_its_notify() {
    let Some(bin) = named_or_skip("secondary notify") else {
        return;
    };
    let dir = temp_dir("secondary-notify");
    let file = dir.join("db.example.com");
    std::fs::write(&file, zone(1, "192.0.2.1", "3600 600 86400")).expect("write zone");
    let named_port = common::free_port();
    let server = Server::start(&dir, &corefile(named_port));
    // No primary yet: SERVFAIL, for a name that may exist and one that may not.
    assert_eq!(ask(server.dns, "www.example.com.").0, "SERVFAIL");
    assert_eq!(ask(server.dns, "nope.example.com.").0, "SERVFAIL");

    let named = Named::start(&bin, &dir, named_port, &[server.dns.port()], ZONE);
    let first = until(server.dns, "www.example.com.", ("NOERROR", "192.0.2.1"));
    assert_eq!(first, ("NOERROR".into(), "192.0.2.1".into()), "{}", named.log());
    assert_eq!(
        ask(server.dns, "nope.example.com.").0,
        "NXDOMAIN",
        "{:?}",
        server.log.lock().map(|l| l.clone())
    );

    // A new serial and named's NOTIFY: the SOA's refresh is an hour away.
    std::fs::write(&file, zone(2, "192.0.2.2", "3600 600 86400")).expect("rewrite zone");
    named.reload();
    let second = until(server.dns, "www.example.com.", ("NOERROR", "192.0.2.2"));
    assert_eq!(
        second,
        ("NOERROR".into(), "192.0.2.2".into()),
        "named:\n{}",
        named.log()
    );
    assert!(
        server.log_contains("notify from 127.0.0.1 for example.com"),
        "{:?}",
        server.log.lock().map(|l| l.clone())
    );
    // The first transfer was whole (nothing held); the second, the change.
    let log = named.log();
    assert!(
        log.contains("IXFR ended") && !log.contains("AXFR-style IXFR"),
        "named sent a diff:\n{log}"
    );
    assert!(
        server.log_contains("by IXFR (1 changes, serial 2)"),
        "{:?}\n{}",
        server.log.lock().map(|l| l.clone()),
        named.log()
    );
    assert_eq!(
        ask(server.dns, "nope.example.com.").0,
        "NXDOMAIN",
        "the rest of the zone kept"
    );

    // `transfer { to * }` sends the zone on, as it came.
    let records = axfr(server.dns, "example.com.");
    let soa = |r: &Record| r.record_type() == RecordType::SOA;
    assert!(records.first().is_some_and(soa) && records.last().is_some_and(soa));
    assert!(records.iter().any(|r| r.record_type() == RecordType::MX), "{records:?}");

    let served = server.metric_sum("coredns_dns_responses_total", "plugin=\"secondary\"");
    assert!(served >= 3.0, "answers counted under plugin=\"secondary\": {served}");
}

#[test]
fn refresh_retry_and_expire_follow_the_soa() {
    let Some(bin) = named_or_skip("secondary timers") else {
        return;
    };
    let dir = temp_dir("secondary-timers");
    let file = dir.join("db.example.com");
    // refresh 1 s, retry 1 s, expire 6 s; named sends no NOTIFY.
    std::fs::write(&file, zone(1, "192.0.2.1", "1 1 6")).expect("write zone");
    let named_port = common::free_port();
    let server = Server::start(&dir, &corefile(named_port));
    let named = Named::start(&bin, &dir, named_port, &[], ZONE);
    let first = until(server.dns, "www.example.com.", ("NOERROR", "192.0.2.1"));
    assert_eq!(first, ("NOERROR".into(), "192.0.2.1".into()), "{}", named.log());

    std::fs::write(&file, zone(2, "192.0.2.2", "1 1 6")).expect("rewrite zone");
    named.reload();
    let refreshed = until(server.dns, "www.example.com.", ("NOERROR", "192.0.2.2"));
    assert_eq!(refreshed, ("NOERROR".into(), "192.0.2.2".into()), "{}", named.log());

    // The primary goes away: the last copy is served until the expire,
    // then SERVFAIL.
    drop(named);
    let went = Instant::now();
    assert_eq!(ask(server.dns, "www.example.com.").1, "192.0.2.2", "served while fresh");
    let expired = until(server.dns, "www.example.com.", ("SERVFAIL", ""));
    assert_eq!(expired.0, "SERVFAIL");
    assert!(
        went.elapsed() >= Duration::from_secs(4),
        "expired after {:?}",
        went.elapsed()
    );

    // Back: served again at the next retry.
    let _named = Named::start(&bin, &dir, named_port, &[], ZONE);
    let back = until(server.dns, "www.example.com.", ("NOERROR", "192.0.2.2"));
    assert_eq!(back, ("NOERROR".into(), "192.0.2.2".into()));
}

/// test/secondary_test.go TestSecondaryZoneNotify: clusterdns on both
/// sides. The primary (`file` + `transfer { to SECONDARY }`) reloads a
/// new serial and sends NOTIFY; the secondary transfers at once (its SOA
/// refresh is two hours).
#[test]
fn a_clusterdns_secondary_follows_a_clusterdns_primary_by_notify() {
    let dir = temp_dir("secondary-pair");
    let primary_dir = dir.join("primary");
    std::fs::create_dir_all(&primary_dir).expect("primary dir");
    let soa = |serial: u32| {
        format!("$ORIGIN example.org.\n@ 3600 IN SOA sns.dns.icann.org. noc.dns.icann.org. {serial} 7200 3600 1209600 3600\n  3600 IN NS a.iana-servers.net.\n  3600 IN NS b.iana-servers.net.\n")
    };
    let file = primary_dir.join("db.primary");
    std::fs::write(&file, soa(2017042745)).expect("write zone");
    let secondary_port = common::free_port();
    let primary = Server::start(
        &primary_dir,
        &format!(
            "example.org:0 {{\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    file {} {{\n        reload 0.01s\n    }}\n    transfer {{\n        to 127.0.0.1:{secondary_port}\n    }}\n}}\n",
            file.display()
        ),
    );
    let secondary = Server::start(
        &dir,
        &format!(
            "example.org:{secondary_port} {{\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    secondary {{\n        transfer from {}\n    }}\n}}\n",
            primary.dns
        ),
    );
    let started = Instant::now();
    let first = loop {
        let answers = common::udp(secondary.dns, "example.org.", RecordType::SOA).answers;
        if !answers.is_empty() || started.elapsed() > LIMIT {
            break answers;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(!first.is_empty(), "the first transfer never came");
    assert_eq!(ask(secondary.dns, "www.example.org.").1, "", "no www yet");

    std::fs::write(&file, format!("{}www    IN A    127.0.0.1\n", soa(2017042746))).expect("rewrite zone");
    let got = until(secondary.dns, "www.example.org.", ("NOERROR", "127.0.0.1"));
    assert_eq!(got, ("NOERROR".into(), "127.0.0.1".into()));
    assert!(secondary.log_contains("notify from 127.0.0.1 for example.org"));
}

/// A Corefile reload that keeps the `secondary` directive as it was keeps
/// its zone: served on, though the primary is gone (a new block would
/// answer SERVFAIL until it could transfer). `marker` tells which
/// configuration serves.
fn reloadable(named_port: u16, marker: u8) -> String {
    format!(
        "example.com:0 {{\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    reload 2s 0s\n    hosts {{\n        192.0.2.{marker} marker.example.com\n        fallthrough\n    }}\n    secondary {{\n        transfer from 127.0.0.1:{named_port}\n    }}\n}}\n"
    )
}

#[test]
fn a_reload_keeping_the_directive_keeps_the_zone() {
    let Some(bin) = named_or_skip("secondary reload") else {
        return;
    };
    let dir = temp_dir("secondary-reload");
    std::fs::write(dir.join("db.example.com"), zone(1, "192.0.2.1", "3600 600 86400")).expect("write zone");
    let named_port = common::free_port();
    let server = Server::start(&dir, &reloadable(named_port, 10));
    let named = Named::start(&bin, &dir, named_port, &[], ZONE);
    let first = until(server.dns, "www.example.com.", ("NOERROR", "192.0.2.1"));
    assert_eq!(first, ("NOERROR".into(), "192.0.2.1".into()), "{}", named.log());
    drop(named);

    std::fs::write(dir.join("Corefile"), reloadable(named_port, 11)).expect("rewrite Corefile");
    let reloaded = until(server.dns, "marker.example.com.", ("NOERROR", "192.0.2.11"));
    assert_eq!(reloaded, ("NOERROR".into(), "192.0.2.11".into()), "the reload came");
    assert_eq!(
        ask(server.dns, "www.example.com."),
        ("NOERROR".into(), "192.0.2.1".into()),
        "{:?}",
        server.log.lock().map(|l| l.clone())
    );
}
