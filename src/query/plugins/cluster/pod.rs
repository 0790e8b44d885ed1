//! Pod names: `<dashed-ip>.<ns>.pod.<zone>` under `pods insecure` (any
//! address in an existing namespace) or `pods verified` (a running pod in
//! that namespace has the address). `pods disabled` has no such names.

use super::ctx::Ctx;
use super::found::{exists, Found};
use crate::kubernetes::PodMode;
use crate::query::reply;
use crate::store::records::undash;

/// `<ns>.pod.<zone>`: an empty non-terminal while pods are served.
pub fn namespace(c: &mut Ctx<'_, '_>, ns: &str) -> Found {
    exists(c.cfg.pods != PodMode::Disabled && c.snap.namespace(ns).is_some())
}

pub fn pod(c: &mut Ctx<'_, '_>, ns: &str, ip: &str) -> Found {
    let Some(addr) = undash(ip) else {
        return Found::NxDomain;
    };
    let known = match c.cfg.pods {
        PodMode::Disabled => false,
        PodMode::Insecure => c.snap.namespace(ns).is_some(),
        PodMode::Verified => c.snap.pod_exists(ns, addr),
    };
    if !known {
        return Found::NxDomain;
    }
    let owner = &c.owner;
    match reply::address(owner, c.cfg.ttl, addr, c.qtype) {
        Some(record) => {
            c.out.answers.push(record);
            Found::Records
        }
        None => Found::NoData,
    }
}
