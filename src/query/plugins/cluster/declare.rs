//! What the answer to a cluster name reads from the snapshot: the
//! dependencies the memo keeps its answer by.

use super::apex;
use super::qname::Qname;
use crate::kubernetes::KubernetesConfig;
use crate::store::records::undash;
use crate::store::{Dep, Deps};

/// What the answer to `name` reads from the snapshot ([`Ctx::declare`]).
pub(crate) fn declare(cfg: &KubernetesConfig, name: &Qname<'_>, deps: &mut Deps) {
    match *name {
        Qname::Apex => *deps = Deps::EVERYTHING,
        Qname::NsHost => deps.add(Dep::service(apex::DNS_SERVICE.0, apex::DNS_SERVICE.1)),
        Qname::DnsVersion | Qname::Ent | Qname::Unknown => {}
        Qname::ClusterEndpoint { .. } => {} // NXDOMAIN outside multicluster zones
        Qname::Namespace { ns } | Qname::PodNamespace { ns } => deps.add(Dep::namespace(ns)),
        Qname::Service { ns, svc }
        | Qname::ProtoEnt { ns, svc, .. }
        | Qname::Endpoint { ns, svc, .. }
        | Qname::Port { ns, svc, .. }
        | Qname::Zonal { ns, svc, .. } => {
            deps.add(Dep::namespace(ns));
            deps.add(Dep::service(ns, svc));
        }
        Qname::Pod { ns, ip } => match (cfg.pods, undash(ip)) {
            (crate::kubernetes::PodMode::Verified, Some(addr)) => deps.add(Dep::pod(ns, addr)),
            _ => deps.add(Dep::namespace(ns)),
        },
    }
}
