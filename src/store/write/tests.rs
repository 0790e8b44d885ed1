//! The writer's contract: upserts and deletes keep every index in step,
//! one slice's change leaves the others alone, and a relist deletes only
//! at its end what it did not list.

use std::net::IpAddr;

use super::*;
use crate::store::{PortIn, Proto, PtrHost, PtrTarget, ServiceKind};

fn ip(s: &str) -> IpAddr {
    s.parse().expect("test address")
}

/// The PTR targets of `addr` in `snap`.
fn rev(snap: &Snapshot, addr: IpAddr) -> Vec<PtrTarget> {
    snap.reverse(addr).collect()
}

/// A hostname, or `None` when it is just the dashed address.
fn named(host: &str, addr: &str) -> Option<String> {
    (crate::store::records::undash(host) != Some(ip(addr))).then(|| host.to_string())
}

fn svc(ns: &str, name: &str, ips: &[&str]) -> Record {
    let kind = if ips.is_empty() {
        ServiceKind::Headless
    } else {
        ServiceKind::ClusterIp(ips.iter().map(|s| ip(s)).collect())
    };
    let ports = vec![PortIn {
        name: "http".into(),
        proto: Proto::Tcp,
        port: 80,
    }];
    Record::Service {
        external: None,
        selector: true,
        namespace: ns.into(),
        name: name.into(),
        kind,
        ports,
    }
}

fn slice(ns: &str, name: &str, service: &str, eps: &[(&str, &str)]) -> Record {
    let endpoints = eps.iter().map(|(a, h)| (ip(a), named(h, a))).collect();
    let ports = vec![PortIn {
        name: "http".into(),
        proto: Proto::Tcp,
        port: 8080,
    }];
    Record::Slice {
        trigger: None,
        zones: vec![],
        namespace: ns.into(),
        name: name.into(),
        service: service.into(),
        ports,
        endpoints,
    }
}

fn key(kind: Kind, ns: &str, name: &str) -> ObjectKey {
    ObjectKey {
        kind,
        namespace: ns.into(),
        name: name.into(),
    }
}

