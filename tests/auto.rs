//! `auto` against the real binary: zone files written by the test into a
//! directory are picked up at the `reload` interval, a new serial
//! replaces a zone (the same serial keeps it, as CoreDNS), a removed file
//! takes its zone away, a name with no zone is REFUSED (CoreDNS's auto
//! with nothing after it), and answers count under plugin="auto". Every
//! wait polls the answer with a bound.

mod common;

use std::path::Path;

use common::zones::{ask, until};
use common::{temp_dir, Server};

fn zone(origin: &str, serial: u32, address: &str) -> String {
    format!(
        "$ORIGIN {origin}.\n$TTL 60\n@ IN SOA ns admin {serial} 7200 3600 1209600 60\n@ IN NS ns\nns IN A 127.0.0.1\nwww IN A {address}\n"
    )
}

fn write(dir: &Path, file: &str, text: &str) {
    // Written aside and renamed, so a scan never reads half a file.
    let tmp = dir.join(format!(".{file}.tmp"));
    std::fs::write(&tmp, text).expect("write zone");
    std::fs::rename(&tmp, dir.join(file)).expect("rename zone");
}

fn pair(rcode: &str, address: &str) -> (String, String) {
    (rcode.to_string(), address.to_string())
}

#[test]
fn zone_files_come_change_and_go_at_the_reload_interval() {
    let dir = temp_dir("auto-dir");
    let zones = dir.join("zones");
    std::fs::create_dir_all(zones.join("sub")).expect("zones dir");
    let corefile = format!(
        "org:0 {{\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    prometheus 127.0.0.1:0\n    auto {{\n        directory {} db\\.(.*) {{1}}\n        reload 100ms\n    }}\n}}\n",
        zones.display()
    );
    let server = Server::start(&dir, &corefile);
    assert_eq!(ask(server.dns, "www.example.org."), pair("REFUSED", ""), "no zone yet");

    write(&zones, "db.example.org", &zone("example.org", 1, "192.0.2.1"));
    let added = until(server.dns, "www.example.org.", ("NOERROR", "192.0.2.1"));
    assert_eq!(added, pair("NOERROR", "192.0.2.1"));

    // Same serial, new data: kept (as CoreDNS). A new zone in a
    // subdirectory written after it shows the scan saw both.
    write(&zones, "db.example.org", &zone("example.org", 1, "192.0.2.9"));
    write(&zones.join("sub"), "db.other.org", &zone("other.org", 1, "192.0.2.7"));
    let other = until(server.dns, "www.other.org.", ("NOERROR", "192.0.2.7"));
    assert_eq!(other, pair("NOERROR", "192.0.2.7"));
    assert_eq!(
        ask(server.dns, "www.example.org."),
        pair("NOERROR", "192.0.2.1"),
        "same serial kept"
    );

    write(&zones, "db.example.org", &zone("example.org", 2, "192.0.2.2"));
    let changed = until(server.dns, "www.example.org.", ("NOERROR", "192.0.2.2"));
    assert_eq!(changed, pair("NOERROR", "192.0.2.2"));
    assert_eq!(ask(server.dns, "nope.example.org.").0, "NXDOMAIN");

    std::fs::remove_file(zones.join("db.example.org")).expect("remove zone");
    let removed = until(server.dns, "www.example.org.", ("REFUSED", ""));
    assert_eq!(removed, pair("REFUSED", ""));
    assert_eq!(
        ask(server.dns, "www.other.org."),
        pair("NOERROR", "192.0.2.7"),
        "the other zone stays"
    );

    let served = server.metric_sum("coredns_dns_responses_total", "plugin=\"auto\"");
    assert!(served >= 4.0, "answers counted under plugin=\"auto\": {served}");
}
