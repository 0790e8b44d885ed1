//! Reading a zone file into a [`Zone`]. hickory-proto's parser does the
//! text (directives, parentheses, relative names, TTLs); it has no DNAME,
//! so the type word of a DNAME record is handed to it as ANAME (a type
//! whose data is one name too, and which CoreDNS does not know, so no zone
//! CoreDNS loads holds one) and turned back into a DNAME (type 39, its
//! target uncompressed as RFC 6672 asks) afterwards ([`super::text`] does
//! the text's rewriting). A signed zone loads
//! with its DNSSEC records (RRSIG, NSEC, DNSKEY, DS...: [`super::dnssec`]
//! reads them); an NSEC3 zone does not load, as in CoreDNS. As CoreDNS: owners
//! are lowercased but an SRV's, which keeps the file's case (as its target
//! and a PTR's, DNAME's and NAPTR's names do, [`super::case`]); the targets
//! of NS, CNAME and MX and the names of the SOA are lowercased; a zone
//! without a SOA does not load.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use hickory_proto::rr::rdata::{CNAME, MX, NS, NULL, PTR};
use hickory_proto::rr::{Name, RData, Record, RecordSet, RecordType, RrKey};

use super::case::{can_mark, keep_case, kept};
use super::index::{Node, Zone};
use super::text::{at_origin, rewrite, undot, which_type, with_default_ttl};

/// Reads and parses the zone file at `path` for `origin`.
pub fn parse_file(path: &Path, origin: &Name) -> Result<Zone, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    parse(&text, Some(path), origin)
}

/// Parses zone-file `text` for `origin` (`path` names it in errors and
/// anchors `$INCLUDE`).
pub fn parse(text: &str, path: Option<&Path>, origin: &Name) -> Result<Zone, String> {
    match which_type(text, &["ANAME", "NSEC3", "NSEC3PARAM"]) {
        Some(0) => return Err("ANAME is not a record type CoreDNS knows".into()),
        Some(_) => return Err("NSEC3 zones are not supported (CoreDNS refuses them too)".into()),
        None => {}
    }
    let (keep, sets) = read(text, path, origin)?;
    index(origin.to_lowercase(), sets, keep)
}

/// A zone from records received by zone transfer (a zone kept by AXFR): the
/// DNSSEC records left out as a zone file's are, names kept as sent.
pub fn from_records(origin: &Name, records: Vec<Record>) -> Result<Zone, String> {
    let mut sets: BTreeMap<RrKey, RecordSet> = BTreeMap::new();
    for r in records {
        if r.record_type().is_dnssec() {
            continue;
        }
        let key = RrKey::new(r.name.to_lowercase().into(), r.record_type());
        sets.entry(key)
            .or_insert_with(|| RecordSet::new(r.name.clone(), r.record_type(), 0))
            .insert(r, 0);
    }
    index(origin.to_lowercase(), sets, false)
}

/// The file's record sets as hickory's parser reads them, and whether
/// their names carry the case marks ([`super::case`]).
fn read(text: &str, path: Option<&Path>, origin: &Name) -> Result<(bool, BTreeMap<RrKey, RecordSet>), String> {
    let text = &*super::words::one_line(text);
    let markable = can_mark(text);
    let rewritten = rewrite(text);
    let text = at_origin(&rewritten, origin);
    let read = |keep: bool| {
        let text = with_default_ttl(&if keep { keep_case(&text) } else { Cow::Borrowed(&*text) });
        let parser =
            hickory_proto::serialize::txt::Parser::new(text, path.map(Path::to_path_buf), Some(origin.clone()));
        parser.parse().map_err(|e| e.to_string())
    };
    // The zone is the origin asked for (a later $ORIGIN moves only relative
    // names). A zone the case marks break (a name they push past 255 bytes
    // with its origin) is read as it was before they existed: lowercased.
    let (keep, (_, sets)) = match read(markable) {
        Ok(parsed) => (markable, parsed),
        Err(_) if markable => (false, read(false)?),
        Err(e) => return Err(e),
    };
    Ok((keep, sets))
}

