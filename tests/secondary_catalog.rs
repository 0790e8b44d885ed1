//! `secondary ... { catalog }` against a real primary: BIND's `named`
//! serves an RFC 9432 catalog zone (`catalog.example`) listing two member
//! zones, and the members themselves. Two clusterdns servers take the
//! catalog from it: one with every member, one with `catalog example.org
//! example.edu` (members below those names only). Both members are
//! answered (not the filtered server's example.net) and sent on by
//! `transfer`; a member's own
//! change comes by its NOTIFY; then the catalog lists example.edu and no
//! longer example.net, and named's NOTIFY for the catalog (its refresh is
//! an hour) makes example.edu answered and example.net REFUSED.

mod common;

use common::named::{named_or_skip, Named};
use common::zones::{ask, axfr, until};
use common::{temp_dir, Server};
use hickory_proto::rr::RecordType;

/// The zones named serves.
const ZONES: &[&str] = &["catalog.example", "example.org", "example.net", "example.edu"];

/// A zone of named's: `www` at `address`.
fn member(origin: &str, serial: u32, address: &str) -> String {
    format!(
        "$TTL 60\n{origin}. IN SOA ns.{origin}. admin.{origin}. {serial} 3600 600 86400 60\n\
         {origin}. IN NS ns.{origin}.\nns.{origin}. IN A 127.0.0.1\nwww.{origin}. IN A {address}\n"
    )
}

/// The catalog (schema version 2), listing `members` as `(ID, zone)`.
fn catalog(serial: u32, members: &[(&str, &str)]) -> String {
    let listed: String = members
        .iter()
        .map(|(id, zone)| format!("{id}.zones.catalog.example. IN PTR {zone}.\n"))
        .collect();
    format!(
        "$TTL 0\ncatalog.example. IN SOA invalid. invalid. {serial} 3600 600 86400 0\n\
         catalog.example. IN NS invalid.\nversion.catalog.example. IN TXT \"2\"\n{listed}"
    )
}

/// A `.` block taking the catalog from named, with `catalog{members}`;
/// the zones sent on (`transfer`).
fn corefile(named_port: u16, members: &str) -> String {
    format!(
        ".:0 {{\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    prometheus 127.0.0.1:0\n    secondary catalog.example {{\n        transfer from 127.0.0.1:{named_port}\n        catalog{members}\n    }}\n    transfer {{\n        to *\n    }}\n}}\n"
    )
}

fn write(dir: &std::path::Path, zone: &str, text: &str) {
    std::fs::write(dir.join(format!("db.{zone}")), text).expect("write zone");
}

fn answered(server: &Server, name: &str, address: &str, why: &str) {
    let got = until(server.dns, name, ("NOERROR", address));
    let log = server.log.lock().map(|l| l.join("\n")).unwrap_or_default();
    assert_eq!(got, ("NOERROR".into(), address.into()), "{why}: {name}\n{log}");
}

fn refused(server: &Server, name: &str, why: &str) {
    assert_eq!(until(server.dns, name, ("REFUSED", "")).0, "REFUSED", "{why}: {name}");
}

#[test]
fn catalog_members_are_served_added_and_removed() {
    let Some(bin) = named_or_skip("secondary catalog") else {
        return;
    };
    let dir = temp_dir("secondary-catalog");
    write(
        &dir,
        "catalog.example",
        &catalog(1, &[("org", "example.org"), ("net", "example.net")]),
    );
    write(&dir, "example.org", &member("example.org", 1, "192.0.2.1"));
    write(&dir, "example.net", &member("example.net", 1, "192.0.2.2"));
    write(&dir, "example.edu", &member("example.edu", 1, "192.0.2.3"));
    let named_port = common::free_port();
    let all = Server::start(&dir, &corefile(named_port, ""));
    let some_dir = dir.join("filtered");
    std::fs::create_dir_all(&some_dir).expect("dir");
    let some = Server::start(&some_dir, &corefile(named_port, " example.org example.edu"));
    let notify = [all.dns.port(), some.dns.port()];
    let named = Named::start(&bin, &dir, named_port, &notify, ZONES);

    answered(&all, "www.example.org.", "192.0.2.1", "a member");
    answered(&all, "www.example.net.", "192.0.2.2", "a member");
    refused(&all, "www.example.edu.", "not a member yet");
    answered(&some, "www.example.org.", "192.0.2.1", "a member taken");
    // Outside `catalog example.org example.edu` the name is not the line's:
    // SERVFAIL, as for any name of the block no plugin answers.
    let outside = until(some.dns, "www.example.net.", ("SERVFAIL", ""));
    assert_eq!(outside.0, "SERVFAIL", "a member outside the members taken");
    assert!(some.logged("skipped 1 member zones from catalog catalog.example."));
    assert_eq!(ask(all.dns, "nope.example.org.").0, "NXDOMAIN", "{}", named.log());
    // A member and the catalog are sent on as they came.
    let has = |s: &Server, zone: &str, rtype: RecordType| axfr(s.dns, zone).iter().any(|r| r.record_type() == rtype);
    assert!(has(&all, "example.org.", RecordType::A) && has(&all, "catalog.example.", RecordType::PTR));
    assert!(has(&some, "example.org.", RecordType::A) && has(&some, "catalog.example.", RecordType::PTR));

    // A member's own change: its NOTIFY (refresh is an hour away).
    write(&dir, "example.org", &member("example.org", 2, "192.0.2.11"));
    named.reload();
    answered(&all, "www.example.org.", "192.0.2.11", "a member's NOTIFY");

    // The catalog now lists example.edu and no longer example.net.
    write(
        &dir,
        "catalog.example",
        &catalog(2, &[("org", "example.org"), ("edu", "example.edu")]),
    );
    named.reload();
    answered(&all, "www.example.edu.", "192.0.2.3", "a member added");
    answered(&some, "www.example.edu.", "192.0.2.3", "a member added, taken");
    refused(&all, "www.example.net.", "a member removed");
    answered(&all, "www.example.org.", "192.0.2.11", "a member kept");
    assert!(all.logged("removed catalog member zone example.net. from catalog catalog.example."));
    assert!(all.logged("notify from 127.0.0.1 for catalog.example"));
    let served = all.metric_sum("coredns_dns_responses_total", "plugin=\"secondary\"");
    assert!(
        served >= 4.0,
        "members' answers counted under plugin=\"secondary\": {served}"
    );
}
