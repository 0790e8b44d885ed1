//! The API objects as the watch path decodes them: only the fields DNS
//! needs (or will need), so decoding skips everything else without
//! allocating (`managedFields`, most annotations, container specs, ...).
//!
//! Decoding a Service into `k8s-openapi`'s type builds every field of the
//! object; these types keep a handful. The same types read the API's JSON
//! and a `kubectl` dump's YAML (through `serde_json::Value`), so both
//! sources share one conversion ([`super::convert`]).

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};

/// When the change an EndpointSlice carries was triggered (the start of
/// the DNS programming latency): the one annotation decoding keeps.
pub const TRIGGER_TIME_ANNOTATION: &str = "endpoints.kubernetes.io/last-change-trigger-time";

/// `metadata`, the parts DNS uses.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Meta {
    pub name: Option<String>,
    pub namespace: Option<String>,
    pub resource_version: Option<String>,
    pub labels: Option<BTreeMap<String, String>>,
    /// Only `endpoints.kubernetes.io/last-change-trigger-time` is kept.
    #[serde(rename = "annotations")]
    pub trigger_time: Option<TriggerTime>,
    pub deletion_timestamp: Option<String>,
}

/// The trigger-time annotation picked out of `annotations`; every other
/// annotation (a `kubectl.kubernetes.io/last-applied-configuration` can be
/// kilobytes) is skipped unread.
#[derive(Debug, Default, Clone)]
pub struct TriggerTime(pub Option<String>);

impl<'de> Deserialize<'de> for TriggerTime {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Pick;
        impl<'de> Visitor<'de> for Pick {
            type Value = TriggerTime;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a map of annotations")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<TriggerTime, A::Error> {
                let mut found = None;
                while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                    if key == TRIGGER_TIME_ANNOTATION {
                        found = map.next_value::<Option<String>>()?;
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(TriggerTime(found))
            }
        }
        d.deserialize_map(Pick)
    }
}

/// A Namespace with its labels (the API source asks for metadata only),
/// read when `namespace_labels` selects namespaces by them.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default)]
pub struct Namespace {
    pub metadata: Meta,
}

/// A Namespace whose labels are skipped unread (no `namespace_labels`):
/// its name is all DNS needs.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default)]
pub struct NamespaceName {
    #[serde(deserialize_with = "unlabelled")]
    pub metadata: Meta,
}

/// `metadata` without `labels` and `annotations`.
fn unlabelled<'de, D: Deserializer<'de>>(d: D) -> Result<Meta, D::Error> {
    #[derive(Default, Deserialize)]
    #[serde(rename_all = "camelCase", default)]
    struct Unlabelled {
        name: Option<String>,
        resource_version: Option<String>,
        deletion_timestamp: Option<String>,
    }
    let u = Option::<Unlabelled>::deserialize(d)?.unwrap_or_default();
    Ok(Meta {
        name: u.name,
        resource_version: u.resource_version,
        deletion_timestamp: u.deletion_timestamp,
        ..Meta::default()
    })
}

/// A Service or EndpointSlice port.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default)]
pub struct Port {
    pub name: Option<String>,
    pub protocol: Option<String>,
    pub port: Option<i32>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default)]
pub struct Service {
    pub metadata: Meta,
    pub spec: Option<ServiceSpec>,
    pub status: Option<ServiceStatus>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ServiceSpec {
    #[serde(rename = "type")]
    pub type_: Option<String>,
    #[serde(rename = "clusterIP")]
    pub cluster_ip: Option<String>,
    #[serde(rename = "clusterIPs")]
    pub cluster_ips: Option<Vec<String>>,
    pub external_name: Option<String>,
    /// The Service's external addresses (with the load-balancer ingress).
    #[serde(rename = "externalIPs")]
    pub external_ips: Option<Vec<String>>,
    pub ports: Option<Vec<Port>>,
    pub selector: Option<BTreeMap<String, String>>,
}

/// `status.loadBalancer.ingress`: the rest of the external addresses.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ServiceStatus {
    pub load_balancer: Option<LoadBalancer>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default)]
pub struct LoadBalancer {
    pub ingress: Option<Vec<Ingress>>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default)]
pub struct Ingress {
    pub ip: Option<String>,
    pub hostname: Option<String>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct EndpointSlice {
    pub metadata: Meta,
    #[serde(deserialize_with = "null_default")]
    pub address_type: String,
    pub endpoints: Option<Vec<Endpoint>>,
    pub ports: Option<Vec<Port>>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Endpoint {
    #[serde(deserialize_with = "null_default")]
    pub addresses: Vec<String>,
    pub conditions: Option<Conditions>,
    pub hostname: Option<String>,
    pub target_ref: Option<TargetRef>,
    /// `topology.kubernetes.io/zone` of the endpoint (kept by `zonal`).
    pub zone: Option<String>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default)]
pub struct Conditions {
    pub ready: Option<bool>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default)]
pub struct TargetRef {
    pub kind: Option<String>,
    pub name: Option<String>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default)]
pub struct Pod {
    pub metadata: Meta,
    pub status: Option<PodStatus>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default)]
