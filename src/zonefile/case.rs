//! Names read with the case the zone file writes them in, as miekg/dns
//! (CoreDNS's parser) reads them. hickory-proto's parser reads a label
//! through IDNA, which lowercases it, unless the label starts with `_`
//! (an SRV label), which it takes as written. [`keep_case`] therefore
//! writes [`MARK`] before every label with an upper-case letter in the
//! names whose case the zone can keep (owners, `$ORIGIN`, and the names in
//! NS, CNAME, PTR, DNAME, MX, SOA, SRV and NAPTR data), and [`kept`] takes
//! it off the parsed names again. Which names then stay as written and
//! which are lowercased is CoreDNS's choice, made in [`super::parse`].

use std::borrow::Cow;
use std::ops::Range;

use hickory_proto::rr::Name;

use super::text::{escaped, undot};
use super::words::{entries, splice};

/// Written before a label to keep its case through the parser.
const MARK: &str = "_zq0c";

/// The longest label (63 bytes) that still fits with [`MARK`] before it;
/// a longer one is read lowercased.
const LONGEST: usize = 63 - MARK.len();

/// The indexes of the name words of a record's data, by type word (DNAME
/// is ANAME by now, see [`super::text::rewrite`]).
fn name_fields(rtype: &str) -> &'static [usize] {
    match rtype.to_ascii_uppercase().as_str() {
        "NS" | "CNAME" | "PTR" | "DNAME" | "ANAME" => &[0],
        "MX" => &[1],
        "SOA" => &[0, 1],
        "SRV" => &[3],
        "NAPTR" => &[5],
        _ => &[],
    }
}

/// Whether the text can be marked: it holds no [`MARK`] of its own.
pub(super) fn can_mark(text: &str) -> bool {
    let mark = MARK.as_bytes();
    !text
        .as_bytes()
        .windows(mark.len())
        .any(|w| w.eq_ignore_ascii_case(mark))
}

/// `text` with [`MARK`] before every label with an upper-case letter in
/// its owners, `$ORIGIN`s and the names of record data, and escaped bytes
/// in those names written as [`super::text::escaped`] writes them.
pub(super) fn keep_case(text: &str) -> Cow<'_, str> {
    if !text.bytes().any(|b| b.is_ascii_uppercase() || b == b'\\') {
        return Cow::Borrowed(text);
    }
    let mut edits: Vec<(Range<usize>, String)> = Vec::new();
    for e in entries(text) {
        let names: Vec<usize> = if e.directive(text) {
            let origin = text[e.words[0].clone()].eq_ignore_ascii_case("$ORIGIN");
            if origin {
                vec![1]
            } else {
                vec![]
            }
        } else {
            let owner = e.owner().map(|_| 0);
            let data = e.type_at(text).map(|t| {
                let fields = name_fields(&text[e.words[t].clone()]);
                fields.iter().map(move |f| t + 1 + f)
            });
            owner.into_iter().chain(data.into_iter().flatten()).collect()
        };
        for r in names.into_iter().filter_map(|i| e.words.get(i)) {
            if let Some(new) = marked(&text[r.clone()]) {
                edits.push((r.clone(), new));
            }
        }
    }
    splice(text, edits)
}

/// A name word with [`MARK`] before each label with an upper-case letter
/// (and its escaped bytes written out), when that changes it.
fn marked(word: &str) -> Option<String> {
    let plain = !word.bytes().any(|b| b.is_ascii_uppercase() || b == b'\\');
    // `\#`: RFC 3597's generic data, not a name (left for the parser to
    // refuse, as before the marks)
    if plain || word == "@" || word.starts_with('"') || word == "\\#" {
        return None;
    }
    let written = if word.contains('\\') {
        escaped(word)
    } else {
        word.to_string()
    };
    let mark = |l: &str| l.is_ascii() && l.len() <= LONGEST && l.bytes().any(|b| b.is_ascii_uppercase());
    let mut out = String::with_capacity(written.len() + 2 * MARK.len());
    for (i, label) in written.split('.').enumerate() {
        if i > 0 {
            out.push('.');
        }
        if mark(label) {
            out.push_str(MARK);
        }
        out.push_str(label);
    }
    // Too long for a name once marked: read as before (lowercased).
    let out = if out.len() > 254 { written } else { out };
    (out != word).then_some(out)
}

/// The name `name` as the zone file writes it: each [`MARK`] and escaped
/// byte written by [`keep_case`] and [`super::text::rewrite`] undone.
/// Allocates only for a name that holds one.
pub(super) fn kept(name: Name) -> Name {
    let name = undot(name);
    let mark = MARK.as_bytes();
    let is_marked = |l: &[u8]| l.len() > mark.len() && l[..mark.len()].eq_ignore_ascii_case(mark);
    if !name.iter().any(is_marked) {
        return name;
    }
    let labels = name.iter().map(|l| if is_marked(l) { &l[mark.len()..] } else { l });
    let mut fixed = Name::from_labels(labels).unwrap_or_else(|_| name.clone());
    fixed.set_fqdn(name.is_fqdn());
    fixed
}

#[cfg(test)]
mod tests {
    use hickory_proto::rr::{RData, RecordType};

    use super::super::{dname_target, parse, Zone};
    use super::*;

