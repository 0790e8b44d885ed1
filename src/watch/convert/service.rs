//! A Service → its record: the kind (cluster IPs, headless, or an
//! ExternalName target), its ports, whether it has a selector, and the
//! external addresses (its external IPs and load-balancer ingress).

use std::net::IpAddr;

use hickory_proto::rr::Name;

use super::fields::{ids, invalid, port, Invalid};
use crate::kubernetes::KubernetesConfig;
use crate::store::{External, Record, ServiceKind};
use crate::watch::lean::{Service, ServiceSpec, Str};

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
    let kind = kind(svc, spec)?;
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

/// What the Service's name answers with: an ExternalName's target, no
/// address (headless) or its cluster IPs.
fn kind(svc: &Service, spec: &ServiceSpec) -> Result<ServiceKind, Invalid> {
    const KIND: &str = "Service";
    if spec.type_.as_deref() == Some("ExternalName") {
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
        Ok(ServiceKind::ExternalName(Box::new(target_name)))
    } else if spec.cluster_ip.as_deref() == Some("None") {
        Ok(ServiceKind::Headless)
    } else {
        let texts: Vec<&Str> = match &spec.cluster_ips {
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
        Ok(ServiceKind::ClusterIp(ips.into()))
    }
}

/// `spec.externalIPs` and `status.loadBalancer.ingress[]` (an ingress's
/// `ip`, else its `hostname`): its external addresses; `None` without any.
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

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::store::Record;

    fn convert(yaml: &str) -> Result<Option<Record>, super::Invalid> {
        let text = ".:53 {\n    kubernetes cluster.local {\n        snapshot x.yaml\n    }\n}\n";
        let config = crate::config::load_str(Path::new("/tmp/Corefile"), text, 53).expect("config");
        let cfg = config.servers[0].kubernetes.clone().expect("kubernetes");
        let svc: crate::watch::lean::Service = serde_yaml_ng::from_str(yaml).expect("yaml");
        super::service(&cfg, &svc)
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