/// The zone of the records: its SOA, the apex NS, the nodes by owner,
/// the DNAMEs and every name that exists (the empty non-terminals too).
fn index(origin: Name, sets: BTreeMap<RrKey, RecordSet>, keep: bool) -> Result<Zone, String> {
    let mut soa = None;
    let mut apex_ns = Vec::new();
    let mut nodes: HashMap<Name, Node> = HashMap::new();
    let mut dnames = HashMap::new();
    for (_, set) in sets {
        for record in set.records_without_rrsigs() {
            let r = match super::dnssec::record(record, &origin) {
                Some(read) => normal(read?, keep),
                None => normal(record.clone(), keep),
            };
            let owner = r.name.to_lowercase();
            // As CoreDNS, the zone's SOA is the one in the file (the apex's, if there is one there).
            if r.record_type() == RecordType::SOA && (owner == origin || soa.is_none()) {
                soa = Some(r);
                continue;
            }
            if !origin.zone_of(&owner) {
                continue; // never reachable (CoreDNS loads it and never serves it)
            }
            match r.record_type() {
                RecordType::NS if owner == origin => {
                    apex_ns.push(r);
                    continue;
                }
                RecordType::DNAME => {
                    if let Some(target) = dname_target(&r) {
                        dnames.entry(owner.clone()).or_insert(target);
                    }
                }
                _ => {}
            }
            nodes
                .entry(owner)
                .or_default()
                .entry(r.record_type())
                .or_default()
                .push(r);
        }
    }
    let soa = soa.ok_or_else(|| format!("zone {origin} has no SOA record"))?;
    let names = names(&origin, &nodes);
    let mut canonical = Vec::new();
    if nodes.values().any(|n| n.contains_key(&RecordType::NSEC)) {
        canonical = nodes.keys().cloned().collect();
        canonical.push(origin.clone());
        canonical.sort_unstable();
        canonical.dedup();
    }
    Ok(Zone {
        origin,
        soa,
        apex_ns,
        nodes,
        dnames,
        names,
        canonical,
    })
}

/// The origin, every owner and every name between them and the origin.
fn names(origin: &Name, nodes: &HashMap<Name, Node>) -> HashSet<Name> {
    let mut names = HashSet::new();
    names.insert(origin.clone());
    for owner in nodes.keys() {
        let mut n = owner.clone();
        while n.num_labels() > origin.num_labels() && names.insert(n.clone()) {
            n = n.base_name();
        }
    }
    names
}

/// A record as CoreDNS stores it: every name as the file writes it (see
/// [`super::case`]; `keep`: the text could be marked), but the owner (not
/// an SRV's) and the names in NS, CNAME, MX and SOA data lowercased; an
/// ANAME back to DNAME.
fn normal(mut r: Record, keep: bool) -> Record {
    let read = |n: Name| if keep { kept(n) } else { undot(n) };
    let lower = |n: Name| read(n).to_lowercase();
    r.name = read(r.name);
    if r.record_type() != RecordType::SRV {
        r.name = r.name.to_lowercase();
    }
    r.data = match r.data {
        RData::NS(n) => RData::NS(NS(lower(n.0))),
        RData::CNAME(c) => RData::CNAME(CNAME(lower(c.0))),
        RData::MX(m) => RData::MX(MX::new(m.preference, lower(m.exchange))),
        RData::SOA(mut s) => {
            s.mname = lower(s.mname);
            s.rname = lower(s.rname);
            RData::SOA(s)
        }
        RData::SRV(mut s) => {
            s.target = read(s.target);
            RData::SRV(s)
        }
        RData::PTR(p) => RData::PTR(PTR(read(p.0))),
        RData::NAPTR(mut n) => {
            n.replacement = read(n.replacement);
            RData::NAPTR(n)
        }
        RData::ANAME(a) => dname(&read(a.0)),
        other => other,
    };
    r
}

/// A DNAME's data: its target in wire form, uncompressed.
pub(crate) fn dname(target: &Name) -> RData {
    let mut wire = Vec::with_capacity(target.len() + 1);
    for label in target.iter() {
        wire.push(u8::try_from(label.len()).unwrap_or(63));
        wire.extend_from_slice(label);
    }
    wire.push(0);
    RData::Unknown {
        code: RecordType::DNAME,
        rdata: NULL::with(wire),
    }
}

