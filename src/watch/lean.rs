//! The API objects as the watch path decodes them: only the fields DNS
//! needs (or will need), so decoding skips everything else without
//! allocating (`managedFields`, most annotations, container specs, ...).
//!
//! Decoding a Service into `k8s-openapi`'s type builds every field of the
//! object; these types keep a handful. The same types read the API's JSON
//! and a `kubectl` dump's YAML (through `serde_json::Value`), so both
//! sources share one conversion ([`super::convert`]).
//!
//! Their strings are [`Str`]s borrowed from the text they are read from,
//! so reading a list page allocates little more than an object's vectors:
//! with `String`s, the initial sync of 100,000 Services × 5 endpoints made
//! 7.4 M heap allocations (3.5 M now), most freed a moment later, and
//! `malloc` and decoding were most of its CPU.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};

pub use text::Str;

mod text;

/// An object's labels.
pub type Labels<'a> = BTreeMap<Str<'a>, Str<'a>>;

/// When the change an EndpointSlice carries was triggered (the start of
/// the DNS programming latency): the one annotation decoding keeps.
pub const TRIGGER_TIME_ANNOTATION: &str = "endpoints.kubernetes.io/last-change-trigger-time";

/// `metadata`, the parts DNS uses.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Meta<'a> {
    #[serde(borrow)]
    pub name: Option<Str<'a>>,
    #[serde(borrow)]
    pub namespace: Option<Str<'a>>,
    #[serde(borrow)]
    pub resource_version: Option<Str<'a>>,
    #[serde(borrow)]
    pub labels: Option<Labels<'a>>,
    /// Only `endpoints.kubernetes.io/last-change-trigger-time` is kept.
    #[serde(borrow, rename = "annotations")]
    pub trigger_time: Option<TriggerTime<'a>>,
    #[serde(borrow)]
    pub deletion_timestamp: Option<Str<'a>>,
}

/// The trigger-time annotation picked out of `annotations`; every other
/// annotation (a `kubectl.kubernetes.io/last-applied-configuration` can be
/// kilobytes) is skipped unread.
#[derive(Debug, Default, Clone)]
pub struct TriggerTime<'a>(pub Option<Str<'a>>);

impl<'de: 'a, 'a> Deserialize<'de> for TriggerTime<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Pick;
        impl<'de> Visitor<'de> for Pick {
            type Value = TriggerTime<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a map of annotations")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<TriggerTime<'de>, A::Error> {
                let mut found = None;
                while let Some(key) = map.next_key::<Str<'de>>()? {
                    if &*key == TRIGGER_TIME_ANNOTATION {
                        found = map.next_value::<Option<Str<'de>>>()?;
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
pub struct Namespace<'a> {
    #[serde(borrow)]
    pub metadata: Meta<'a>,
}

/// A Namespace whose labels are skipped unread (no `namespace_labels`):
/// its name is all DNS needs.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default)]
pub struct NamespaceName<'a> {
    #[serde(borrow, deserialize_with = "unlabelled")]
    pub metadata: Meta<'a>,
}

/// `metadata` without `labels` and `annotations`.
fn unlabelled<'de, D: Deserializer<'de>>(d: D) -> Result<Meta<'de>, D::Error> {
    #[derive(Default, Deserialize)]
    #[serde(rename_all = "camelCase", default)]
    struct Unlabelled<'a> {
        #[serde(borrow)]
        name: Option<Str<'a>>,
        #[serde(borrow)]
        resource_version: Option<Str<'a>>,
        #[serde(borrow)]
        deletion_timestamp: Option<Str<'a>>,
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
pub struct Port<'a> {
    #[serde(borrow)]
    pub name: Option<Str<'a>>,
    #[serde(borrow)]
    pub protocol: Option<Str<'a>>,
    pub port: Option<i32>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default)]
pub struct Service<'a> {
    #[serde(borrow)]
    pub metadata: Meta<'a>,
    #[serde(borrow)]
    pub spec: Option<ServiceSpec<'a>>,
    #[serde(borrow)]
    pub status: Option<ServiceStatus<'a>>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ServiceSpec<'a> {
    #[serde(borrow, rename = "type")]
    pub type_: Option<Str<'a>>,
    #[serde(borrow, rename = "clusterIP")]
    pub cluster_ip: Option<Str<'a>>,
    #[serde(borrow, rename = "clusterIPs")]
    pub cluster_ips: Option<Vec<Str<'a>>>,
    #[serde(borrow)]
    pub external_name: Option<Str<'a>>,
    /// The Service's external addresses (with the load-balancer ingress).
    #[serde(borrow, rename = "externalIPs")]
    pub external_ips: Option<Vec<Str<'a>>>,
    #[serde(borrow)]
    pub ports: Option<Vec<Port<'a>>>,
    #[serde(borrow)]
    pub selector: Option<Labels<'a>>,
}

