//! API objects → compact records, the moment they arrive.
//!
//! Each function takes one object, applies the `kubernetes` directive's
//! filters (`namespaces`, `labels`, `noendpoints`, `pods`), and hands the
//! few fields DNS needs to the [`Builder`]; the object is dropped by the
//! caller. A malformed object is an [`Invalid`] error naming it, and
//! nothing of it is kept.

use std::net::IpAddr;
use std::sync::Arc;

use hickory_proto::rr::Name;
use k8s_openapi::api::core::v1::{Namespace, Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::config::{KubernetesConfig, PodMode};
use crate::store::records::dashed;
use crate::store::{Builder, Endpoint, Port, Proto, ServiceKind};

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

fn invalid(kind: &'static str, meta: &ObjectMeta, reason: impl Into<String>) -> Invalid {
    Invalid {
        kind,
        namespace: meta.namespace.clone().unwrap_or_default(),
        name: meta.name.clone().unwrap_or_default(),
        reason: reason.into(),
    }
}

/// `(namespace, name)` of a namespaced object, lower-cased.
fn ids(kind: &'static str, meta: &ObjectMeta) -> Result<(String, String), Invalid> {
    match (&meta.namespace, &meta.name) {
        (Some(ns), Some(name)) if !ns.is_empty() && !name.is_empty() => {
            Ok((ns.to_ascii_lowercase(), name.to_ascii_lowercase()))
        }
        _ => Err(invalid(kind, meta, "metadata.namespace and metadata.name are required")),
    }
}

pub fn namespace(b: &mut Builder, cfg: &KubernetesConfig, ns: &Namespace) -> Result<(), Invalid> {
    let name = ns.metadata.name.as_deref().filter(|n| !n.is_empty());
    let name = name.ok_or_else(|| invalid("Namespace", &ns.metadata, "metadata.name is required"))?;
    let name = name.to_ascii_lowercase();
    if cfg.namespace_exposed(&name) {
        b.add_namespace(&name);
    }
    Ok(())
}

pub fn service(b: &mut Builder, cfg: &KubernetesConfig, svc: &Service) -> Result<(), Invalid> {
    const KIND: &str = "Service";
    let (ns, name) = ids(KIND, &svc.metadata)?;
    if !cfg.namespace_exposed(&ns) {
        return Ok(());
    }
    if let Some(selector) = &cfg.labels {
        if !selector.matches(svc.metadata.labels.as_ref().unwrap_or(&Default::default())) {
            return Ok(());
        }
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
        ServiceKind::ExternalName(target_name)
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
    let mut ports = Vec::new();
    for p in spec.ports.iter().flatten() {
        let proto = Proto::from_k8s(p.protocol.as_deref())
            .ok_or_else(|| invalid(KIND, &svc.metadata, "unknown port protocol"))?;
        let number =
            u16::try_from(p.port).map_err(|_| invalid(KIND, &svc.metadata, format!("port {} out of range", p.port)))?;
        let name = b.intern(&p.name.as_deref().unwrap_or_default().to_ascii_lowercase());
        ports.push(Port {
            name,
            proto,
            port: number,
        });
    }
    b.add_service(&ns, &name, kind, ports);
    Ok(())
}

pub fn endpoint_slice(b: &mut Builder, cfg: &KubernetesConfig, slice: &EndpointSlice) -> Result<(), Invalid> {
    const KIND: &str = "EndpointSlice";
    if cfg.noendpoints {
        return Ok(());
    }
    let (ns, _) = ids(KIND, &slice.metadata)?;
    let labels = slice.metadata.labels.as_ref();
    let Some(service) = labels.and_then(|l| l.get(SERVICE_NAME_LABEL)) else {
        return Ok(()); // not managed for a Service: no DNS records
    };
    if !cfg.namespace_exposed(&ns) || slice.address_type == "FQDN" {
        return Ok(());
    }
    let mut ports = Vec::new();
    for p in slice.ports.iter().flatten() {
        let Some(number) = p.port else { continue };
        let number =
            u16::try_from(number).map_err(|_| invalid(KIND, &slice.metadata, format!("port {number} out of range")))?;
        let proto = Proto::from_k8s(p.protocol.as_deref())
            .ok_or_else(|| invalid(KIND, &slice.metadata, "unknown port protocol"))?;
        let name = b.intern(&p.name.as_deref().unwrap_or_default().to_ascii_lowercase());
        ports.push(Port {
            name,
            proto,
            port: number,
        });
    }
    let ports: Arc<[Port]> = Arc::from(ports);
    let mut endpoints = Vec::new();
    for ep in &slice.endpoints {
        if ep.conditions.as_ref().and_then(|c| c.ready) == Some(false) {
            continue;
        }
        for text in &ep.addresses {
            let addr: IpAddr = text.parse().map_err(|_| {
                invalid(
                    KIND,
                    &slice.metadata,
                    format!("endpoint address '{text}' is not an IP address"),
                )
            })?;
            let pod_name = ep
                .target_ref
                .as_ref()
                .filter(|r| cfg.endpoint_pod_names && r.kind.as_deref() == Some("Pod"))
                .and_then(|r| r.name.as_deref());
            let host = match (ep.hostname.as_deref(), pod_name) {
                (Some(h), _) if !h.is_empty() => h.to_ascii_lowercase(),
                (_, Some(p)) if !p.is_empty() && !p.contains('.') => p.to_ascii_lowercase(),
                _ => dashed(addr),
            };
            endpoints.push(Endpoint {
                addr,
                hostname: b.intern(&host),
                ports: ports.clone(),
            });
        }
    }
    b.add_endpoints(&ns, &service.to_ascii_lowercase(), endpoints);
    Ok(())
}

pub fn pod(b: &mut Builder, cfg: &KubernetesConfig, pod: &Pod) -> Result<(), Invalid> {
    if cfg.pods != PodMode::Verified {
        return Ok(());
    }
    let (ns, _) = ids("Pod", &pod.metadata)?;
    let Some(status) = &pod.status else {
        return Ok(());
    };
    if matches!(status.phase.as_deref(), Some("Succeeded" | "Failed" | "Unknown")) || !cfg.namespace_exposed(&ns) {
        return Ok(());
    }
    let mut texts: Vec<&str> = status.pod_ips.iter().flatten().map(|p| p.ip.as_str()).collect();
    texts.extend(status.pod_ip.as_deref());
    for text in texts {
        let addr: IpAddr = text
            .parse()
            .map_err(|_| invalid("Pod", &pod.metadata, format!("podIP '{text}' is not an IP address")))?;
        b.add_pod(&ns, addr);
    }
    Ok(())
}
