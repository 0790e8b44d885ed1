//! `metadata`: the labels other plugins may read of a query (CoreDNS's
//! `plugin/metadata`), for the names of its zones.
//!
//! ```text
//! metadata [ZONES...]        ZONES: the block's zones when none
//! ```
//!
//! What clusterdns's plugins provide: `view/name` (the block's `view`),
//! `kubernetes/client-namespace` (the client pod's namespace, with `pods
//! verified`), `kubernetes/endpoint`, `kind`, `namespace`, `port-name`,
//! `protocol`, `service`, `cluster` and `parse-error` (the query name in
//! the block's `kubernetes` zones, [`NameLabels`]), `geoip/...` (the
//! block's `geoip` database, from the client's address or its ECS
//! option), and the `log` plugin's own `log/type` and `log/class` (which
//! `log` prints with or without this directive). They are read by
//! `view`'s and `template`'s `metadata(label)`, `rewrite`'s EDNS0
//! `{PLUGIN/LABEL}` and `log`'s `{/LABEL}` placeholders; a label nobody
//! sets is "" to an expression and `-` in a log line, as in CoreDNS. One
//! per server block. Every value is computed when it is read: a block
//! without `metadata` pays nothing.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use hickory_proto::rr::Name;

use crate::corefile::args::{zones, Args};
use crate::corefile::blocks::Directive;
use crate::corefile::problem::ConfigError;
use crate::corefile::words::{names, with, Block as Lines};
use crate::store::Store;

/// `metadata`: the zones whose names get metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetadataConfig {
    pub zones: Vec<Name>,
}

/// Reads `metadata [ZONES...]` into `metadata` (an error when the block
/// has one already); no ZONES: the block's `zones`.
pub fn parse(
    d: &Directive,
    block_zones: &[Name],
    metadata: &mut Option<MetadataConfig>,
    errors: &mut Vec<ConfigError>,
) {
    if metadata.is_some() {
        errors.push(ConfigError::new(&d.name.pos, "metadata: only one per server block"));
        return;
    }
    let mut cfg = MetadataConfig {
        zones: zones(Args::from(d).args, errors),
    };
    if cfg.zones.is_empty() {
        cfg.zones = block_zones.to_vec();
    }
    *metadata = Some(cfg);
}

/// How `clusterdns check` prints it: with its zones written out.
pub(crate) fn print(b: &mut Lines, metadata: Option<&MetadataConfig>) {
    if let Some(m) = metadata {
        b.line(1, with("metadata", &names(&m.zones)));
    }
}

/// A plugin that sets labels of its own from who asks (`geoip`): the
/// client's address, and the request's EDNS Client Subnet address.
pub trait Provider: std::fmt::Debug + Send + Sync {
    /// Whether it reads the ECS address (else it is not looked for).
    fn reads_subnet(&self) -> bool;

    /// The value of `label` for a query from `client` with ECS address
    /// `subnet`; `None` when it does not set the label.
    fn value(&self, label: &str, client: IpAddr, subnet: Option<IpAddr>) -> Option<String>;
}

/// The labels a query's own handling sets, known once it is served and
/// carried to its log line: `trace/traceid` (the block's `trace` traced
/// it) and `forward/upstream` (`forward` asked an upstream: its
/// `ADDRESS:PORT`).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Carried {
    pub trace_id: Option<String>,
    pub upstream: Option<SocketAddr>,
}

impl Carried {
    /// The value of `label`, if the query's handling set it.
    pub fn value(&self, label: &str) -> Option<String> {
        match label {
            "trace/traceid" => self.trace_id.clone(),
            "forward/upstream" => self.upstream.map(|a| a.to_string()),
            _ => None,
        }
    }
}

/// A plugin that sets labels from the query's name (`kubernetes`).
pub trait NameLabels: std::fmt::Debug + Send + Sync {
    /// The value of `label` for a query for `name`; `None` when it does
    /// not set the label.
    fn value(&self, label: &str, name: &Name) -> Option<String>;
}

/// The address of the EDNS Client Subnet option (RFC 7871) of the
/// decoded request `msg`, if it carries one.
pub fn subnet_of(msg: &hickory_proto::op::Message) -> Option<IpAddr> {
    use hickory_proto::rr::rdata::opt::{EdnsCode, EdnsOption};
    match msg.edns.as_ref()?.option(EdnsCode::Subnet)? {
        EdnsOption::Subnet(s) => Some(s.addr()),
        _ => None,
    }
}