/// The target of a DNAME record made by [`dname`].
pub(crate) fn dname_target(r: &Record) -> Option<Name> {
    let RData::Unknown { rdata, .. } = &r.data else {
        return None;
    };
    let mut labels = Vec::new();
    let mut rest = rdata.anything.as_slice();
    while let Some((&len, tail)) = rest.split_first() {
        if len == 0 {
            return Name::from_labels(labels).ok();
        }
        let (label, tail) = tail.split_at_checked(usize::from(len))?;
        labels.push(label);
        rest = tail;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const ZONE: &str = "$ORIGIN example.org.\n@ 3600 IN SOA ns hostmaster ( 1 2 3\n 4 5 )\n  IN NS ns\nns IN A 192.0.2.1\ndname 300 IN DNAME Other\n\tIN A 192.0.2.2\nWWW IN CNAME Dname\n";

    #[test]
    fn dname_survives_the_parser_and_names_are_lowercased() {
        let origin = Name::from_ascii("example.org.").expect("test data");
        let z = parse(ZONE, None, &origin).expect("test data");
        let owner = Name::from_ascii("dname.example.org.").expect("test data");
        let d = z.get(&owner, RecordType::DNAME);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].ttl, 300);
        let target = dname_target(&d[0]).expect("test data");
        assert_eq!(target, Name::from_ascii("other.example.org.").expect("test data"));
        assert_eq!(z.get(&owner, RecordType::A).len(), 1);
        let www = z.get(
            &Name::from_ascii("www.example.org.").expect("test data"),
            RecordType::CNAME,
        );
        assert_eq!(www[0].name.to_ascii(), "www.example.org.");
        assert_eq!(www[0].data.to_string(), "dname.example.org.");
    }

    #[test]
    fn at_in_data_escaped_owners_missing_ttls_and_a_later_origin_load_as_miekg_reads_them() {
        let origin = Name::from_ascii("example.org.").expect("test data");
        let text = "@ IN SOA ns hostmaster 1 2 3 4 5\ncname IN CNAME @ ; the apex\n$ORIGIN sub.example.org.\nsrv IN SRV 0 0 80 @\nHome\\032Media IN A 192.0.2.1\n";
        let z = parse(text, None, &origin).expect("test data");
        assert_eq!(z.soa().ttl, 3600, "no $TTL and no TTL: 3600");
        let cname = z.get(
            &Name::from_ascii("cname.example.org.").expect("test data"),
            RecordType::CNAME,
        );
        assert_eq!(cname[0].data.to_string(), "example.org.");
        let srv = z.get(
            &Name::from_ascii("srv.sub.example.org.").expect("test data"),
            RecordType::SRV,
        );
        assert_eq!(
            srv[0].data.to_string(),
            "0 0 80 sub.example.org.",
            "`@` is the $ORIGIN in force"
        );
        let spaced = Name::from_labels([&b"home media"[..], b"sub", b"example", b"org"]).expect("test data");
        assert_eq!(z.get(&spaced, RecordType::A).len(), 1, "\\032 is a space in the label");
    }

    #[test]
    fn underscores_inside_labels_and_a_bare_at_in_txt_read_as_miekg_reads_them() {
        let origin = Name::from_ascii("example.org.").expect("test data");
        let text = "$ORIGIN example.org.\n@ 60 IN SOA a b 1 2 3 4 5\nmy_host 60 IN A 192.0.2.1\nc 60 IN CNAME my_host\n_s._tcp 60 IN SRV 0 0 1 my_host\nm 60 MX 1 my_mail.example.org.\nt 60 IN TXT @\n";
        let z = parse(text, None, &origin).expect("test data");
        let name = |n: &str| Name::from_labels(n.split('.').map(str::as_bytes)).expect("test data");
        assert_eq!(z.get(&name("my_host.example.org"), RecordType::A).len(), 1);
        let target = |owner: &str, t| z.get(&name(owner), t)[0].data.to_string();
        assert_eq!(target("c.example.org", RecordType::CNAME), "my_host.example.org.");
        assert_eq!(
            target("_s._tcp.example.org", RecordType::SRV),
            "0 0 1 my_host.example.org."
        );
        assert_eq!(target("m.example.org", RecordType::MX), "1 my_mail.example.org.");
        assert_eq!(
            target("t.example.org", RecordType::TXT),
            "@",
            "the text @, not the origin"
        );
    }

    #[test]
    fn a_signed_zone_loads_with_its_dnssec_records() {
        let origin = Name::from_ascii("example.org.").expect("test data");
        let text = "$ORIGIN example.org.\n@ 60 IN SOA a b 1 2 3 4 5\n 60 RRSIG SOA 5 2 60 (\n 20170702091734 20170602091734 54282 example.org.\n mr5eQtFs1G+/ ) ; signed\n 60 NSEC www NS SOA RRSIG NSEC\nwww 60 IN A 192.0.2.1\n 90 DS 10056 5 1 EE72CABD\n 60 TXT \"kept\"\n";
        let z = parse(text, None, &origin).expect("test data");
        let kinds: Vec<RecordType> = z.records().map(Record::record_type).collect();
        assert_eq!(kinds.len(), 6, "{kinds:?}");
        for kind in [RecordType::RRSIG, RecordType::NSEC, RecordType::DS, RecordType::TXT] {
            assert!(kinds.contains(&kind), "{kind}: {kinds:?}");
        }
        let www = Name::from_ascii("www.example.org.").expect("test data");
        let ds = z.get(&www, RecordType::DS);
        assert_eq!((ds.len(), ds[0].ttl), (1, 90), "its own TTL");
        let nsec = &z.get(&origin, RecordType::NSEC)[0];
        let RData::Unknown { rdata, .. } = &nsec.data else {
            panic!("{nsec:?}")
        };
        assert!(
            rdata.anything.starts_with(b"\x03www\x07example\x03org\x00"),
            "relative next owner"
        );
        let bad = text.replace("EE72CABD", "EE72CAB");
        let e = parse(&bad, None, &origin).expect_err("odd digest");
        assert!(e.contains("www.example.org. DS: bad digest"), "{e}");
    }

    /// A TXT record's strings spread over lines in parentheses (as DKIM
    /// keys are written), `;` and all, are its strings as written.
    #[test]
    fn txt_strings_over_several_lines_are_read_as_written() {
        let origin = Name::from_ascii("example.org.").expect("test data");
        let text = "@ 500 IN SOA ns1.outside.edu. root.example.org. ( 8 ; serial\n 6048 4000 2419200 6048 )\nsel._domainkey 500 IN TXT ( \"v=DKIM1; k=rsa; \" ; first\n  \"p=MIIB\" )\nnext 500 IN A 192.0.2.9\n";
        let z = parse(text, None, &origin).expect("test data");
        let name = Name::from_ascii("sel._domainkey.example.org.").expect("test data");
        let txt = z.get(&name, RecordType::TXT);
        assert_eq!(txt.len(), 1, "{txt:?}");
        let RData::TXT(t) = &txt[0].data else { panic!("{txt:?}") };
        let strings: Vec<&[u8]> = t.txt_data.iter().map(|s| &s[..]).collect();
        assert_eq!(strings, [&b"v=DKIM1; k=rsa; "[..], b"p=MIIB"]);
        let next = Name::from_ascii("next.example.org.").expect("test data");
        assert_eq!(z.get(&next, RecordType::A).len(), 1, "the record after it");
        // an `@` in a quoted string is text; one in data is the origin
        let text = "@ 500 IN SOA ns1.outside.edu. root.example.org. 8 6048 4000 2419200 6048\nt 500 IN TXT \"a @ b\"\nc 500 IN CNAME @\n";
        let z = parse(text, None, &origin).expect("test data");
        let t = z.get(&Name::from_ascii("t.example.org.").expect("test data"), RecordType::TXT);
        assert_eq!(t.first().map(|r| r.data.to_string()).as_deref(), Some("a @ b"));
        let c = z.get(
            &Name::from_ascii("c.example.org.").expect("test data"),
            RecordType::CNAME,
        );
        assert_eq!(c.first().map(|r| r.data.to_string()).as_deref(), Some("example.org."));
    }

    /// Names near DNS's 255-byte limit, which the case marks would push
    /// past it, load as they did before the marks: lowercased.
    #[test]
    fn a_zone_the_case_marks_would_break_loads_lowercased() {
        let origin = Name::from_ascii("example.org.").expect("test data");
        let label = format!("A{}", "b".repeat(56));
        let owner = [label.as_str(); 4].join(".");
        let text = format!(
            "$ORIGIN Example.ORG.\n@ 500 IN SOA ns1.outside.edu. root.example.org. 8 6048 4000 2419200 6048\n{owner} 500 IN A 192.0.2.2\n"
        );
        let z = parse(&text, None, &origin).expect("it loaded before the case marks existed");
        let name = Name::from_ascii(format!("{owner}.example.org.").to_lowercase()).expect("test data");
        assert_eq!(z.get(&name, RecordType::A).len(), 1, "{name}");
    }

    #[test]
    fn an_escaped_dot_in_an_owner_label_is_kept() {
        let origin = Name::from_ascii("campus.edu.").expect("test data");
        let text = "@ 500 IN SOA ns1.outside.edu. root.campus.edu. 8 6048 4000 2419200 6048\nhas\\046dot 500 IN A 192.0.2.2\nb\\.c 500 IN A 192.0.2.3\n";
        let z = parse(text, None, &origin).expect("test data");
        for (label, addr) in [(&b"has.dot"[..], "192.0.2.2"), (b"b.c", "192.0.2.3")] {
            let name = Name::from_labels([label, b"campus", b"edu"]).expect("test data");
            let a = z.get(&name, RecordType::A);
            assert_eq!(a.len(), 1, "{name}");
            assert_eq!(a[0].data.to_string(), addr);
        }
    }

    #[test]
    fn a_name_called_dname_is_not_a_type() {
        let text = "dname IN A 192.0.2.1\n( x ) IN TXT \"DNAME\"\n";
        assert_eq!(rewrite(text), text);
        assert_eq!(rewrite("a 30 in dname b\n"), "a 30 in ANAME b\n");
    }

    #[test]
    fn aname_and_missing_soa_are_refused() {
        let origin = Name::from_ascii("example.org.").expect("test data");
        assert!(parse("@ IN SOA a b 1 2 3 4 5\nx IN ANAME y\n", None, &origin).is_err());
        assert!(parse("@ IN SOA a b 1 2 3 4 5\n@ IN NSEC3PARAM 1 0 0 -\n", None, &origin).is_err());
        let no_soa = parse("x 30 IN A 192.0.2.1\n", None, &origin).expect_err("refused");
        assert!(no_soa.contains("SOA"), "{no_soa}");
    }
}
