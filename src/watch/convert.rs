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

use hickory_proto::rr::Name;

use super::lean::{EndpointSlice, Meta as ObjectMeta, Namespace, Pod, Service};

use crate::config::{KubernetesConfig, PodMode};
use crate::store::{External, PortIn, Proto, Record, ServiceKind};

mod mcs;
pub use mcs::{service_import, MCS_SERVICE_NAME_LABEL, SOURCE_CLUSTER_LABEL};

/// The label tying an EndpointSlice to its Service.
pub const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";

/// A malformed object, skipped: `kind namespace/name: reason`.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{kind} {namespace}/{name}: {reason}")]
pub struct Invalid {
    pub kind: &'static str,
    pub namespace: String,
    pub name: String,
    pub reason: String,
}

pub(super) fn invalid(kind: &'static str, meta: &ObjectMeta, reason: impl Into<String>) -> Invalid {
    Invalid {
        kind,
        namespace: meta.namespace.clone().unwrap_or_default(),
        name: meta.name.clone().unwrap_or_default(),
        reason: reason.into(),
    }
}

/// `(namespace, name)` of a namespaced object, lower-cased.
pub(super) fn ids(kind: &'static str, meta: &ObjectMeta) -> Result<(String, String), Invalid> {
    match (&meta.namespace, &meta.name) {
        (Some(ns), Some(name)) if !ns.is_empty() && !name.is_empty() => {
            Ok((ns.to_ascii_lowercase(), name.to_ascii_lowercase()))
        }
        _ => Err(invalid(kind, meta, "metadata.namespace and metadata.name are required")),
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
    static NO_LABELS: std::collections::BTreeMap<String, String> = std::collections::BTreeMap::new();
    let name = meta.name.as_deref().filter(|n| !n.is_empty());
    let name = name
        .ok_or_else(|| invalid("Namespace", meta, "metadata.name is required"))?
        .to_ascii_lowercase();
    let labels = meta.labels.as_ref().unwrap_or(&NO_LABELS);
    let selected = cfg.namespace_labels.as_ref().is_none_or(|s| s.matches(labels));
    Ok((selected && cfg.namespace_exposed(&name)).then_some(Record::Namespace { name }))
}

pub fn service(cfg: &KubernetesConfig, svc: &Service) -> Result<Option<Record>, Invalid> {
    const KIND: &str = "Service";
    let (ns, name) = ids(KIND, &svc.metadata)?;
    let empty = std::collections::BTreeMap::new();
    let labels = svc.metadata.labels.as_ref().unwrap_or(&empty);
    if !cfg.namespace_exposed(&ns) || cfg.labels.as_ref().is_some_and(|s| !s.matches(labels)) {
        return Ok(None);
    }
    let spec = svc
        .spec
        .as_ref()
        .ok_or_else(|| invalid(KIND, &svc.metadata, "spec is required"))?;
    let kind = if spec.type_.as_deref() == Some("ExternalName") {
        let target = spec.external_name.as_deref().unwrap_or_default();
        let name = Name::from_ascii(target).ok().filter(|_| !target.is_empty());
        let mut target_name = name.ok_or_else(|| {
            invalid(
                KIND,
                &svc.metadata,
                format!("spec.externalName '{target}' is not a DNS name"),
            )
        })?;
        target_name.set_fqdn(true);
        ServiceKind::ExternalName(Box::new(target_name))
    } else if spec.cluster_ip.as_deref() == Some("None") {
        ServiceKind::Headless
    } else {
        let texts: Vec<&String> = match &spec.cluster_ips {
            Some(ips) if !ips.is_empty() => ips.iter().collect(),
            _ => spec.cluster_ip.iter().collect(),
        };
        if texts.is_empty() {
            return Err(invalid(KIND, &svc.metadata, "spec.clusterIP is empty (not allocated)"));
        }
        let ips = texts
            .iter()
            .map(|t| {
                t.parse::<IpAddr>().map_err(|_| {
                    invalid(
                        KIND,
                        &svc.metadata,
                        format!("spec.clusterIPs: '{t}' is not an IP address"),
                    )
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        ServiceKind::ClusterIp(ips.into_boxed_slice())
    };
    let ports = spec.ports.iter().flatten();
    let ports = ports.map(|p| {
        let number = p
            .port
            .ok_or_else(|| invalid(KIND, &svc.metadata, "spec.ports[].port is required"))?;
        port(KIND, &svc.metadata, p.name.as_deref(), p.protocol.as_deref(), number)
    });
    let ports = ports.collect::<Result<Vec<_>, _>>()?;
    let selector = spec.selector.as_ref().is_some_and(|s| !s.is_empty());
    let external = external(svc)?;
    Ok(Some(Record::Service {
        namespace: ns,
        name,
        kind,
        selector,
        ports,
        external,
    }))
}

/// `spec.externalIPs` and `status.loadBalancer.ingress[]` (an ingress's
/// `ip`, else its `hostname`), for `k8s_external`; `None` without any.
fn external(svc: &Service) -> Result<Option<Box<External>>, Invalid> {
    const KIND: &str = "Service";
    let spec_ips = svc.spec.iter().flat_map(|s| s.external_ips.iter().flatten());
    let ingress = svc.status.iter().flat_map(|s| s.load_balancer.iter());
    let ingress = ingress.flat_map(|lb| lb.ingress.iter().flatten());
    let (mut ips, mut hostnames) = (Vec::new(), Vec::new());
    let bad = |what: &str, text: &str| invalid(KIND, &svc.metadata, format!("{what}: '{text}' is not valid"));
    for text in spec_ips {
        ips.push(text.parse::<IpAddr>().map_err(|_| bad("spec.externalIPs", text))?);
    }
    for lb in ingress {
        match (lb.ip.as_deref().filter(|t| !t.is_empty()), lb.hostname.as_deref()) {
            (Some(text), _) => ips.push(text.parse().map_err(|_| bad("status.loadBalancer.ingress.ip", text))?),
            (None, Some(text)) if !text.is_empty() => {
                let mut host = Name::from_ascii(text).map_err(|_| bad("status.loadBalancer.ingress.hostname", text))?;
                host.set_fqdn(true);
                hostnames.push(host.to_lowercase());
            }
            _ => {}
        }
    }
    Ok(External::boxed(ips, hostnames))
}

/// One port: its name lower-cased (empty when unnamed), protocol, number.
pub(super) fn port(
    kind: &'static str,
    meta: &ObjectMeta,
    name: Option<&str>,
    proto: Option<&str>,
    number: i32,
) -> Result<PortIn, Invalid> {
    let proto = Proto::from_k8s(proto).ok_or_else(|| invalid(kind, meta, "unknown port protocol"))?;
    let port = u16::try_from(number).map_err(|_| invalid(kind, meta, format!("port {number} out of range")))?;
    Ok(PortIn {
        name: name.unwrap_or_default().to_ascii_lowercase(),
        proto,
        port,
    })
}

pub fn endpoint_slice(cfg: &KubernetesConfig, slice: &EndpointSlice) -> Result<Option<Record>, Invalid> {
    const KIND: &str = "EndpointSlice";
    let (ns, name) = ids(KIND, &slice.metadata)?;
    let labels = slice.metadata.labels.as_ref();
    if let Some(service) = labels.and_then(|l| l.get(MCS_SERVICE_NAME_LABEL)) {
        return mcs::endpoint_slice(cfg, slice, service);
    }
    let Some(service) = labels.and_then(|l| l.get(SERVICE_NAME_LABEL)) else {
        return Ok(None); // not managed for a Service: no DNS records
    };
    if cfg.noendpoints || !cfg.namespace_exposed(&ns) || slice.address_type == "FQDN" {
        return Ok(None);
    }
    let (ports, endpoints) = ports_and_endpoints(cfg, slice)?;
    let zones = if cfg.client.zonal { zones(slice) } else { Vec::new() };
    let service = service.to_ascii_lowercase();
    let trigger = slice.metadata.trigger_time.as_ref();
    let trigger = trigger.and_then(|t| t.0.as_deref()).and_then(parse_time);
    Ok(Some(Record::Slice {
        namespace: ns,
        name,
        service,
        ports,
        endpoints,
        zones,
        trigger,
    }))
}

/// Each ready endpoint address's topology zone, lower-cased (`""`: none),
/// in the order [`ports_and_endpoints`] keeps them; empty when no endpoint
/// has one. Kept only under `zonal`, as CoreDNS keeps them.
fn zones(slice: &EndpointSlice) -> Vec<String> {
    let ready = slice.endpoints.iter().flatten();
    let ready = ready.filter(|ep| ep.conditions.as_ref().and_then(|c| c.ready) != Some(false));
    if ready.clone().all(|ep| ep.zone.as_deref().is_none_or(str::is_empty)) {
        return Vec::new();
    }
    ready
        .flat_map(|ep| {
            let zone = ep.zone.as_deref().unwrap_or_default().to_ascii_lowercase();
            std::iter::repeat_n(zone, ep.addresses.len())
        })
        .collect()
}

/// A slice's ports and ready endpoints `(address, hostname)`.
#[allow(clippy::type_complexity)]
fn ports_and_endpoints(
    cfg: &KubernetesConfig,
    slice: &EndpointSlice,
) -> Result<(Vec<PortIn>, Vec<(IpAddr, Option<String>)>), Invalid> {
    const KIND: &str = "EndpointSlice";
    let ports = slice.ports.iter().flatten().filter_map(|p| Some((p, p.port?)));
    let ports = ports.map(|(p, n)| port(KIND, &slice.metadata, p.name.as_deref(), p.protocol.as_deref(), n));
    let ports = ports.collect::<Result<Vec<_>, _>>()?;
    // Exactly sized: a slice's record waits in the writer's queue (a
    // growing Vec held 384 bytes for 5 endpoints instead of 240).
    let count = slice.endpoints.iter().flatten().map(|ep| ep.addresses.len()).sum();
    let mut endpoints = Vec::with_capacity(count);
    for ep in slice.endpoints.iter().flatten() {
        if ep.conditions.as_ref().and_then(|c| c.ready) == Some(false) {
            continue;
        }
        for text in &ep.addresses {
            let bad = || {
                invalid(
                    KIND,
                    &slice.metadata,
                    format!("endpoint address '{text}' is not an IP address"),
                )
            };
            let addr: IpAddr = text.parse().map_err(|_| bad())?;
            let target = ep
                .target_ref
                .as_ref()
                .filter(|r| cfg.endpoint_pod_names && r.kind.as_deref() == Some("Pod"));
            let pod_name = target.and_then(|r| r.name.as_deref());
            let host = match (ep.hostname.as_deref(), pod_name) {
                (Some(h), _) if !h.is_empty() => Some(h.to_ascii_lowercase()),
                (_, Some(p)) if !p.is_empty() && !p.contains('.') => Some(p.to_ascii_lowercase()),
                _ => None,
            };
            endpoints.push((addr, host));
        }
    }
    Ok((ports, endpoints))
}

/// An RFC 3339 time as the API writes it (`2026-11-22T10:00:00Z`).
fn parse_time(text: &str) -> Option<std::time::SystemTime> {
    let ts: k8s_openapi::jiff::Timestamp = text.parse().ok()?;
    Some(std::time::SystemTime::from(ts))
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
    let mut texts: Vec<&str> = status.pod_ips.iter().flatten().map(|p| p.ip.as_str()).collect();
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
    use std::path::Path;

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

    fn convert(yaml: &str) -> Result<Option<Record>, super::Invalid> {
        let text = ".:53 {\n    kubernetes cluster.local {\n        snapshot x.yaml\n    }\n}\n";
        let config = crate::config::load_str(Path::new("/tmp/Corefile"), text, 53).expect("config");
        let cfg = config.servers[0].kubernetes.clone().expect("kubernetes");
        let svc: super::super::lean::Service = serde_yaml_ng::from_str(yaml).expect("yaml");
        super::service(&cfg, &svc)
    }

    /// An endpoint's `zone` is kept, lower-cased, under `zonal` only.
    #[test]
    fn endpoint_zones_are_kept_under_zonal_only() {
        let slice = r#"{"metadata": {"name": "db-1", "namespace": "shop",
            "labels": {"kubernetes.io/service-name": "db"}}, "addressType": "IPv4",
            "endpoints": [{"addresses": ["10.0.0.1"], "zone": "US-West-2a"},
                          {"addresses": ["10.0.0.2"], "conditions": {"ready": false}, "zone": "b"},
                          {"addresses": ["10.0.0.3", "10.0.0.4"]}]}"#;
        let slice: super::super::lean::EndpointSlice = serde_json::from_str(slice).expect("json");
        for (zonal, want) in [(true, vec!["us-west-2a", "", ""]), (false, vec![])] {
            let option = if zonal { "zonal" } else { "" };
            let text = format!(".:53 {{\n kubernetes cluster.local {{\n snapshot x.yaml\n {option}\n }}\n}}\n");
            let config = crate::config::load_str(Path::new("/tmp/Corefile"), &text, 53).expect("config");
            let cfg = config.servers[0].kubernetes.clone().expect("kubernetes");
            let Ok(Some(Record::Slice { endpoints, zones, .. })) = super::endpoint_slice(&cfg, &slice) else {
                panic!("a slice")
            };
            assert_eq!(endpoints.len(), 3, "the ready addresses");
            assert_eq!(zones, want, "zonal {zonal}");
        }
    }

    const LB: &str =
        "metadata: {name: lb, namespace: shop}\nspec:\n  clusterIP: 10.96.0.9\n  externalIPs: [198.51.100.1]\n";

    #[test]
    fn external_ips_and_load_balancer_ingress_are_kept() {
        let yaml = format!("{LB}status:\n  loadBalancer:\n    ingress:\n    - ip: 203.0.113.7\n    - hostname: LB.Example.NET\n    - {{}}\n");
        let Ok(Some(Record::Service { external: Some(e), .. })) = convert(&yaml) else {
            panic!("a service with external addresses")
        };
        let ips: Vec<String> = e.ips.iter().map(ToString::to_string).collect();
        assert_eq!(ips, ["198.51.100.1", "203.0.113.7"], "spec first, then ingress");
        assert_eq!(e.hostnames[0].to_string(), "lb.example.net.");
    }

    #[test]
    fn no_external_address_costs_no_allocation_and_bad_ones_are_named() {
        let plain = "metadata: {name: web, namespace: shop}\nspec: {clusterIP: 10.96.0.8}\n";
        assert!(matches!(
            convert(plain),
            Ok(Some(Record::Service { external: None, .. }))
        ));
        let bad = LB.replace("198.51.100.1", "not-an-ip");
        let err = convert(&bad).expect_err("a bad external IP is reported");
        assert!(err.to_string().contains("spec.externalIPs: 'not-an-ip'"), "{err}");
    }
}