pub struct PodStatus {
    pub phase: Option<String>,
    #[serde(rename = "podIP")]
    pub pod_ip: Option<String>,
    #[serde(rename = "podIPs")]
    pub pod_ips: Option<Vec<PodIp>>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default)]
pub struct PodIp {
    #[serde(deserialize_with = "null_default")]
    pub ip: String,
}

/// A `multicluster.x-k8s.io/v1alpha1` ServiceImport.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default)]
pub struct ServiceImport {
    pub metadata: Meta,
    pub spec: Option<ServiceImportSpec>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default)]
pub struct ServiceImportSpec {
    /// `ClusterSetIP` or `Headless`.
    #[serde(rename = "type")]
    pub type_: Option<String>,
    pub ips: Option<Vec<String>>,
    pub ports: Option<Vec<Port>>,
}

/// `null` read as the default: Go writes a nil slice without `omitempty`
/// as `null` (a page's `items`, a slice's `endpoints`), and a value this
/// client need not insist on is better empty than the object lost.
fn null_default<'de, D: Deserializer<'de>, T: Deserialize<'de> + Default>(d: D) -> Result<T, D::Error> {
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ListMeta {
    pub resource_version: Option<String>,
    #[serde(rename = "continue")]
    pub continue_: Option<String>,
}

/// What every lean object offers the watch loop.
pub trait Object: for<'de> Deserialize<'de> + Clone + Send + 'static {
    fn meta(&self) -> &Meta;
}

macro_rules! object {
    ($($t:ty),*) => {$(
        impl Object for $t {
            fn meta(&self) -> &Meta {
                &self.metadata
            }
        }
    )*};
}
object!(Namespace, NamespaceName, Service, EndpointSlice, Pod, ServiceImport);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_only_what_dns_needs() {
        let text = r#"{"metadata": {"name": "web", "namespace": "shop", "resourceVersion": "7",
            "managedFields": [{"manager": "kubectl", "fieldsV1": {"f:spec": {}}}],
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{\"big\": 1}",
                            "endpoints.kubernetes.io/last-change-trigger-time": "2026-11-22T00:00:00Z"}},
            "spec": {"type": "LoadBalancer", "clusterIP": "10.0.0.1", "clusterIPs": ["10.0.0.1"],
                     "externalIPs": ["192.0.2.1"], "ports": [{"name": "http", "port": 80, "targetPort": 8080}]},
            "status": {"loadBalancer": {"ingress": [{"ip": "198.51.100.1"}, {"hostname": "lb.example.com"}]}}}"#;
        let svc: Service = serde_json::from_str(text).expect("decodes");
        assert_eq!(svc.metadata.resource_version.as_deref(), Some("7"));
        let trigger = svc.metadata.trigger_time.and_then(|t| t.0);
        assert_eq!(trigger.as_deref(), Some("2026-11-22T00:00:00Z"));
        let spec = svc.spec.expect("spec");
        assert_eq!(spec.external_ips, Some(vec!["192.0.2.1".to_string()]));
        let ingress = svc
            .status
            .and_then(|s| s.load_balancer)
            .and_then(|l| l.ingress)
            .expect("ingress");
        assert_eq!(ingress[0].ip.as_deref(), Some("198.51.100.1"));
        assert_eq!(ingress[1].hostname.as_deref(), Some("lb.example.com"));
    }

    #[test]
    fn namespace_labels_are_read_only_when_asked() {
        let text = r#"{"metadata": {"name": "a", "resourceVersion": "3", "labels": {"team": "x"}}}"#;
        let labelled: Namespace = serde_json::from_str(text).expect("ns");
        assert_eq!(labelled.metadata.labels.expect("labels")["team"], "x");
        let bare: NamespaceName = serde_json::from_str(text).expect("ns");
        assert!(bare.metadata.labels.is_none());
        assert_eq!(bare.metadata.name.as_deref(), Some("a"));
        assert_eq!(bare.metadata.resource_version.as_deref(), Some("3"));
        let null: NamespaceName = serde_json::from_str(r#"{"metadata": null}"#).expect("ns");
        assert!(null.metadata.name.is_none());
    }

    #[test]
    fn pages_with_null_items_and_null_annotations() {
        let mut items = 0;
        let text = r#"{"metadata": {"resourceVersion": "9", "continue": "x"}, "items": null}"#;
        let meta = super::super::page::read::<Pod, _>(text.as_bytes(), |_| items += 1).expect("page");
        assert_eq!(items, 0);
        assert_eq!(meta.continue_.as_deref(), Some("x"));
        let ns: Namespace = serde_json::from_str(r#"{"metadata": {"name": "a", "annotations": null}}"#).expect("ns");
        assert_eq!(ns.metadata.name.as_deref(), Some("a"));
        let slice: EndpointSlice = serde_json::from_str(
            r#"{"metadata": {"name": "s", "labels": null}, "addressType": null, "ports": null,
                "endpoints": [{"addresses": null, "conditions": {"ready": null}, "unknownField": {"x": [1]}}]}"#,
        )
        .expect("slice");
        let endpoints = slice.endpoints.expect("endpoints");
        assert!(endpoints[0].addresses.is_empty() && slice.address_type.is_empty());
    }
}
