//! Reading a zone file into a [`Zone`]. hickory-proto's parser does the
//! text (directives, parentheses, relative names, TTLs); it has no DNAME,
//! so the type word of a DNAME record is handed to it as ANAME (a type
//! whose data is one name too, and which CoreDNS does not know, so no zone
//! CoreDNS loads holds one) and turned back into a DNAME (type 39, its
//! target uncompressed as RFC 6672 asks) afterwards. A signed zone loads
//! without its DNSSEC records (RRSIG, NSEC, DNSKEY, DS...: clusterdns does
//! not serve DNSSEC); an NSEC3 zone does not load, as in CoreDNS. As CoreDNS: owners
//! are lowercased (SRV owners excepted), as are the targets of NS, CNAME
//! and MX and the names of the SOA; a zone without a SOA does not load.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::ops::Range;
use std::path::Path;

use hickory_proto::rr::rdata::{CNAME, MX, NS, NULL};
use hickory_proto::rr::{Name, RData, Record, RecordType};

use super::Zone;

/// Reads and parses the zone file at `path` for `origin`.
pub fn parse_file(path: &Path, origin: &Name) -> Result<Zone, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    parse(&text, Some(path), origin)
}

/// Parses zone-file `text` for `origin` (`path` names it in errors and
/// anchors `$INCLUDE`).
pub fn parse(text: &str, path: Option<&Path>, origin: &Name) -> Result<Zone, String> {
    if has_type(text, "ANAME") {
        return Err("ANAME is not a record type CoreDNS knows".into());
    }
    if has_type(text, "NSEC3") || has_type(text, "NSEC3PARAM") {
        return Err("NSEC3 zones are not supported (CoreDNS refuses them too)".into());
    }
    let text = with_default_ttl(&at_origin(&rewrite(text), origin));
    let parser = hickory_proto::serialize::txt::Parser::new(text, path.map(Path::to_path_buf), Some(origin.clone()));
    // The zone is the origin asked for (a later $ORIGIN moves only relative names).
    let (_, sets) = parser.parse().map_err(|e| e.to_string())?;
    let origin = origin.to_lowercase();
    let mut soa = None;
    let mut apex_ns = Vec::new();
    let mut nodes: HashMap<Name, super::Node> = HashMap::new();
    let mut dnames = HashMap::new();
    for (_, set) in sets {
        for record in set.records_without_rrsigs().filter(|r| !dropped(r)) {
            let r = normal(record.clone());
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
    let mut names = HashSet::new();
    names.insert(origin.clone());
    for owner in nodes.keys() {
        let mut n = owner.clone();
        while n.num_labels() > origin.num_labels() && names.insert(n.clone()) {
            n = n.base_name();
        }
    }
    Ok(Zone {
        origin,
        soa,
        apex_ns,
        nodes,
        dnames,
        names,
    })
}

/// A record as CoreDNS stores it: lowercased owner (not for SRV) and
/// lowercased names in NS, CNAME, MX and SOA data; an ANAME back to DNAME.
fn normal(mut r: Record) -> Record {
    r.name = undot(r.name);
    if r.record_type() != RecordType::SRV {
        r.name = r.name.to_lowercase();
    }
    r.data = match r.data {
        RData::NS(n) => RData::NS(NS(n.0.to_lowercase())),
        RData::CNAME(c) => RData::CNAME(CNAME(c.0.to_lowercase())),
        RData::MX(m) => RData::MX(MX::new(m.preference, m.exchange.to_lowercase())),
        RData::SOA(mut s) => {
            s.mname = s.mname.to_lowercase();
            s.rname = s.rname.to_lowercase();
            RData::SOA(s)
        }
        RData::ANAME(a) => dname(&a.0),
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

/// Each line's record type word, if the line holds one: the first word
/// after the owner (when the line starts with one), TTL and class, on a
/// line not inside parentheses and not a `$` directive. Yields the byte
/// range of the word.
fn type_words(text: &str) -> impl Iterator<Item = Range<usize>> + '_ {
    record_words(text).filter_map(|(_, rtype)| rtype)
}

/// Each record line's owner word (when the line starts with one) and type word.
fn record_words(text: &str) -> impl Iterator<Item = (Option<Range<usize>>, Option<Range<usize>>)> + '_ {
    let mut depth = 0usize;
    let mut start = 0;
    text.split_inclusive('\n').filter_map(move |line| {
        let at = start;
        start += line.len();
        let code = line.split(';').next().unwrap_or("");
        let inside = depth > 0;
        depth = (depth + code.matches('(').count()).saturating_sub(code.matches(')').count());
        if inside || line.starts_with('$') {
            return None;
        }
        let shift = |r: Range<usize>| at + r.start..at + r.end;
        let mut words = word_ranges(code);
        let owner = if line.starts_with([' ', '\t']) {
            None
        } else {
            Some(shift(words.next()?))
        };
        let rtype = words.find(|r| {
            let w = &code[r.clone()];
            let class = ["IN", "CH", "HS", "CS"].iter().any(|c| w.eq_ignore_ascii_case(c));
            !class && !w.starts_with(|c: char| c.is_ascii_digit())
        });
        Some((owner, rtype.map(shift)))
    })
}

/// The byte ranges of the whitespace-separated words of `s`.
fn word_ranges(s: &str) -> impl Iterator<Item = std::ops::Range<usize>> + '_ {
    let mut pos = 0;
    s.split([' ', '\t', '\r', '\n']).filter_map(move |w| {
        let r = pos..pos + w.len();
        pos += w.len() + 1;
        (!w.is_empty()).then_some(r)
    })
}

fn has_type(text: &str, rtype: &str) -> bool {
    type_words(text).any(|r| text[r].eq_ignore_ascii_case(rtype))
}

/// The types of a signed zone clusterdns does not serve: their records
/// are read as TXT records holding [`DROPPED`] first and then left out.
const DNSSEC: [&str; 7] = ["RRSIG", "NSEC", "DNSKEY", "DS", "CDS", "CDNSKEY", "KEY"];

/// The first string of a TXT record that stands for a DNSSEC record.
const DROPPED: &str = "clusterdns:dnssec-record-dropped";

/// `text` with the type word of every DNAME record replaced by ANAME and
/// that of every DNSSEC record by `TXT "DROPPED"`.
fn rewrite(text: &str) -> Cow<'_, str> {
    let mut edits: Vec<(Range<usize>, String)> = Vec::new();
    for (owner, rtype) in record_words(text) {
        if let Some(r) = owner {
            let word = &text[r.clone()];
            if word.contains('\\') {
                edits.push((r, escaped(word)));
            }
        }
        let Some(r) = rtype else { continue };
        let word = &text[r.clone()];
        if word.eq_ignore_ascii_case("DNAME") {
            edits.push((r, "ANAME".to_string()));
        } else if DNSSEC.iter().any(|t| word.eq_ignore_ascii_case(t)) {
            edits.push((r, format!("TXT \"{DROPPED}\"")));
        }
    }
    if edits.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for (r, new) in edits {
        out.push_str(&text[last..r.start]);
        out.push_str(&new);
        last = r.end;
    }
    out.push_str(&text[last..]);
    Cow::Owned(out)
}