/// A block's `metadata` at run time: its zones and the plugins of the
/// block that provide labels.
pub struct Metadata {
    pub zones: Vec<Name>,
    /// The block's `view` name (`view/name`).
    pub view: Option<String>,
    /// The block's cluster store when its `kubernetes` verifies pods
    /// (`kubernetes/client-namespace`: CoreDNS looks pods up only then).
    pub pods: Option<Arc<Store>>,
    /// The block's `geoip` database (`geoip/...`).
    pub geoip: Option<Arc<dyn Provider>>,
    /// The block's `kubernetes` zones (`kubernetes/...` of the name).
    pub kubernetes: Option<Arc<dyn NameLabels>>,
}

impl std::fmt::Debug for Metadata {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        (f.debug_struct("Metadata")
            .field("zones", &self.zones)
            .field("view", &self.view))
        .field("pods", &self.pods.is_some())
        .field("geoip", &self.geoip)
        .field("kubernetes", &self.kubernetes)
        .finish()
    }
}

impl PartialEq for Metadata {
    fn eq(&self, other: &Metadata) -> bool {
        let same_store = match (&self.pods, &other.pods) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (a, b) => a.is_none() && b.is_none(),
        };
        let same_geoip = match (&self.geoip, &other.geoip) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (a, b) => a.is_none() && b.is_none(),
        };
        let same_kubernetes = match (&self.kubernetes, &other.kubernetes) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (a, b) => a.is_none() && b.is_none(),
        };
        let same = self.zones == other.zones && self.view == other.view;
        same && same_store && same_geoip && same_kubernetes
    }
}

impl Metadata {
    /// Whether queries for `name` get metadata.
    pub fn covers(&self, name: &Name) -> bool {
        self.zones.iter().any(|z| z.zone_of(name))
    }

    /// The value of `label` for a query for `name` from `client` whose
    /// request carries the ECS address `subnet`: `None` when no plugin of
    /// the block sets it.
    pub fn value(&self, label: &str, name: &Name, client: IpAddr, subnet: Option<IpAddr>) -> Option<String> {
        self.value_with(label, (name, client), || subnet)
    }

    /// [`Metadata::value`], the ECS address read only when a label needs it.
    pub fn value_with(
        &self,
        label: &str,
        (name, client): (&Name, IpAddr),
        subnet: impl FnOnce() -> Option<IpAddr>,
    ) -> Option<String> {
        if let (Some(g), true) = (&self.geoip, label.starts_with("geoip/")) {
            let subnet = if g.reads_subnet() { subnet() } else { None };
            return g.value(label, client, subnet);
        }
        match label {
            "view/name" => self.view.clone(),
            "kubernetes/client-namespace" => self
                .pods
                .as_ref()?
                .load()
                .pod_namespace(client)
                .map(|ns| ns.to_string()),
            _ => self.kubernetes.as_ref()?.value(label, name),
        }
    }

    /// Whether a label read may need the request's ECS address.
    pub fn reads_subnet(&self) -> bool {
        self.geoip.as_ref().is_some_and(|g| g.reads_subnet())
    }
}

#[cfg(test)]
mod tests {
    use crate::config::tests::server_block;

    /// CoreDNS's plugin/metadata/setup_test.go TestSetup and TestSetupHealth.
    #[test]
    fn setup_rows_as_coredns() {
        let ok = [
            ("metadata", vec!["."]),
            ("metadata example.com.", vec!["example.com."]),
            ("metadata example.com. net.", vec!["example.com.", "net."]),
        ];
        for (text, want) in ok {
            let server = server_block(text).unwrap_or_else(|e| panic!("{text}: {e:?}"));
            let zones: Vec<String> = server
                .metadata
                .expect("metadata")
                .zones
                .iter()
                .map(|z| z.to_string())
                .collect();
            assert_eq!(zones, want, "{text}");
        }
        for text in ["metadata example.com. { some_param }", "metadata\nmetadata"] {
            assert!(server_block(text).is_err(), "{text}");
        }
    }
}
