//! A catalog's members as its zone changes, without primaries: the
//! catalog's slot is filled by hand and [`Catalog::changed`] told, as its
//! keeper does after a transfer (no runtime: no member is transferred).

use super::*;
use crate::zonefile::Zone;

fn name(n: &str) -> Name {
    Name::from_ascii(n).expect("name")
}

fn cfg(zones: &[&str], members: &[&str]) -> SecondaryConfig {
    SecondaryConfig {
        zones: zones.iter().map(|z| name(z)).collect(),
        from: vec![std::net::SocketAddr::from(([127, 0, 0, 1], 1))],
        fallthrough: None,
        catalog: Some(members.iter().map(|m| name(m)).collect()),
    }
}

/// Catalog `origin` listing `members` as `(ID, zone)`, then `extra`.
fn listing(origin: &str, members: &[(&str, &str)], extra: &str) -> Zone {
    let mut text = format!("$ORIGIN {origin}\n@ 0 IN SOA invalid. invalid. 1 3600 600 86400 0\n@ 0 IN NS invalid.\n");
    text.push_str("version 0 IN TXT \"2\"\n");
    for (id, zone) in members {
        text.push_str(&format!("{id}.zones 0 IN PTR {zone}\n"));
    }
    text.push_str(extra);
    crate::zonefile::parse(&text, None, &name(origin)).expect("catalog")
}

/// `origin`'s catalog made `members`, told as a transfer tells it.
fn transferred(c: &Catalog, origin: &str, members: &[(&str, &str)]) {
    transferred_with(c, origin, members, "");
}

fn transferred_with(c: &Catalog, origin: &str, members: &[(&str, &str)], extra: &str) {
    let slot = c.lock().and_then(|s| {
        s.catalogs
            .iter()
            .find(|k| k.origin == name(origin))
            .map(|k| k.slot.clone())
    });
    slot.expect("a catalog")
        .store(Arc::new(Some(listing(origin, members, extra))));
    c.changed(&name(origin));
}

/// The origins of the zones served, the catalogs first.
fn served(c: &Catalog) -> Vec<String> {
    c.found.load().iter().map(|(o, _)| o.to_string()).collect()
}

fn slot_of(c: &Catalog, zone: &str) -> Loaded {
    let state = c.lock().expect("state");
    let m = state
        .members
        .iter()
        .find(|m| m.kept.origin == name(zone))
        .expect("a member");
    m.kept.slot.clone()
}

#[test]
fn members_follow_the_catalog() {
    let c = Catalog::new(&cfg(&["catalog.example."], &[]));
    assert_eq!(served(&c), ["catalog.example."], "the catalog, not yet transferred");
    transferred(&c, "catalog.example.", &[("a", "example.org."), ("b", "example.net.")]);
    assert_eq!(served(&c), ["catalog.example.", "example.org.", "example.net."]);
    let org = slot_of(&c, "example.org.");

    // example.net gone, example.edu new, example.org the same member.
    transferred(&c, "catalog.example.", &[("a", "example.org."), ("c", "example.edu.")]);
    assert_eq!(served(&c), ["catalog.example.", "example.org.", "example.edu."]);
    assert!(Arc::ptr_eq(&org, &slot_of(&c, "example.org.")), "kept as it was");

    // A new ID for example.org: a member anew.
    transferred(&c, "catalog.example.", &[("z", "example.org."), ("c", "example.edu.")]);
    assert!(!Arc::ptr_eq(&org, &slot_of(&c, "example.org.")), "reset");
}

#[test]
fn members_outside_the_bound_and_clashes_are_skipped() {
    let c = Catalog::new(&cfg(&["one.example.", "two.example."], &["org.", "one.example."]));
    transferred(
        &c,
        "one.example.",
        &[
            ("a", "example.org."),
            ("b", "example.net."),
            ("c", "two.example."),
            ("d", "sub.one.example."),
        ],
    );
    transferred(&c, "two.example.", &[("a", "example.org."), ("b", "www.example.org.")]);
    let want = [
        "one.example.",
        "two.example.",
        "example.org.",
        "sub.one.example.",
        "www.example.org.",
    ];
    assert_eq!(
        served(&c),
        want,
        "example.net outside, two.example a catalog, example.org the first's"
    );
    let state = c.lock().expect("state");
    let of = |z: &str| {
        state
            .members
            .iter()
            .find(|m| m.kept.origin == name(z))
            .map(|m| m.catalog.to_string())
    };
    assert_eq!(of("example.org.").as_deref(), Some("one.example."));
    drop(state);

    // one.example no longer lists example.org: two.example's listing is
    // taken at its next change.
    transferred(&c, "one.example.", &[("d", "sub.one.example.")]);
    assert_eq!(
        served(&c),
        ["one.example.", "two.example.", "sub.one.example.", "www.example.org."]
    );
    transferred(&c, "two.example.", &[("a", "example.org."), ("b", "www.example.org.")]);
    assert!(served(&c).contains(&"example.org.".to_string()));
}

#[test]
fn a_reload_with_the_same_line_keeps_the_members() {
    let line = cfg(&["keep.example."], &[]);
    let first = start(&line);
    let again = start(&line);
    let (Some((_, a)), Some((_, b))) = (first.found_under(), again.found_under()) else {
        panic!("found zones");
    };
    assert!(Arc::ptr_eq(a, b), "taken over");
    let other = start(&cfg(&["keep.example."], &["org."]));
    let (_, c) = other.found_under().expect("found zones");
    assert!(!Arc::ptr_eq(a, c), "another line: new zones");
}

fn owner(c: &Catalog, zone: &str) -> Option<String> {
    let state = c.lock()?;
    let m = state.members.iter().find(|m| m.kept.origin == name(zone))?;
    Some(m.catalog.to_string())
}

/// RFC 9432 section 5.6.1, as CoreDNS's TestTransferInCatalog*Migrat*
/// and ...WaitsForTargetUpdateAfterSourceAddsCOO.
#[test]
fn a_member_moves_when_its_catalog_names_the_new_one() {
    let c = Catalog::new(&cfg(&["one.example.", "two.example."], &[]));
    let listed = [("a", "example.org."), ("b", "example.net.")];
    transferred(&c, "one.example.", &listed);
    let (org, net) = (slot_of(&c, "example.org."), slot_of(&c, "example.net."));
    transferred(&c, "two.example.", &[("a", "example.org."), ("x", "example.net.")]);
    assert_eq!(owner(&c, "example.org.").as_deref(), Some("one.example."), "no coo yet");

    // The source names the target: the move waits for the target's change.
    let coo = "coo.a.zones 0 IN PTR two.example.\ncoo.b.zones 0 IN PTR two.example.\n";
    transferred_with(&c, "one.example.", &listed, coo);
    assert_eq!(owner(&c, "example.org.").as_deref(), Some("one.example."));
    transferred(&c, "two.example.", &[("a", "example.org."), ("x", "example.net.")]);
    assert_eq!(owner(&c, "example.org.").as_deref(), Some("two.example."));
    assert_eq!(owner(&c, "example.net.").as_deref(), Some("two.example."));
    assert!(
        Arc::ptr_eq(&org, &slot_of(&c, "example.org.")),
        "the same ID: the zone kept"
    );
    assert!(
        !Arc::ptr_eq(&net, &slot_of(&c, "example.net.")),
        "another ID: transferred anew"
    );

    // The source drops them: they stay with the target.
    transferred(&c, "one.example.", &[]);
    assert_eq!(owner(&c, "example.org.").as_deref(), Some("two.example."));
    assert_eq!(served(&c).len(), 4, "{:?}", served(&c));
}