fn hosts(s: &Snapshot, ns: &str, name: &str) -> Vec<String> {
    let mut v: Vec<String> = s
        .service(ns, name)
        .map(|s| s.endpoints().map(|e| e.host().to_string()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn upserts_and_deletes_keep_reverse_and_namespaces_in_step() {
    let mut w = Writer::new(&[Kind::Service, Kind::EndpointSlice]);
    w.apply(slice("db", "pg-a", "pg", &[("10.1.0.1", "pg-0")]));
    let s = w.snapshot(1);
    assert!(!s.synced);
    assert!(s.service("db", "pg").is_none(), "slices alone do not make a service");
    assert!(s.namespace("db").is_none());
    w.apply(svc("db", "pg", &[]));
    w.apply(slice("db", "pg-b", "pg", &[("10.1.0.2", "pg-1")]));
    let s = w.snapshot(2);
    assert_eq!(hosts(&s, "db", "pg"), ["pg-0", "pg-1"]);
    assert!(s.namespace("db").is_some());
    assert_eq!(
        rev(&s, ip("10.1.0.2"))[0].host(),
        crate::store::PtrHost::Named("pg-1".into())
    );
    // one slice changes: the other is untouched, the old address loses its PTR
    w.apply(slice("db", "pg-b", "pg", &[("10.1.0.3", "pg-1")]));
    let s = w.snapshot(3);
    assert_eq!(hosts(&s, "db", "pg"), ["pg-0", "pg-1"]);
    assert!(rev(&s, ip("10.1.0.2")).is_empty());
    assert_eq!(rev(&s, ip("10.1.0.3")).len(), 1);
    // cluster IP changes move its PTR
    w.apply(svc("db", "api", &["10.96.0.5"]));
    w.apply(svc("db", "api", &["10.96.0.6"]));
    let s = w.snapshot(4);
    assert!(rev(&s, ip("10.96.0.5")).is_empty());
    assert_eq!(&*rev(&s, ip("10.96.0.6"))[0].service.name, "api");
    assert_eq!(s.service_count(), 2);
    w.delete(&key(Kind::Service, "db", "api"));
    w.delete(&key(Kind::EndpointSlice, "db", "pg-a"));
    w.delete(&key(Kind::EndpointSlice, "db", "pg-b"));
    w.delete(&key(Kind::Service, "db", "pg"));
    let s = w.snapshot(5);
    assert!(rev(&s, ip("10.96.0.6")).is_empty() && rev(&s, ip("10.1.0.1")).is_empty());
    assert!(s.namespace("db").is_none(), "nothing left in db");
    assert_eq!(s.service_count(), 0);
}

#[test]
fn a_relist_deletes_the_unlisted_only_when_done() {
    let mut w = Writer::new(&[Kind::Service]);
    w.relist_start(Kind::Service);
    w.apply(svc("a", "one", &["10.0.0.1"]));
    w.apply(svc("a", "two", &["10.0.0.2"]));
    assert!(!w.synced());
    w.relist_done(Kind::Service);
    assert!(w.synced(), "first list of every watched kind done");
    w.relist_start(Kind::Service);
    w.apply(svc("a", "two", &["10.0.0.2"]));
    w.apply(svc("a", "three", &["10.0.0.3"]));
    let mid = w.snapshot(1);
    assert!(
        mid.service("a", "one").is_some(),
        "not deleted before the list completes"
    );
    assert!(mid.service("a", "three").is_some(), "new objects are served at once");
    w.relist_done(Kind::Service);
    let done = w.snapshot(2);
    assert!(done.service("a", "one").is_none());
    assert!(rev(&done, ip("10.0.0.1")).is_empty());
    assert!(done.service("a", "two").is_some() && done.service("a", "three").is_some());
}

#[test]
fn pods_and_namespace_objects() {
    let mut w = Writer::new(&[Kind::Namespace, Kind::Pod]);
    w.apply(Record::Namespace { name: "quiet".into() });
    w.apply(Record::Pod {
        namespace: "web".into(),
        name: "p1".into(),
        ips: vec![ip("10.2.0.1")],
        running: true,
    });
    w.apply(Record::Pod {
        namespace: "web".into(),
        name: "p2".into(),
        ips: vec![ip("10.2.0.1")],
        running: true,
    });
    let s = w.snapshot(1);
    assert!(s.namespace("quiet").is_some());
    assert!(s.pod_exists("web", ip("10.2.0.1")));
    assert_eq!(s.pod_namespace(ip("10.2.0.1")), None, "two pods share the IP: no guess");
    w.delete(&key(Kind::Pod, "web", "p1"));
    assert!(
        w.snapshot(2).pod_exists("web", ip("10.2.0.1")),
        "p2 still has the address"
    );
    w.apply(Record::Pod {
        namespace: "web".into(),
        name: "p2".into(),
        ips: vec![ip("10.2.0.9")],
        running: true,
    });
    let s = w.snapshot(3);
    assert!(!s.pod_exists("web", ip("10.2.0.1")) && s.pod_exists("web", ip("10.2.0.9")));
    assert_eq!(s.pod_namespace(ip("10.2.0.9")).as_deref(), Some("web"));
    w.apply(Record::Pod {
        namespace: "web".into(),
        name: "p2".into(),
        ips: vec![ip("10.2.0.9")],
        running: false,
    });
    assert_eq!(
        w.snapshot(4).pod_namespace(ip("10.2.0.9")),
        None,
        "a Pending pod is not trusted"
    );
    w.delete(&key(Kind::Namespace, "", "quiet"));
    assert!(w.snapshot(4).namespace("quiet").is_none());
}

#[test]
fn a_slice_moving_to_another_service_leaves_the_first() {
    let mut w = Writer::new(&[]);
    w.apply(svc("n", "a", &[]));
    w.apply(svc("n", "b", &[]));
    w.apply(slice("n", "s1", "a", &[("10.3.0.1", "x")]));
    w.apply(slice("n", "s1", "b", &[("10.3.0.1", "x")]));
    let s = w.snapshot(1);
    assert!(hosts(&s, "n", "a").is_empty());
    assert_eq!(hosts(&s, "n", "b"), ["x"]);
    assert_eq!(rev(&s, ip("10.3.0.1")).len(), 1);
    assert_eq!(&*rev(&s, ip("10.3.0.1"))[0].service.name, "b");
    // One named after its service (owned by name, not by table) moves
    // away and back, then goes; the slice count follows.
    w.apply(slice("n", "a-x7k2p", "a", &[("10.3.0.2", "y")]));
    w.apply(slice("n", "a-x7k2p", "b", &[("10.3.0.2", "y")]));
    assert_eq!((hosts(&w.snapshot(2), "n", "a").len(), w.counts()[2]), (0, 2));
    w.apply(slice("n", "a-x7k2p", "a", &[("10.3.0.2", "y")]));
    assert_eq!(
        (hosts(&w.snapshot(3), "n", "b"), w.counts()[2]),
        (vec!["x".to_string()], 2)
    );
    w.delete(&key(Kind::EndpointSlice, "n", "a-x7k2p"));
    w.delete(&key(Kind::EndpointSlice, "n", "s1"));
    let s = w.snapshot(4);
    assert!(hosts(&s, "n", "a").is_empty() && hosts(&s, "n", "b").is_empty());
    assert_eq!((rev(&s, ip("10.3.0.2")).len(), w.counts()[2]), (0, 0));
}

#[test]
fn external_addresses_are_kept_and_indexed_by_ip() {
    let mut w = Writer::new(&[Kind::Service]);
    let with = |ips: &[&str]| {
        let Record::Service {
            namespace,
            name,
            kind,
            selector,
            ports,
            ..
        } = svc("shop", "lb", &["10.96.0.9"])
        else {
            unreachable!("svc builds a Service")
        };
        let host = hickory_proto::rr::Name::from_ascii("lb.example.net.").expect("name");
        Record::Service {
            namespace,
            name,
            kind,
            selector,
            ports,
            external: crate::store::External::boxed(ips.iter().map(|s| ip(s)).collect(), vec![host]),
        }
    };
    w.apply(with(&["203.0.113.7", "2001:db8::7"]));
    let s = w.snapshot(1);
    let e = s
        .service("shop", "lb")
        .and_then(|s| s.external.as_deref())
        .expect("external");
    assert_eq!(e.ips.len(), 2);
    assert_eq!(e.hostnames[0].to_string(), "lb.example.net.");
    let names =
        |s: &Snapshot, a: &str| -> Vec<String> { s.external_reverse(ip(a)).map(|i| i.name.to_string()).collect() };
    assert_eq!(names(&s, "203.0.113.7"), ["lb"]);
    assert_eq!(names(&s, "2001:db8::7"), ["lb"]);
    assert!(names(&s, "10.96.0.9").is_empty(), "cluster IPs are not external");
    w.apply(with(&["203.0.113.8"]));
    let s = w.snapshot(2);
    assert!(names(&s, "203.0.113.7").is_empty(), "a changed address loses its entry");
    assert_eq!(names(&s, "203.0.113.8"), ["lb"]);
    w.apply(svc("shop", "lb", &["10.96.0.9"]));
    assert!(w
        .snapshot(3)
        .service("shop", "lb")
        .is_some_and(|s| s.external.is_none()));
    assert!(names(&w.snapshot(3), "203.0.113.8").is_empty());
    w.apply(with(&["203.0.113.9"]));
    w.delete(&key(Kind::Service, "shop", "lb"));
    assert!(
        names(&w.snapshot(4), "203.0.113.9").is_empty(),
        "deleted with its service"
    );
}

#[test]
fn ptr_hostnames_are_read_from_the_service_in_order() {
    let mut w = Writer::new(&[Kind::Service, Kind::EndpointSlice]);
    w.apply(svc("db", "pg", &["10.1.0.1"]));
    // the same address in two slices, under two names, and the dashed one
    w.apply(slice("db", "pg-a", "pg", &[("10.1.0.1", "pg-1"), ("10.1.0.9", "x")]));
    w.apply(slice(
        "db",
        "pg-b",
        "pg",
        &[("10.1.0.1", "10-1-0-1"), ("10.1.0.1", "pg-0")],
    ));
    w.apply(svc("app", "web", &[]));
    w.apply(slice(
        "app",
        "web-a",
        "web",
        &[("fd00::1", "fd00--1"), ("10.1.0.1", "w")],
    ));
    let s = w.snapshot(1);
    let found: Vec<(String, PtrHost)> = rev(&s, ip("10.1.0.1"))
        .into_iter()
        .map(|t| (t.service.name.to_string(), t.host()))
        .collect();
    let named = |h: &str| PtrHost::Named(h.into());
    // by namespace and service, then the service's name, the dashed
    // address and the hostnames in order
    let want = [
        ("web", named("w")),
        ("pg", PtrHost::Service),
        ("pg", PtrHost::Dashed),
        ("pg", named("pg-0")),
        ("pg", named("pg-1")),
    ];
    assert_eq!(found, want.map(|(s, h)| (s.to_string(), h)));
    assert_eq!(rev(&s, ip("fd00::1"))[0].host(), PtrHost::Dashed);
    // removing one slice removes its entries only
    w.delete(&key(Kind::EndpointSlice, "db", "pg-b"));
    let s = w.snapshot(2);
    assert_eq!(rev(&s, ip("10.1.0.1")).len(), 3);
    let eps: Vec<_> = s
        .service("app", "web")
        .map(|s| s.endpoints().map(|e| e.addr).collect())
        .unwrap_or_default();
    assert_eq!(eps, [ip("fd00::1"), ip("10.1.0.1")], "a mixed list keeps its order");
}

#[test]
fn under_namespace_labels_only_namespaces_whose_object_is_held_are_served() {
    let pod = |ns: &str| Record::Pod {
        namespace: ns.into(),
        name: "p".into(),
        ips: vec![ip("10.2.0.9")],
        running: true,
    };
    for selecting in [false, true] {
        let mut w = Writer::new(&[]).selecting_namespaces(selecting);
        w.apply(svc("db", "pg", &["10.0.0.1"]));
        w.apply(pod("db"));
        let s = w.snapshot(1);
        // Without a selector a Service is served whether or not its
        // Namespace object has been seen; with one, only once it has.
        assert_eq!(s.service("db", "pg").is_some(), !selecting);
        assert_eq!(s.namespace("db").is_some(), !selecting);
        assert_eq!(s.exposed("db"), !selecting);
        assert_eq!(s.pod_exists("db", ip("10.2.0.9")), !selecting);
        assert_eq!(s.services().len(), usize::from(!selecting));
        w.apply(Record::Namespace { name: "db".into() });
        let s = w.snapshot(2);
        assert!(s.service("db", "pg").is_some() && s.exposed("db") && s.pod_exists("db", ip("10.2.0.9")));
        w.delete(&key(Kind::Namespace, "", "db"));
        assert_eq!(w.snapshot(3).service("db", "pg").is_some(), !selecting);
    }
}

#[test]
fn a_namespace_served_or_hidden_under_namespace_labels_drops_every_memoized_answer() {
    let store = Store::default();
    let mut w = Writer::new(&[Kind::Namespace, Kind::Service]).selecting_namespaces(true);
    for kind in [Kind::Namespace, Kind::Service] {
        w.relist_start(kind);
    }
    w.apply(Record::Namespace { name: "db".into() });
    w.apply(svc("db", "pg", &["10.0.0.1"]));
    for kind in [Kind::Namespace, Kind::Service] {
        w.relist_done(kind);
    }
    assert!(w.publish(&store, 1));
    let generation = store.generation();
    let mut ptr = crate::store::Deps::NONE;
    ptr.add(Dep::ptr(ip("10.0.0.1")));
    w.apply(svc("other", "x", &["10.0.0.2"]));
    assert!(w.publish(&store, 2));
    assert!(store.unchanged_since(generation, &ptr), "an unrelated change keeps it");
    w.delete(&key(Kind::Namespace, "", "db"));
    assert!(w.publish(&store, 3));
    assert!(
        !store.unchanged_since(generation, &ptr),
        "the PTR of a hidden Service changed"
    );
    assert!(store.load().service("db", "pg").is_none());
}
