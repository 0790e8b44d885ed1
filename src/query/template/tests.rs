//! Rendered records are read as zone-file lines, as miekg/dns's `NewRR` does.

use super::parse_rr;

#[test]
fn record_lines_default_like_new_rr() {
    let r = parse_rr("ip-10-1-2-3.example. 60 IN A 10.1.2.3").expect("A");
    assert_eq!(r.to_string(), "ip-10-1-2-3.example. 60 IN A 10.1.2.3");
    let r = parse_rr("foogle.com CNAME google.com").expect("relative names, no TTL");
    assert_eq!(r.to_string(), "foogle.com. 3600 IN CNAME google.com.");
    let r = parse_rr("invalid. 60 IN SOA ns.invalid. hostmaster.invalid. (1 60 60 60 60)").expect("SOA");
    assert_eq!(r.ttl, 60);
    for bad in ["", "x. 60 IN A 999.1.1.1", "x. 60 IN BOGUS 1", "not a record"] {
        assert!(parse_rr(bad).is_err(), "{bad:?}");
    }
}
