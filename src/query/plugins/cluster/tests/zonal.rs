//! Zonal names (`zonal.rs`) against a snapshot whose endpoints carry
//! zones: what each directive selects, what the option off and a
//! ClusterIP answer, and that the direct writer leaves them to the Record
//! path (its answers would be the headless service's every address).

use super::*;

/// `db/hdls` (headless: 10.1.0.1 in zone-a, 10.1.0.2 and fd00::2 in
/// zone-b, 10.1.0.3 in none) and `db/vip` (ClusterIP).
fn zoned_router(zonal: bool) -> Router {
    let mut w = Writer::new(&[]);
    w.apply(Record::Namespace { name: "db".into() });
    w.apply(service("db", "hdls", ServiceKind::Headless, vec![]));
    w.apply(service(
        "db",
        "vip",
        ServiceKind::ClusterIp(vec![ip("10.96.0.7")].into()),
        vec![],
    ));
    let endpoints = ["10.1.0.1", "10.1.0.2", "10.1.0.3"]
        .iter()
        .map(|a| (ip(a), None))
        .collect();
    w.apply(Record::Slice {
        trigger: None,
        namespace: "db".into(),
        name: "hdls-v4".into(),
        service: "hdls".into(),
        ports: vec![port("http", Proto::Tcp, 80)],
        endpoints,
        zones: vec!["zone-a".into(), "zone-b".into(), String::new()],
    });
    w.apply(Record::Slice {
        trigger: None,
        namespace: "db".into(),
        name: "hdls-v6".into(),
        service: "hdls".into(),
        ports: vec![port("http", Proto::Tcp, 80)],
        endpoints: vec![(ip("fd00::2"), None)],
        zones: vec!["zone-b".into()],
    });
    let store = Arc::new(Store::default());
    store.publish(w.snapshot(42));
    let mut cfg = config(PodMode::Disabled, false, false);
    cfg.client.zonal = zonal;
    let zones = cfg.zones.clone();
    Router::new(
        vec![Block {
            cluster: Some(Cluster::new(Arc::new(cfg), store)),
            ..Block::new(zones)
        }],
        Vec::new(),
    )
}

#[test]
fn pin_and_prefer_select_by_zone() {
    let r = zoned_router(true);
    let a = |z: &str, ip: &str| format!("{z}._zone.hdls.db.svc.cluster.local. 5 IN A {ip}");
    let (pa, pb, pc) = ("zone-a.pin", "zone-b.pin", "zone-c.prefer");
    table(
        &r,
        &[
            (
                &format!("{pa}._zone.hdls.db.svc.cluster.local."),
                A,
                OK,
                &[&a(pa, "10.1.0.1")],
            ),
            (
                &format!("{pb}._zone.hdls.db.svc.cluster.local."),
                A,
                OK,
                &[&a(pb, "10.1.0.2")],
            ),
            (
                &format!("{pb}._zone.hdls.db.svc.cluster.local."),
                AAAA,
                OK,
                &["zone-b.pin._zone.hdls.db.svc.cluster.local. 5 IN AAAA fd00::2"],
            ),
            ("zone-c.pin._zone.hdls.db.svc.cluster.local.", A, OK, &[]),
            ("zone-a.pin._zone.hdls.db.svc.cluster.local.", AAAA, OK, &[]),
            ("zone-a.pin._zone.hdls.db.svc.cluster.local.", TXT, OK, &[]),
            (
                &format!("{pc}._zone.hdls.db.svc.cluster.local."),
                A,
                OK,
                &[&a(pc, "10.1.0.1"), &a(pc, "10.1.0.2"), &a(pc, "10.1.0.3")],
            ),
            (
                "zone-b.pin._zone.hdls.db.svc.cluster.local.",
                SRV,
                OK,
                &[
                    "zone-b.pin._zone.hdls.db.svc.cluster.local. 5 IN SRV 0 50 80 10-1-0-2.hdls.db.svc.cluster.local.",
                    "zone-b.pin._zone.hdls.db.svc.cluster.local. 5 IN SRV 0 50 80 fd00--2.hdls.db.svc.cluster.local.",
                ],
            ),
            ("zone-a.pin._zone.vip.db.svc.cluster.local.", A, NX, &[]),
            ("zone-a.pin._zone.ghost.db.svc.cluster.local.", A, NX, &[]),
            ("zone-a.nearest._zone.hdls.db.svc.cluster.local.", A, NX, &[]),
        ],
    );
}

#[test]
fn without_the_option_zonal_names_do_not_exist() {
    let r = zoned_router(false);
    table(&r, &[("zone-a.pin._zone.hdls.db.svc.cluster.local.", A, NX, &[])]);
}

#[test]
fn the_direct_writer_declines_zonal_names() {
    let r = zoned_router(true);
    let cluster = r.blocks[0].cluster.as_ref().expect("cluster");
    let meta = hickory_proto::op::Metadata::new(
        7,
        hickory_proto::op::MessageType::Query,
        hickory_proto::op::OpCode::Query,
    );
    for qname in [
        "zone-a.pin._zone.hdls.db.svc.cluster.local.",
        "zone-c.prefer._zone.hdls.db.svc.cluster.local.",
    ] {
        let query = Query::query(name(qname), A);
        let zone = cluster.zone_for(query.name()).expect("zone");
        let echo = crate::query::reply::echo::Echo {
            meta: &meta,
            query: Some(&query),
            edns: None,
        };
        let how = super::super::direct::Direct {
            echo: &echo,
            limit: 512,
            shuffle: false,
        };
        let (mut answer, mut out) = (Answer::default(), Vec::new());
        let wrote = cluster.write_direct(&query, zone, &how, &mut answer, &mut out);
        assert_eq!(wrote, None, "{qname}: left to the Record path");
    }
}
