//! The metadata labels `kubernetes` sets from a query's name, as CoreDNS's
//! `plugin/kubernetes/metadata.go` does: the name in one of the plugin's
//! zones, read by CoreDNS's request grammar (`parseRequest`):
//!
//! ```text
//! _<port>._<proto>.<service>.<namespace>.<kind>.<zone>   port-name, protocol
//! <endpoint>.<service>.<namespace>.<kind>.<zone>          endpoint
//! <endpoint>.<cluster>.<service>.<namespace>.svc.<zone>   cluster (multicluster zones)
//! <service>.<namespace>.<kind>.<zone>                     service
//! <namespace>.<kind>.<zone>                               namespace
//! <kind>: pod or svc                                      kind
//! ```
//!
//! `kubernetes/endpoint`, `kind`, `namespace`, `port-name`, `protocol`,
//! `service` (and `cluster` in multicluster zones) are set for every name
//! of the zones, "" when the name has no such part; a name the grammar
//! refuses sets only `kubernetes/parse-error`. The client's own labels
//! (`kubernetes/client-namespace`) are the store's, in
//! [`crate::query::metadata`]. Computed when a label is read, never
//! per query.

use hickory_proto::rr::Name;

use crate::query::metadata::NameLabels;

/// A block's `kubernetes` zones, for its labels.
#[derive(Debug)]
pub struct ClusterLabels {
    pub zones: Vec<Name>,
    /// The zones of `multicluster`.
    pub multicluster: Vec<Name>,
}

/// CoreDNS's recordRequest: the parts of a name, "" when absent.
#[derive(Debug, Default, PartialEq, Eq)]
struct Parts {
    port: String,
    protocol: String,
    endpoint: String,
    cluster: String,
    service: String,
    namespace: String,
    kind: String,
}

/// What CoreDNS's parser says of a name that is no cluster name.
const INVALID: &str = "invalid request";

impl NameLabels for ClusterLabels {
    fn value(&self, label: &str, name: &Name) -> Option<String> {
        let label = label.strip_prefix("kubernetes/")?;
        // a label this plugin does not set costs no parse
        const SET: [&str; 8] = [
            "port-name",
            "protocol",
            "endpoint",
            "cluster",
            "service",
            "namespace",
            "kind",
            "parse-error",
        ];
        if !SET.contains(&label) {
            return None;
        }
        let zone = self
            .zones
            .iter()
            .filter(|z| z.zone_of(name))
            .max_by_key(|z| z.num_labels())?;
        let multicluster = self.multicluster.iter().any(|z| z.zone_of(name));
        let parts = match parse(name, zone, multicluster) {
            Ok(p) => p,
            Err(e) => return (label == "parse-error").then(|| e.to_string()),
        };
        Some(match label {
            "port-name" => parts.port,
            "protocol" => parts.protocol,
            "endpoint" => parts.endpoint,
            "cluster" if multicluster => parts.cluster,
            "service" => parts.service,
            "namespace" => parts.namespace,
            "kind" => parts.kind,
            _ => return None,
        })
    }
}

/// CoreDNS's parseRequest over the lower-cased labels of `name` left of
/// `zone`.
fn parse(name: &Name, zone: &Name, multicluster: bool) -> Result<Parts, &'static str> {
    let rel = usize::from(name.num_labels().saturating_sub(zone.num_labels()));
    let segs: Vec<String> = name
        .iter()
        .take(rel)
        .map(|l| String::from_utf8_lossy(l).to_ascii_lowercase())
        .collect();
    let mut r = Parts::default();
    let Some((kind, rest)) = segs.split_last() else {
        return Ok(r);
    };
    if rest.is_empty() && (kind == "svc" || kind == "pod") {
        return Ok(r);
    }
    if kind != "svc" && kind != "pod" {
        return Err(INVALID);
    }
    r.kind = kind.clone();
    let mut rest = rest.iter().rev();
    r.namespace = rest.next().cloned().unwrap_or_default();
    let Some(service) = rest.next() else {
        return Ok(r);
    };
    r.service = service.clone();
    // nearest the service first
    let left: Vec<&String> = rest.collect();
    match left[..] {
        [] => {}
        [endpoint] => r.endpoint = endpoint.clone(),
        [second, first] => {
            if !multicluster || first.starts_with('_') || second.starts_with('_') {
                r.protocol = second.trim_start_matches('_').to_string();
                r.port = first.trim_start_matches('_').to_string();
            } else {
                (r.cluster, r.endpoint) = (second.clone(), first.clone());
            }
        }
        _ => return Err(INVALID),
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use hickory_proto::rr::Name;

    use super::{ClusterLabels, NameLabels};

    fn name(s: &str) -> Name {
        Name::from_ascii(s).expect("a name")
    }

    /// The labels of names as CoreDNS's parseRequest reads them
    /// (kubernetes/parse_test.go TestParseRequest's names).
    #[test]
    fn labels_as_coredns_parses_names() {
        let k = ClusterLabels {
            zones: vec![name("cluster.local.")],
            multicluster: vec![name("clusterset.local.")],
        };
        let rows = [
            (
                "_http._tcp.webs.mynamespace.svc.cluster.local.",
                "http,tcp,,webs,mynamespace,svc",
            ),
            (
                "endpoint.webs.mynamespace.svc.cluster.local.",
                ",,endpoint,webs,mynamespace,svc",
            ),
            ("webs.mynamespace.svc.Cluster.Local.", ",,,webs,mynamespace,svc"),
            ("mynamespace.svc.cluster.local.", ",,,,mynamespace,svc"),
            ("10-0-0-1.mynamespace.pod.cluster.local.", ",,,10-0-0-1,mynamespace,pod"),
            ("svc.cluster.local.", ",,,,,"),
        ];
        for (q, want) in rows {
            let labels = ["port-name", "protocol", "endpoint", "service", "namespace", "kind"];
            let got: Vec<String> = labels
                .iter()
                .map(|l| k.value(&format!("kubernetes/{l}"), &name(q)).unwrap_or_default())
                .collect();
            let want: Vec<&str> = want.split(',').collect();
            let got: Vec<&str> = got.iter().map(String::as_str).collect();
            assert_eq!(got, want, "{q}");
        }
        let bad = name("too.long.for.a.name.webs.ns.svc.cluster.local.");
        assert_eq!(
            k.value("kubernetes/parse-error", &bad).as_deref(),
            Some("invalid request")
        );
        assert_eq!(k.value("kubernetes/service", &bad), None);
        assert_eq!(k.value("kubernetes/service", &name("example.org.")), None);
        let mc = name("ep.c1.webs.ns.svc.clusterset.local.");
        let k = ClusterLabels {
            zones: vec![name("clusterset.local.")],
            ..k
        };
        assert_eq!(k.value("kubernetes/cluster", &mc).as_deref(), Some("c1"));
        assert_eq!(k.value("kubernetes/endpoint", &mc).as_deref(), Some("ep"));
    }
}
