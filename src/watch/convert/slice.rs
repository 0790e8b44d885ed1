//! An EndpointSlice → its record: the ready endpoints with their
//! hostnames, the ports, the topology zones (under `zonal`) and the
//! trigger time the programming latency is measured from. A slice
//! labelled for an imported service is [`super::mcs`]'s.

use std::net::IpAddr;

use super::fields::{ids, invalid, port, Invalid};
use crate::kubernetes::KubernetesConfig;
use crate::store::{PortIn, Record};
use crate::watch::lean::EndpointSlice;

/// The label tying an EndpointSlice to its Service.
pub const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";

/// A Service's EndpointSlice (not one labelled for an imported service).
pub(super) fn endpoint_slice(cfg: &KubernetesConfig, slice: &EndpointSlice) -> Result<Option<Record>, Invalid> {
    const KIND: &str = "EndpointSlice";
    let (ns, name) = ids(KIND, &slice.metadata)?;
    let labels = slice.metadata.labels.as_ref();
    let Some(service) = labels.and_then(|l| l.get(SERVICE_NAME_LABEL)) else {
        return Ok(None); // not managed for a Service: no DNS records
    };
    if cfg.noendpoints || !cfg.namespace_exposed(&ns) || &*slice.address_type == "FQDN" {
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
pub(super) fn ports_and_endpoints(
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

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::store::Record;

    /// An endpoint's `zone` is kept, lower-cased, under `zonal` only.
    #[test]
    fn endpoint_zones_are_kept_under_zonal_only() {
        let slice = r#"{"metadata": {"name": "db-1", "namespace": "shop",
            "labels": {"kubernetes.io/service-name": "db"}}, "addressType": "IPv4",
            "endpoints": [{"addresses": ["10.0.0.1"], "zone": "US-West-2a"},
                          {"addresses": ["10.0.0.2"], "conditions": {"ready": false}, "zone": "b"},
                          {"addresses": ["10.0.0.3", "10.0.0.4"]}]}"#;
        let slice: crate::watch::lean::EndpointSlice = serde_json::from_str(slice).expect("json");
        for (zonal, want) in [(true, vec!["us-west-2a", "", ""]), (false, vec![])] {
            let option = if zonal { "zonal" } else { "" };
            let text = format!(".:53 {{\n kubernetes cluster.local {{\n snapshot x.yaml\n {option}\n }}\n}}\n");
            let config = crate::config::load_str(Path::new("/tmp/Corefile"), &text, 53).expect("config");
            let cfg = config.servers[0].kubernetes.clone().expect("kubernetes");
            let Ok(Some(Record::Slice { endpoints, zones, .. })) = crate::watch::convert::endpoint_slice(&cfg, &slice)
            else {
                panic!("a slice")
            };
            assert_eq!(endpoints.len(), 3, "the ready addresses");
            assert_eq!(zones, want, "zonal {zonal}");
        }
    }
}