/// `text` with a `$TTL 3600` first when it has no `$TTL`: miekg/dns
/// gives a record without a TTL 3600 then; hickory-proto refuses it.
fn with_default_ttl(text: &str) -> String {
    let has_ttl = text.lines().any(|l| {
        l.split_whitespace()
            .next()
            .is_some_and(|w| w.eq_ignore_ascii_case("$TTL"))
    });
    if has_ttl {
        text.to_string()
    } else {
        format!("$TTL 3600\n{text}")
    }
}

/// `text` with every `@` in a record's data (`CNAME @`, `SRV 0 0 80 @`)
/// written as the origin it stands for (the last `$ORIGIN`, else
/// `origin`): hickory-proto's parser takes `@` only as an owner.
fn at_origin<'t>(text: &'t str, origin: &Name) -> Cow<'t, str> {
    if !text.contains('@') {
        return Cow::Borrowed(text);
    }
    let mut current = origin.to_string();
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let mut words = line.split_whitespace();
        if words.next().is_some_and(|w| w.eq_ignore_ascii_case("$ORIGIN")) {
            if let Some(o) = words.next() {
                current = if o.ends_with('.') {
                    o.to_string()
                } else {
                    format!("{o}.{current}")
                };
            }
        }
        let (code, comment) = line.split_once(';').map_or((line, None), |(c, r)| (c, Some(r)));
        let owner_at = !line.starts_with([' ', '\t']);
        let mut first = true;
        for piece in code.split_inclusive([' ', '\t', '\n', '\r']) {
            let word = piece.trim_end_matches([' ', '\t', '\n', '\r']);
            let is_owner = first && owner_at;
            if !word.is_empty() {
                first = false;
            }
            if word == "@" && !is_owner {
                out.push_str(&current);
                out.push_str(&piece[1..]);
            } else {
                out.push_str(piece);
            }
        }
        if let Some(c) = comment {
            out.push(';');
            out.push_str(c);
        }
    }
    Cow::Owned(out)
}

