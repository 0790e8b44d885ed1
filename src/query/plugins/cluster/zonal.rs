//! Zone-scoped names of headless Services (the `kubernetes` option
//! `zonal`, CoreDNS 1.14): `<topology-zone>.pin._zone.<svc>.<ns>.svc.<zone>`
//! and `<topology-zone>.prefer._zone.<svc>.<ns>.svc.<zone>`.
//!
//! The topology zone is every label left of the directive, joined with
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

use hickory_proto::rr::{Name, RecordType};

use super::qname::Qname;
use super::service::{addresses, srv_records};
use super::{Ctx, Found};
use crate::store::ServiceKind;

/// The label anchoring a zonal name, right of the directive.
const ANCHOR: &str = "_zone";

/// Parses a name of `rel` (> 5) labels below the zone: a [`Qname::Zonal`]
/// when it has the shape, else [`Qname::Unknown`]. The labels are
/// lower-cased into `buf`, the topology zone's with dots between them.
pub fn parse<'a>(name: &Name, rel: usize, buf: &'a mut [u8; 255]) -> Qname<'a> {
    let zone_labels = rel - 5;
    // Where the topology zone ends and each of the five labels after it.
    let mut ends = [0usize; 6];
    let mut len = 0;
    for (i, label) in name.iter().take(rel).enumerate() {
        if i > 0 && i < zone_labels {
            let Some(dot) = buf.get_mut(len) else {
                return Qname::Unknown;
            };
            *dot = b'.';
            len += 1;
        }
        let Some(dst) = buf.get_mut(len..len + label.len()) else {
            return Qname::Unknown;
        };
        dst.copy_from_slice(label);
        dst.make_ascii_lowercase();
        len += label.len();
        if let Some(end) = (i + 1).checked_sub(zone_labels).and_then(|k| ends.get_mut(k)) {
            *end = len;
        }
    }
    let buf: &'a [u8] = buf;
    let mut parts = [""; 6];
    let mut start = 0;
    for (part, end) in parts.iter_mut().zip(ends) {
        match buf.get(start..end).map(std::str::from_utf8) {
            Some(Ok(text)) => *part = text,
            _ => return Qname::Unknown,
        }
        start = end;
    }
    match parts {
        [zone, directive @ ("pin" | "prefer"), ANCHOR, svc, ns, "svc"] => Qname::Zonal {
            ns,
            svc,
            zone,
            prefer: directive == "prefer",
        },
        _ => Qname::Unknown,
    }
}

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
