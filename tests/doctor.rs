//! `clusterdns doctor` as an operator runs it, against a fake /proc tree.

mod common;

use std::process::Command;

#[test]
fn doctor_reports_a_sick_node_with_fixes() {
    let root = common::temp_dir("doctor");
    for (path, text) in [
        ("proc/sys/net/core/rmem_max", "212992\n"),
        ("proc/sys/net/netfilter/nf_conntrack_count", "980\n"),
        ("proc/sys/net/netfilter/nf_conntrack_max", "1000\n"),
        ("proc/sys/net/ipv4/neigh/default/gc_thresh3", "1024\n"),
    ] {
        let p = root.join(path);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, text).expect("write");
    }
    let out = Command::new(env!("CARGO_BIN_EXE_clusterdns"))
        .args(["doctor", "-conf", "zones/Corefile", "--root"])
        .arg(&root)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run doctor");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "a critical finding fails the command:\n{text}"
    );
    for want in [
        "WARNING  udp_rmem_max: net.core.rmem_max is 212992 bytes",
        "fix: sysctl -w net.core.rmem_max=8388608",
        "CRITICAL conntrack_fill: the conntrack table is 98% full",
        "fix: sysctl -w net.netfilter.nf_conntrack_max=4000",
        "WARNING  neighbour_table: gc_thresh1/2/3 are 0/0/1024",
        "gc_thresh3=4096",
    ] {
        assert!(text.contains(want), "missing '{want}' in:\n{text}");
    }
}
