//! Zone-scoped names of headless Services (the `kubernetes` option
//! `zonal`, CoreDNS 1.14): `<topology-zone>.pin._zone.<svc>.<ns>.svc.<zone>`
//! and `<topology-zone>.prefer._zone.<svc>.<ns>.svc.<zone>`.
//!
//! The topology zone is every label left of the directive (parsed by
//! [`super::qname`]), joined with
//! dots (zone label values may hold dots). It selects the endpoints whose
//! EndpointSlice endpoint `zone` equals it (compared lower-cased; an
//! endpoint without a zone is never selected):
//!
//! | name                                  | answer                                           |
//! |---------------------------------------|--------------------------------------------------|
//! | `pin`, some endpoint in the zone      | A/AAAA and SRV (with glue) of those endpoints    |
//! | `pin`, none in the zone               | NODATA, every type (the name exists)             |
//! | `prefer`                              | as `pin`, or every endpoint when none is there   |
//! | other types on either                 | NODATA                                           |
//! | missing, ClusterIP or ExternalName    | NXDOMAIN                                         |
//! | another directive, option off, or a   | NXDOMAIN (the stock "too long" name)             |
//! | `multicluster` zone                   |                                                  |
//!
//! Zonal names are answered at query time only: a zone transfer never
//! lists them.

use hickory_proto::rr::RecordType;

use super::ctx::Ctx;
use super::found::Found;
use super::service::{addresses, srv_records};
use crate::store::ServiceKind;

/// The records of a zonal name (see the table above). `c.cfg` decides
/// whether such names exist at all; `multicluster` zones never reach here.
pub fn zonal(c: &mut Ctx<'_, '_>, ns: &str, svc: &str, zone: &str, prefer: bool) -> Found {
    if !c.cfg.client.zonal {
        return Found::NxDomain;
    }
    let Some(service) = c.snap.service(ns, svc) else {
        return Found::NxDomain;
    };
    if service.kind != Some(ServiceKind::Headless) {
        return Found::NxDomain;
    }
    let in_zone = |z: Option<&str>| z == Some(zone);
    let zoned = || service.slices.iter().flat_map(|s| s.endpoints.iter_zoned());
    let populated = zoned().any(|(_, z)| in_zone(z));
    let selected = (populated || !prefer).then_some(zone);
    if c.qtype == RecordType::SRV {
        return srv_records(c, ns, svc, service, None, selected);
    }
    let chosen = zoned().filter(|(_, z)| selected.is_none() || *z == selected);
    addresses(c, chosen.map(|(e, _)| e.addr));
    Found::Records // none of the type asked: NODATA (`conclude`)
}