    const ZONE: &str = "$ORIGIN Example.ORG.\n@ 3600 IN SOA NS1 Admin 1 2 3 4 5\n@ IN NS NS1\nNS1 IN A 192.0.2.1\nHome\\032Media._smb._tcp IN SRV 0 0 445 Samba.Example.org.\n     IN TXT \"x\"\nSamba IN A 192.0.2.2\nWWW IN CNAME Samba\n4 IN PTR Host.Example.org.\nDn IN DNAME Other.Example.\nMail IN MX 10 Samba\nMulti IN SRV ( 0 0 81 ; a note\n  Far.Example.org. )\nQuoted IN TXT \"A B\" ( Far.Example.org. )\n$ORIGIN Sub.example.org.\n_Http._tcp IN SRV 0 0 80 Web\n";

    /// `s` as written (`\032` a space: hickory-proto reads `\DDD` as octal).
    fn name(s: &str) -> Name {
        let spaced = s.replace("\\032", " ");
        let labels = spaced.trim_end_matches('.').split('.').map(str::as_bytes);
        Name::from_labels(labels).expect("test data")
    }

    /// The one record of `owner` and `rtype`, asked in upper case.
    fn one(z: &Zone, owner: &str, rtype: RecordType) -> hickory_proto::rr::Record {
        let found = z.lookup(&name(&owner.to_ascii_uppercase()), rtype);
        let mut of = found.answer.into_iter().filter(|r| r.record_type() == rtype);
        let r = of.next().unwrap_or_else(|| panic!("{owner} {rtype}"));
        assert!(of.next().is_none(), "{owner} {rtype}");
        r
    }

    fn assert_written(got: &Name, want: &str) {
        assert!(got.eq_case(&name(want)), "{got} is not written {want}");
    }

    #[test]
    fn srv_owners_and_the_names_coredns_does_not_lowercase_keep_their_case() {
        let z = parse(ZONE, None, &name("example.org.")).expect("test data");
        let srv = one(&z, "home\\032media._smb._tcp.example.org.", RecordType::SRV);
        assert_written(&srv.name, "Home\\032Media._smb._tcp.Example.ORG.");
        let RData::SRV(data) = &srv.data else { panic!("{srv}") };
        assert_written(&data.target, "Samba.Example.org.");
        let txt = one(&z, "home\\032media._smb._tcp.example.org.", RecordType::TXT);
        assert_written(&txt.name, "home\\032media._smb._tcp.example.org.");
        let srv = one(&z, "_http._tcp.sub.example.org.", RecordType::SRV);
        assert_written(&srv.name, "_Http._tcp.Sub.example.org.");
        assert_eq!(srv.data.to_string(), "0 0 80 Web.Sub.example.org.");
        let multi = one(&z, "multi.example.org.", RecordType::SRV);
        assert_written(&multi.name, "Multi.Example.ORG.");
        assert_eq!(multi.data.to_string(), "0 0 81 Far.Example.org.", "over two lines");
        let quoted = one(&z, "quoted.example.org.", RecordType::TXT);
        assert_eq!(quoted.data.to_string(), "A BFar.Example.org.", "no name in TXT");
        let ptr = one(&z, "4.example.org.", RecordType::PTR);
        assert_eq!(ptr.data.to_string(), "Host.Example.org.");
        let dname = z.get(&name("dn.example.org."), RecordType::DNAME);
        let target = dname_target(&dname[0]).expect("a DNAME");
        assert_written(&target, "Other.Example.");
        assert_written(&dname[0].name, "dn.example.org.");
    }

    #[test]
    fn other_owners_and_ns_cname_mx_soa_names_are_lowercased_as_coredns_does() {
        let z = parse(ZONE, None, &name("example.org.")).expect("test data");
        let cname = one(&z, "www.example.org.", RecordType::CNAME);
        assert_written(&cname.name, "www.example.org.");
        assert_eq!(cname.data.to_string(), "samba.example.org.");
        let mx = one(&z, "mail.example.org.", RecordType::MX);
        assert_eq!(mx.data.to_string(), "10 samba.example.org.");
        assert_eq!(
            z.soa().data.to_string().split(' ').take(2).collect::<Vec<_>>(),
            ["ns1.example.org.", "admin.example.org."]
        );
        assert_eq!(z.apex_ns()[0].data.to_string(), "ns1.example.org.");
        assert_written(&one(&z, "samba.example.org.", RecordType::A).name, "samba.example.org.");
    }

    #[test]
    fn a_zone_that_writes_the_mark_itself_loads_lowercased() {
        let text = format!("@ IN SOA a b 1 2 3 4 5\n{MARK}X IN SRV 0 0 1 Target\nSrv IN SRV 0 0 1 Target\n");
        let z = parse(&text, None, &name("example.org.")).expect("test data");
        let srv = one(&z, "srv.example.org.", RecordType::SRV);
        assert_written(&srv.name, "srv.example.org.");
        let own = one(&z, &format!("{MARK}x.example.org."), RecordType::SRV);
        assert_eq!(
            own.name.to_ascii(),
            format!("{MARK}X.example.org."),
            "its own label is kept"
        );
    }

    #[test]
    fn a_label_too_long_to_mark_is_read_lowercased() {
        let long = format!("A{}", "b".repeat(LONGEST));
        assert_eq!(marked(&format!("{long}.Foo")), Some(format!("{long}.{MARK}Foo")));
        assert_eq!(marked("@"), None);
        assert_eq!(marked("lower.case"), None);
        assert_eq!(marked("\\#"), None, "RFC 3597's generic data is no name");
    }
}
