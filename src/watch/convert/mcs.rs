//! Multi-cluster Services objects → compact records: a ServiceImport
//! (`multicluster.x-k8s.io/v1alpha1`) and an EndpointSlice labelled
//! `multicluster.kubernetes.io/service-name`, whose cluster is its
//! `multicluster.kubernetes.io/source-cluster` label. Both are served only
//! when the directive has a `multicluster` zone.

use std::net::IpAddr;

use super::fields::{ids, invalid, port, Invalid};
use super::slice::ports_and_endpoints;
use crate::kubernetes::KubernetesConfig;
use crate::store::mcs::ImportKind;
use crate::store::Record;
use crate::watch::lean::{EndpointSlice, ServiceImport};

/// The label tying an EndpointSlice to an imported service.
pub const MCS_SERVICE_NAME_LABEL: &str = "multicluster.kubernetes.io/service-name";

/// The label naming the cluster a multi-cluster slice's endpoints are in.
pub const SOURCE_CLUSTER_LABEL: &str = "multicluster.kubernetes.io/source-cluster";

pub fn service_import(cfg: &KubernetesConfig, import: &ServiceImport) -> Result<Option<Record>, Invalid> {
    const KIND: &str = "ServiceImport";
    let (ns, name) = ids(KIND, &import.metadata)?;
    if cfg.multicluster.is_empty() || !cfg.namespace_exposed(&ns) {
        return Ok(None);
    }
    let meta = &import.metadata;
    let spec = import
        .spec
        .as_ref()
        .ok_or_else(|| invalid(KIND, meta, "spec is required"))?;
    let kind = match spec.type_.as_deref() {
        Some("Headless") => ImportKind::Headless,
        Some("ClusterSetIP") | None => {
            let ips = spec.ips.iter().flatten().map(|t| {
                t.parse::<IpAddr>()
                    .map_err(|_| invalid(KIND, meta, format!("spec.ips: '{t}' is not an IP address")))
            });
            ImportKind::ClusterSetIp(ips.collect::<Result<Vec<_>, _>>()?.into_boxed_slice())
        }
        Some(other) => return Err(invalid(KIND, meta, format!("spec.type '{other}' is unknown"))),
    };
    let ports = spec.ports.iter().flatten().map(|p| {
        let number = p
            .port
            .ok_or_else(|| invalid(KIND, meta, "spec.ports[].port is required"))?;
        port(KIND, meta, p.name.as_deref(), p.protocol.as_deref(), number)
    });
    Ok(Some(Record::Import {
        namespace: ns,
        name,
        kind,
        ports: ports.collect::<Result<Vec<_>, _>>()?,
    }))
}

/// An EndpointSlice carrying `multicluster.kubernetes.io/service-name`.
pub(super) fn endpoint_slice(
    cfg: &KubernetesConfig,
    slice: &EndpointSlice,
    service: &str,
) -> Result<Option<Record>, Invalid> {
    const KIND: &str = "EndpointSlice";
    let (ns, name) = ids(KIND, &slice.metadata)?;
    if cfg.multicluster.is_empty() || cfg.noendpoints || !cfg.namespace_exposed(&ns) || &*slice.address_type == "FQDN" {
        return Ok(None);
    }
    let labels = slice.metadata.labels.as_ref();
    let cluster = labels
        .and_then(|l| l.get(SOURCE_CLUSTER_LABEL))
        .map(|c| c.to_ascii_lowercase());
    let Some(cluster) = cluster.filter(|c| is_label(c)) else {
        return Err(invalid(
            KIND,
            &slice.metadata,
            format!("label {SOURCE_CLUSTER_LABEL} must name the cluster (one DNS label)"),
        ));
    };
    let (ports, endpoints) = ports_and_endpoints(cfg, slice)?;
    Ok(Some(Record::McsSlice {
        namespace: ns,
        name,
        service: service.to_ascii_lowercase(),
        cluster,
        ports,
        endpoints,
    }))
}

/// Whether `text` can be one label of a name (a cluster ID is one).
fn is_label(text: &str) -> bool {
    !text.is_empty() && text.len() <= 63 && !text.contains('.')
}