/// `status.loadBalancer.ingress`: the rest of the external addresses.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ServiceStatus<'a> {
    #[serde(borrow)]
    pub load_balancer: Option<LoadBalancer<'a>>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default)]
pub struct LoadBalancer<'a> {
    #[serde(borrow)]
    pub ingress: Option<Vec<Ingress<'a>>>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default)]
pub struct Ingress<'a> {
    #[serde(borrow)]
    pub ip: Option<Str<'a>>,
    #[serde(borrow)]
    pub hostname: Option<Str<'a>>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct EndpointSlice<'a> {
    #[serde(borrow)]
    pub metadata: Meta<'a>,
    #[serde(borrow, deserialize_with = "null_default")]
    pub address_type: Str<'a>,
    #[serde(borrow)]
    pub endpoints: Option<Vec<Endpoint<'a>>>,
    #[serde(borrow)]
    pub ports: Option<Vec<Port<'a>>>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Endpoint<'a> {
    #[serde(borrow, deserialize_with = "null_default")]
    pub addresses: Vec<Str<'a>>,
    pub conditions: Option<Conditions>,
    #[serde(borrow)]
    pub hostname: Option<Str<'a>>,
    #[serde(borrow)]
    pub target_ref: Option<TargetRef<'a>>,
    /// `topology.kubernetes.io/zone` of the endpoint (kept by `zonal`).
    #[serde(borrow)]
    pub zone: Option<Str<'a>>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default)]
pub struct Conditions {
    pub ready: Option<bool>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default)]
pub struct TargetRef<'a> {
    #[serde(borrow)]
    pub kind: Option<Str<'a>>,
    #[serde(borrow)]
    pub name: Option<Str<'a>>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default)]
pub struct Pod<'a> {
    #[serde(borrow)]
    pub metadata: Meta<'a>,
    #[serde(borrow)]
    pub status: Option<PodStatus<'a>>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default)]
pub struct PodStatus<'a> {
    #[serde(borrow)]
    pub phase: Option<Str<'a>>,
    #[serde(borrow, rename = "podIP")]
    pub pod_ip: Option<Str<'a>>,
    #[serde(borrow, rename = "podIPs")]
    pub pod_ips: Option<Vec<PodIp<'a>>>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default)]
pub struct PodIp<'a> {
    #[serde(borrow, deserialize_with = "null_default")]
    pub ip: Str<'a>,
}

/// A `multicluster.x-k8s.io/v1alpha1` ServiceImport.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default)]
pub struct ServiceImport<'a> {
    #[serde(borrow)]
    pub metadata: Meta<'a>,
    #[serde(borrow)]
    pub spec: Option<ServiceImportSpec<'a>>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default)]
pub struct ServiceImportSpec<'a> {
    /// `ClusterSetIP` or `Headless`.
    #[serde(borrow, rename = "type")]
    pub type_: Option<Str<'a>>,
    #[serde(borrow)]
    pub ips: Option<Vec<Str<'a>>>,
    #[serde(borrow)]
    pub ports: Option<Vec<Port<'a>>>,
}

/// `null` read as the default: Go writes a nil slice without `omitempty`
/// as `null` (a page's `items`, a slice's `endpoints`), and a value this
/// client need not insist on is better empty than the object lost.
fn null_default<'de, D: Deserializer<'de>, T: Deserialize<'de> + Default>(d: D) -> Result<T, D::Error> {
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ListMeta<'a> {
    #[serde(borrow)]
    pub resource_version: Option<Str<'a>>,
    #[serde(borrow, rename = "continue")]
    pub continue_: Option<Str<'a>>,
}

impl ListMeta<'_> {
    /// The same, holding its own strings.
    pub fn into_owned(self) -> ListMeta<'static> {
        ListMeta {
            resource_version: self.resource_version.map(Str::into_owned),
            continue_: self.continue_.map(Str::into_owned),
        }
    }
}

/// A kind of lean object, as the watch loop reads it: implemented by the
/// `'static` form of each type, whose [`Object::Of`] borrows from a text.
pub trait Object: Send + Sync + 'static {
    /// The object read from a text that lives for `'de`.
    type Of<'de>: Deserialize<'de> + Send;
    fn meta<'o, 'de>(object: &'o Self::Of<'de>) -> &'o Meta<'de>;
}

macro_rules! object {
    ($($t:ident),*) => {$(
        impl Object for $t<'static> {
            type Of<'de> = $t<'de>;
            fn meta<'o, 'de>(object: &'o Self::Of<'de>) -> &'o Meta<'de> {
                &object.metadata
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
        assert_eq!(spec.external_ips, Some(vec![Str::from("192.0.2.1")]));
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
        assert_eq!(&*labelled.metadata.labels.expect("labels")["team"], "x");
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