/// Stands for an escaped byte (`\DDD`, `\X`: a dot or a space inside a
/// label) in an owner, which hickory-proto's parser refuses: the byte's
/// three digits go between the two halves. Put back by [`undot`] after
/// parsing.
const ESCAPE: (&str, &str) = ("zq0clusterdns", "0qz");

/// An owner word with each escaped byte written as [`ESCAPE`].
fn escaped(word: &str) -> String {
    let mut out = String::with_capacity(word.len() + 16);
    let mut chars = word.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let byte = match chars.next() {
            Some(d) if d.is_ascii_digit() => {
                let rest: String = [chars.next(), chars.next()].into_iter().flatten().collect();
                format!("{d}{rest}").parse::<u8>().ok()
            }
            Some(other) if other.is_ascii() => Some(other as u8),
            _ => None,
        };
        match byte {
            Some(b) => out.push_str(&format!("{}{b:03}{}", ESCAPE.0, ESCAPE.1)),
            None => out.push('\\'), // left for the parser to refuse
        }
    }
    out
}

/// `name` with every [`ESCAPE`] inside its labels made its byte again.
fn undot(name: Name) -> Name {
    let marker = ESCAPE.0.as_bytes();
    let has = |l: &[u8]| l.windows(marker.len()).any(|w| w.eq_ignore_ascii_case(marker));
    if !name.iter().any(has) {
        return name;
    }
    let labels: Vec<Vec<u8>> = name.iter().map(unescape_label).collect();
    let mut fixed = Name::from_labels(labels).unwrap_or(name.clone());
    fixed.set_fqdn(name.is_fqdn());
    fixed
}

/// One label's [`ESCAPE`]s decoded.
fn unescape_label(label: &[u8]) -> Vec<u8> {
    let (head, tail) = (ESCAPE.0.as_bytes(), ESCAPE.1.as_bytes());
    let whole = head.len() + 3 + tail.len();
    let mut out = Vec::with_capacity(label.len());
    let mut i = 0;
    while i < label.len() {
        let piece = label.get(i..i + whole);
        let byte = piece
            .filter(|p| p[..head.len()].eq_ignore_ascii_case(head) && p[head.len() + 3..].eq_ignore_ascii_case(tail))
            .and_then(|p| {
                std::str::from_utf8(&p[head.len()..head.len() + 3])
                    .ok()?
                    .parse::<u8>()
                    .ok()
            });
        match byte {
            Some(b) => {
                out.push(b);
                i += whole;
            }
            None => {
                out.push(label[i]);
                i += 1;
            }
        }
    }
    out
}

/// Whether `r` stands for a DNSSEC record [`rewrite`] turned into a TXT.
fn dropped(r: &Record) -> bool {
    matches!(&r.data, RData::TXT(t) if t.txt_data.first().is_some_and(|s| &**s == DROPPED.as_bytes()))
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
    fn a_signed_zone_loads_without_its_dnssec_records() {
        let origin = Name::from_ascii("example.org.").expect("test data");
        let text = "$ORIGIN example.org.\n@ 60 IN SOA a b 1 2 3 4 5\n 60 RRSIG SOA 5 2 60 (\n 20170702091734 20170602091734 54282 example.org.\n mr5eQtFs1G+/= )\n 60 NSEC www.example.org. NS SOA RRSIG NSEC\nwww 60 IN A 192.0.2.1\n 60 DS 10056 5 1 EE72CABD\n 60 TXT \"kept\"\n";
        let z = parse(text, None, &origin).expect("test data");
        let kinds: Vec<RecordType> = z.records().map(Record::record_type).collect();
        assert_eq!(kinds.len(), 3, "SOA, A, TXT: {kinds:?}");
        assert!(kinds.contains(&RecordType::TXT) && !kinds.contains(&RecordType::DS));
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
