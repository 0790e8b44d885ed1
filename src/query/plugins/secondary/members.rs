//! What an RFC 9432 catalog zone lists, as CoreDNS reads it: the schema
//! version (`version.CATALOG TXT "2"`, exactly one), an apex NS, and each
//! member zone as the one PTR of `ID.zones.CATALOG`, with its change of
//! ownership (the one PTR of `coo.ID.zones.CATALOG`, RFC 9432 section
//! 5.6.1) if any. A member listed twice, an ID with two PTRs or two `coo`
//! PTRs, or another version is an error: the catalog is then not taken.
//! `group` properties are not read (CoreDNS reads them and does nothing
//! with them).

use hickory_proto::rr::{Name, RData, Record};

use crate::zonefile::Zone;

/// The schema version read.
const VERSION: &str = "2";

/// One member zone: its unique ID label and its name (lower case).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub id: String,
    pub zone: Name,
    /// The catalog it is moving to (`coo`).
    pub coo: Option<Name>,
}

/// `zone` as a catalog: its members, by ID.
pub fn members(zone: &Zone) -> Result<Vec<Member>, String> {
    let origin = zone.origin();
    let under = |label: &str| Name::from_ascii(label).and_then(|l| l.append_domain(origin));
    let (Ok(version), Ok(zones)) = (under("version"), under("zones")) else {
        return Err(format!("catalog zone {origin}: name too long"));
    };
    if zone.apex_ns().is_empty() {
        return Err(format!("catalog zone {origin} has no NS record"));
    }
    let versions: Vec<String> = zone.owned(&version).into_iter().filter_map(txt).collect();
    match versions.as_slice() {
        [v] if v == VERSION => {}
        [v] => return Err(format!("catalog zone {origin} has unsupported version \"{v}\"")),
        _ => {
            return Err(format!(
                "catalog zone {origin} must have exactly one version TXT record"
            ))
        }
    }
    let mut out: Vec<Member> = Vec::new();
    for owner in zone.owners() {
        let Some(id) = id_under(owner, &zones) else {
            continue;
        };
        let Some(member) = one_ptr(zone, owner)? else {
            continue;
        };
        if let Some(other) = out.iter().find(|m| m.zone == member) {
            return Err(format!(
                "catalog member zone {member} is listed by both {} and {id}",
                other.id
            ));
        }
        let coo = Name::from_ascii("coo").and_then(|c| c.append_domain(owner));
        let coo = match coo {
            Ok(coo) => one_ptr(zone, &coo)?,
            Err(_) => None,
        };
        out.push(Member { id, zone: member, coo });
    }
    out.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(out)
}

/// The ID label of `owner` when it is one label below `zones`.
fn id_under(owner: &Name, zones: &Name) -> Option<String> {
    if owner.num_labels() != zones.num_labels() + 1 || !zones.zone_of(owner) {
        return None;
    }
    owner.iter().next().map(|l| String::from_utf8_lossy(l).to_lowercase())
}

/// The PTR of `owner`, if it has one; two are an error.
fn one_ptr(zone: &Zone, owner: &Name) -> Result<Option<Name>, String> {
    let ptrs: Vec<Name> = zone.owned(owner).into_iter().filter_map(ptr).collect();
    match ptrs.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some(one.clone())),
        _ => Err(format!("catalog member {owner} must have exactly one PTR record")),
    }
}

/// The catalog zone `zone` may be taken: it parses as one.
pub fn accept(zone: &Zone) -> Result<(), String> {
    members(zone).map(drop)
}

fn txt(r: &Record) -> Option<String> {
    match &r.data {
        RData::TXT(t) => Some(t.txt_data.iter().map(|d| String::from_utf8_lossy(d)).collect()),
        _ => None,
    }
}

fn ptr(r: &Record) -> Option<Name> {
    match &r.data {
        RData::PTR(p) => {
            let mut n = p.0.to_lowercase();
            n.set_fqdn(true);
            Some(n)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str =
        "$ORIGIN catalog.example.\n@ 60 IN SOA invalid. hostmaster 1 3600 600 86400 60\n@ 60 IN NS invalid.\n";

    fn zone(rest: &str) -> Zone {
        let origin = Name::from_ascii("catalog.example.").expect("name");
        crate::zonefile::parse(&format!("{HEAD}{rest}"), None, &origin).expect("zone")
    }

    fn names(zone: &Zone) -> Result<Vec<(String, String)>, String> {
        let list = members(zone)?;
        Ok(list.into_iter().map(|m| (m.id, m.zone.to_string())).collect())
    }

    #[test]
    fn a_members_change_of_ownership_is_read() {
        let z = zone("version 60 IN TXT \"2\"\na.zones 60 IN PTR example.org.\ncoo.a.zones 60 IN PTR Other.Example.\n");
        let coo = members(&z).expect("catalog").pop().and_then(|m| m.coo);
        assert_eq!(coo, Some(Name::from_ascii("other.example.").expect("name")));
        let two = format!(
            "{}coo.a.zones 60 IN PTR third.example.\n",
            "version 60 IN TXT \"2\"\na.zones 60 IN PTR example.org.\ncoo.a.zones 60 IN PTR other.example.\n"
        );
        assert!(members(&zone(&two)).is_err(), "two coo PTRs");
    }

    #[test]
    fn members_are_the_ptrs_under_zones() {
        let z = zone(
            "version 60 IN TXT \"2\"\nb.zones 60 IN PTR EXAMPLE.ORG.\na.zones 60 IN PTR example.net.\n\
             group.a.zones 60 IN TXT \"g\"\ncoo.b.zones 60 IN PTR other.example.\nx.y.zones 60 IN PTR deep.example.\n",
        );
        let want = vec![("a".into(), "example.net.".into()), ("b".into(), "example.org.".into())];
        assert_eq!(names(&z), Ok(want));
    }

    #[test]
    fn a_catalog_that_breaks_the_schema_is_refused() {
        for (rest, why) in [
            ("", "exactly one version"),
            ("version 60 IN TXT \"1\"\n", "unsupported version"),
            (
                "version 60 IN TXT \"2\"\nversion 60 IN TXT \"3\"\n",
                "exactly one version",
            ),
            (
                "version 60 IN TXT \"2\"\na.zones 60 IN PTR a.example.\na.zones 60 IN PTR b.example.\n",
                "exactly one PTR",
            ),
            (
                "version 60 IN TXT \"2\"\na.zones 60 IN PTR a.example.\nb.zones 60 IN PTR a.example.\n",
                "listed by both",
            ),
        ] {
            let e = names(&zone(rest)).expect_err(rest);
            assert!(e.contains(why), "{rest}: {e}");
        }
    }
}
