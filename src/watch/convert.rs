//! API objects → compact records, the moment they arrive.
//!
//! Each function takes one object, applies the `kubernetes` directive's
//! filters (`namespaces`, `namespace_labels`, `labels`, `noendpoints`,
//! `pods`), and returns the few fields DNS needs as a [`Record`]; the
//! object is dropped by the caller. `Ok(None)` means the filters leave
//! the object out (an update that filters out a served object deletes
//! it). A malformed object is an [`Invalid`] error naming it, and nothing
//! of it is kept.

use std::net::IpAddr;

use super::lean::{EndpointSlice, Labels, Meta as ObjectMeta, Namespace, Pod};

use crate::kubernetes::{KubernetesConfig, PodMode};
use crate::store::Record;
use fields::{ids, invalid};

mod fields;
mod mcs;
mod service;
mod slice;
pub use fields::Invalid;
pub use mcs::{service_import, MCS_SERVICE_NAME_LABEL, SOURCE_CLUSTER_LABEL};
pub use service::service;
pub use slice::SERVICE_NAME_LABEL;

/// An EndpointSlice: a multi-cluster one (labelled for an imported
/// service) or a Service's.
pub fn endpoint_slice(cfg: &KubernetesConfig, slice: &EndpointSlice) -> Result<Option<Record>, Invalid> {
    let labels = slice.metadata.labels.as_ref();
    match labels.and_then(|l| l.get(MCS_SERVICE_NAME_LABEL)) {
        Some(service) => mcs::endpoint_slice(cfg, slice, service),
        None => slice::endpoint_slice(cfg, slice),
    }
}

pub fn namespace(cfg: &KubernetesConfig, ns: &Namespace) -> Result<Option<Record>, Invalid> {
    namespace_meta(cfg, &ns.metadata)
}

/// A Namespace from its metadata alone (the API source watches metadata).
/// Under `namespace_labels` one whose labels do not match is left out
/// (an update that stops matching deletes it): the store holds the
/// Namespace objects that match and nothing more.
pub fn namespace_meta(cfg: &KubernetesConfig, meta: &ObjectMeta) -> Result<Option<Record>, Invalid> {
    static NO_LABELS: Labels<'static> = std::collections::BTreeMap::new();
    let name = meta.name.as_deref().filter(|n| !n.is_empty());
    let name = name
        .ok_or_else(|| invalid("Namespace", meta, "metadata.name is required"))?
        .to_ascii_lowercase();
    let labels = meta.labels.as_ref().unwrap_or(&NO_LABELS);
    let selected = cfg.namespace_labels.as_ref().is_none_or(|s| s.matches(labels));
    Ok((selected && cfg.namespace_exposed(&name)).then_some(Record::Namespace { name }))
}

/// A pod's IPs under `pods verified`; pods that are done (Succeeded,
/// Failed, Unknown) or being deleted (`deletionTimestamp` set) have none.
pub fn pod(cfg: &KubernetesConfig, pod: &Pod) -> Result<Option<Record>, Invalid> {
    let (ns, name) = ids("Pod", &pod.metadata)?;
    if cfg.pods != PodMode::Verified || !cfg.namespace_exposed(&ns) {
        return Ok(None);
    }
    // Being deleted: CoreDNS stops answering for it at once, and so do we
    // (its IP may be handed to a new pod before the object is gone).
    if pod.metadata.deletion_timestamp.is_some() {
        return Ok(None);
    }
    let Some(status) = &pod.status else { return Ok(None) };
    if matches!(status.phase.as_deref(), Some("Succeeded" | "Failed" | "Unknown")) {
        return Ok(None);
    }
    let mut texts: Vec<&str> = status.pod_ips.iter().flatten().map(|p| &*p.ip).collect();
    texts.extend(status.pod_ip.as_deref());
    let mut ips = Vec::new();
    for text in texts {
        let bad = || invalid("Pod", &pod.metadata, format!("podIP '{text}' is not an IP address"));
        let ip: IpAddr = text.parse().map_err(|_| bad())?;
        if !ips.contains(&ip) {
            ips.push(ip);
        }
    }
    Ok(Some(Record::Pod {
        namespace: ns,
        name,
        ips,
        running: status.phase.as_deref() == Some("Running"),
    }))
}

#[cfg(test)]
mod tests {
    use crate::store::Record;

    /// A pod being deleted (it has a `deletionTimestamp`) is not served
    /// under `pods verified`; a running one is.
    #[test]
    fn verified_pods_skip_pods_being_deleted() {
        let corefile = "cluster.local {\n kubernetes {\n snapshot /nonexistent.yaml\n pods verified\n }\n}\n";
        let config = crate::config::load_str(std::path::Path::new("/t/Corefile"), corefile, 53).expect("loads");
        let k = config.servers[0].kubernetes.clone().expect("kubernetes");
        let pod = |name: &str, ip: &str, deleting: bool| {
            let stamp = if deleting {
                "\n    deletionTimestamp: \"2026-11-24T00:00:00Z\""
            } else {
                ""
            };
            format!(
                "- apiVersion: v1\n  kind: Pod\n  metadata:\n    namespace: shop\n    name: {name}{stamp}\n  status:\n    phase: Running\n    podIP: {ip}\n"
            )
        };
        let dump = format!(
            "apiVersion: v1\nkind: List\nitems:\n{}{}",
            pod("live", "10.244.1.1", false),
            pod("going", "10.244.1.2", true)
        );
        let loaded = crate::watch::snapshot::read_str("t.yaml", &dump, &k).expect("dump");
        let pods: Vec<&str> = loaded
            .records
            .iter()
            .filter_map(|r| match r {
                Record::Pod { name, .. } => Some(name.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(pods, ["live"]);
    }
}
