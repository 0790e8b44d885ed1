//! The `kubernetes` directive's options, parsed.

use std::path::{Path, PathBuf};

use hickory_proto::rr::Name;

use super::labels::Selector;
use crate::corefile::args::{choice, zone, Args};
use crate::corefile::blocks::Directive;
use crate::corefile::options::{self, Opt, MANY};
use crate::corefile::problem::ConfigError;

/// How `<ip>.<ns>.pod.<zone>` names are answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PodMode {
    Disabled,
    Insecure,
    Verified,
}

/// Where the cluster's objects come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A `kubectl get ... -o yaml|json` dump, reloaded when it changes.
    Snapshot(PathBuf),
    /// The API server (in-cluster, `kubeconfig` or `endpoint`).
    Api {
        endpoint: Option<String>,
        kubeconfig: Option<(PathBuf, Option<String>)>,
        tls: Option<[PathBuf; 3]>,
    },
}

/// Typed options of one `kubernetes` directive.
#[derive(Debug, Clone)]
pub struct KubernetesConfig {
    pub zones: Vec<Name>,
    pub source: Source,
    pub namespaces: Vec<String>,
    pub labels: Option<Selector>,
    /// The `labels` text as written, for server-side selection.
    pub labels_text: Option<String>,
    /// `namespace_labels SELECTOR`: only namespaces whose Namespace object
    /// matches are served; names in the others answer as if the namespace
    /// did not exist.
    pub namespace_labels: Option<Selector>,
    pub pods: PodMode,
    pub endpoint_pod_names: bool,
    pub ttl: u32,
    pub noendpoints: bool,
    /// `None`: no fallthrough; `Some(empty)`: every zone.
    pub fallthrough: Option<Vec<Name>>,
    pub ignore_empty_service: bool,
    /// How long one watch call may last before it is renewed; a watch that
    /// sends nothing (not even a bookmark) for this long plus 5 s is
    /// treated as dead and reconnected (clusterdns extension).
    pub watch_timeout: std::time::Duration,
    /// `persist FILE [MAX_AGE]`: keep the synced state on disk and serve
    /// it at start while the API is listed (clusterdns extension).
    pub persist: Option<Persist>,
    /// `resync DURATION`: relist every kind this often (off by default).
    pub resync: Option<std::time::Duration>,
    /// `startup_timeout`, `apiserver_*`, `zonal` (see [`super::client`]).
    pub client: super::client::ClientOptions,
    /// `multicluster ZONES...`: zones of this directive answered from
    /// ServiceImports (KEP-1645) instead of Services.
    pub multicluster: Vec<Name>,
}

/// Where the state is kept, and how old a saved state may be to be served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Persist {
    pub path: PathBuf,
    pub max_age: std::time::Duration,
}

impl KubernetesConfig {
    /// Whether an NXDOMAIN for `qname` passes to the next plugin instead.
    pub fn falls_through(&self, qname: &Name) -> bool {
        match &self.fallthrough {
            None => false,
            Some(zones) => zones.is_empty() || zones.iter().any(|z| z.zone_of(qname)),
        }
    }

    /// Whether objects of `namespace` are served under the `namespaces` option.
    pub fn namespace_exposed(&self, namespace: &str) -> bool {
        self.namespaces.is_empty() || self.namespaces.iter().any(|n| n == namespace)
    }

    /// Whether `zone` (one of the directive's) is a `multicluster` zone.
    pub fn is_multicluster(&self, zone: &Name) -> bool {
        self.multicluster.iter().any(|z| z == zone)
    }
}

/// `multicluster [ZONES...]` (no zones: the server block's, as CoreDNS
/// reads it); each must be one of the directive's zones.
fn multicluster(a: &Args, zones: &[Name], block_zones: &[Name], out: &mut Vec<Name>, errors: &mut Vec<ConfigError>) {
    let listed: Vec<(Name, &crate::corefile::lexer::Word)> =
        a.args.iter().filter_map(|w| zone(w, errors).map(|z| (z, w))).collect();
    let listed = if a.args.is_empty() {
        block_zones.iter().map(|z| (z.clone(), a.name)).collect()
    } else {
        listed
    };
    for (z, word) in listed {
        if zones.contains(&z) {
            out.push(z);
        } else {
            let ours: Vec<String> = zones.iter().map(ToString::to_string).collect();
            errors.push(ConfigError::new(
                &word.pos,
                format!(
                    "multicluster: the plugin is not authoritative for the multicluster zone {z} (its zones: {})",
                    ours.join(" ")
                ),
            ));
        }
    }
}

/// The label selector of `labels` or `namespace_labels` (the words
/// joined by spaces) and its text, or an error at its first word.
fn selector(a: &Args, errors: &mut Vec<ConfigError>) -> Option<(Selector, String)> {
    let text = a.args.iter().map(|w| w.text.as_str()).collect::<Vec<_>>().join(" ");
    match Selector::parse(&text) {
        Ok(s) => Some((s, text)),
        Err(e) => {
            errors.push(ConfigError::new(&a.args[0].pos, format!("{}: {e}", a.name.text)));
            None
        }
    }
}

/// The options that decide the source and the checks across options,
/// as written (read once every line is).
#[derive(Default)]
struct Written {
    snapshot: Option<PathBuf>,
    endpoint: Option<String>,
    kubeconfig: Option<(PathBuf, Option<String>)>,
    tls: Option<[PathBuf; 3]>,
    namespace_labels_at: Option<crate::corefile::lexer::Pos>,
}

/// Parses a `kubernetes` directive; `block_zones` are the server block's.
pub fn parse(
    d: &Directive,
    block_zones: &[Name],
    dir: &Path,
    errors: &mut Vec<ConfigError>,
) -> Option<KubernetesConfig> {
    let mut zones: Vec<Name> = d.args.iter().filter_map(|w| zone(w, errors)).collect();
    if zones.is_empty() {
        zones = block_zones.to_vec();
    }
    let mut r = Reading {
        cfg: defaults(zones),
        written: Written::default(),
        dir: dir.to_path_buf(),
        block_zones: block_zones.to_vec(),
    };
    options::read("kubernetes", &d.options, OPTIONS, &mut r, errors);
    let Reading {
        mut cfg, mut written, ..
    } = r;
    if let Some(at) = written
        .namespace_labels_at
        .take()
        .filter(|_| !cfg.namespaces.is_empty())
    {
        errors.push(ConfigError::new(
            &at,
            "kubernetes: namespaces and namespace_labels cannot both be set",
        ));
    }
    if cfg.client.zonal && cfg.noendpoints {
        errors.push(ConfigError::new(
            &d.name.pos,
            "kubernetes: zonal needs the endpoint cache; remove noendpoints",
        ));
    }
    cfg.source = source(d, &cfg, written, errors);
    Some(cfg)
}

/// A directive's options before any line is read.
fn defaults(zones: Vec<Name>) -> KubernetesConfig {
    KubernetesConfig {
        zones,
        source: Source::Api {
            endpoint: None,
            kubeconfig: None,
            tls: None,
        },
        namespaces: Vec::new(),
        labels: None,
        labels_text: None,
        namespace_labels: None,
        pods: PodMode::Disabled,
        endpoint_pod_names: false,
        ttl: 5,
        noendpoints: false,
        fallthrough: None,
        ignore_empty_service: false,
        watch_timeout: std::time::Duration::from_secs(290),
        persist: None,
        resync: None,
        client: Default::default(),
        multicluster: Vec::new(),
    }
}

/// What a `kubernetes` block's options are read into: the options, what
/// is checked once all are read, and where relative paths and the
/// block's zones come from.
struct Reading {
    cfg: KubernetesConfig,
    written: Written,
    dir: PathBuf,
    block_zones: Vec<Name>,
}

/// The options of a `kubernetes` block, in CoreDNS's README order, then
/// clusterdns's own.
const OPTIONS: &[Opt<Reading>] = &[
    Opt::new("endpoint", (1, MANY), |a, r, _| {
        if let Some(extra) = a.args.get(1) {
            // As CoreDNS: several endpoints are deprecated, the first is used.
            tracing::warn!(target: "kubernetes", "{}: several endpoints are deprecated; only the first, {}, is used", extra.pos, a.args[0].text);
        }
        r.written.endpoint = Some(a.args[0].text.clone());
    }),
    Opt::new("kubeconfig", (1, 2), |a, r, _| {
        r.written.kubeconfig = Some((r.dir.join(&a.args[0].text), a.args.get(1).map(|w| w.text.clone())));
    }),
    Opt::new("tls", (3, 3), |a, r, _| {
        r.written.tls = Some([0, 1, 2].map(|i| r.dir.join(&a.args[i].text)))
    }),
    Opt::new("namespaces", (1, MANY), |a, r, _| {
        r.cfg.namespaces = a.args.iter().map(|w| w.text.to_ascii_lowercase()).collect();
    }),
    Opt::new("labels", (1, MANY), |a, r, errors| {
        if let Some((s, text)) = selector(a, errors) {
            r.cfg.labels = Some(s);
            r.cfg.labels_text = Some(text);
        }
    }),
    Opt::new("namespace_labels", (1, MANY), |a, r, errors| {
        r.written.namespace_labels_at = Some(a.pos().clone());
        r.cfg.namespace_labels = selector(a, errors).map(|(s, _)| s);
    }),
    Opt::new("pods", (1, 1), |a, r, errors| {
        let modes = [
            ("disabled", PodMode::Disabled),
            ("insecure", PodMode::Insecure),
            ("verified", PodMode::Verified),
        ];
        r.cfg.pods = choice(&a.args[0], "pods", &modes, errors).unwrap_or(r.cfg.pods);
    }),
    Opt::new("endpoint_pod_names", (0, 0), |_, r, _| r.cfg.endpoint_pod_names = true),
    Opt::new("ttl", (1, 1), |a, r, errors| {
        match a.parse::<u32>(0, "a number of seconds", errors) {
            Some(t) if t <= 3600 => r.cfg.ttl = t,
            Some(t) => errors.push(ConfigError::new(
                &a.args[0].pos,
                format!("ttl: {t} is out of range 0..3600"),
            )),
            None => {}
        }
    }),
    Opt::new("noendpoints", (0, 0), |_, r, _| r.cfg.noendpoints = true),
    Opt::new("fallthrough", (0, MANY), |a, r, errors| {
        r.cfg.fallthrough = Some(a.args.iter().filter_map(|w| zone(w, errors)).collect())
    }),
    Opt::new("ignore", (1, MANY), |a, r, errors| match a.args[0].text.as_str() {
        "empty_service" => {
            if let Some(extra) = a.args.get(1) {
                // As CoreDNS: the words after empty_service are not read.
                tracing::warn!(target: "kubernetes", "{}: ignore: '{}' and what follows is not read", extra.pos, extra.text);
            }
            r.cfg.ignore_empty_service = true;
        }
        other => errors.push(ConfigError::new(
            &a.args[0].pos,
            format!("ignore: unknown value '{other}' (expected empty_service)"),
        )),
    }),
    Opt::new("snapshot", (1, 1), |a, r, _| {
        r.written.snapshot = Some(r.dir.join(&a.args[0].text))
    }),
    Opt::new("watch_timeout", (1, 1), |a, r, errors| match a.duration(0, errors) {
        Some(t) if (1..=3600).contains(&t.as_secs()) => r.cfg.watch_timeout = t,
        Some(_) => errors.push(ConfigError::new(&a.args[0].pos, "watch_timeout: out of range 1s..1h")),
        None => {}
    }),
    Opt::new("persist", (1, 2), |a, r, errors| {
        r.cfg.persist = persist(a, &r.dir, errors)
    }),
    Opt::new("resync", (1, 1), |a, r, errors| match a.duration(0, errors) {
        Some(t) if t >= std::time::Duration::from_secs(1) => r.cfg.resync = Some(t),
        Some(_) => errors.push(ConfigError::new(&a.args[0].pos, "resync: must be at least 1s")),
        None => {}
    }),
    Opt::new("startup_timeout", (1, 1), |a, r, errors| {
        super::client::startup_timeout(a, &mut r.cfg.client, errors)
    }),
    Opt::new("apiserver_qps", (1, 1), |a, r, errors| {
        super::client::qps(a, &mut r.cfg.client, errors)
    }),
    Opt::new("apiserver_burst", (1, 1), |a, r, errors| {
        super::client::count(a, &mut r.cfg.client, errors)
    }),
    Opt::new("apiserver_max_inflight", (1, 1), |a, r, errors| {
        super::client::count(a, &mut r.cfg.client, errors)
    }),
    Opt::new("zonal", (0, 0), |_, r, _| r.cfg.client.zonal = true),
    Opt::new("multicluster", (0, MANY), |a, r, errors| {
        multicluster(a, &r.cfg.zones, &r.block_zones, &mut r.cfg.multicluster, errors)
    }),
];

/// `persist FILE [MAX_AGE]` (MAX_AGE at least 1s, 1h when not written).
fn persist(a: &Args, dir: &Path, errors: &mut Vec<ConfigError>) -> Option<Persist> {
    let max_age = match a.args.len() {
        2 => match a.duration(1, errors) {
            Some(t) if t >= std::time::Duration::from_secs(1) => Some(t),
            Some(_) => {
                errors.push(ConfigError::new(&a.args[1].pos, "persist: MAX_AGE must be at least 1s"));
                None
            }
            None => None,
        },
        _ => Some(std::time::Duration::from_secs(3600)),
    };
    max_age.map(|max_age| Persist {
        path: dir.join(&a.args[0].text),
        max_age,
    })
}

/// The source the written options name, with what cannot go with it.
fn source(d: &Directive, cfg: &KubernetesConfig, w: Written, errors: &mut Vec<ConfigError>) -> Source {
    let Some(path) = w.snapshot else {
        if let Some(url) = w
            .endpoint
            .as_deref()
            .filter(|u| !u.starts_with("http://") && !u.starts_with("https://"))
        {
            errors.push(ConfigError::new(
                &d.name.pos,
                format!("kubernetes: endpoint '{url}' must start with http:// or https://"),
            ));
        }
        return Source::Api {
            endpoint: w.endpoint,
            kubeconfig: w.kubeconfig,
            tls: w.tls,
        };
    };
    if w.endpoint.is_some() || w.kubeconfig.is_some() {
        errors.push(ConfigError::new(
            &d.name.pos,
            "kubernetes: 'snapshot' cannot be combined with 'endpoint' or 'kubeconfig'",
        ));
    }
    if cfg.persist.is_some() || cfg.resync.is_some() {
        errors.push(ConfigError::new(
            &d.name.pos,
            "kubernetes: 'persist' and 'resync' apply to the API source, not to 'snapshot'",
        ));
    }
    Source::Snapshot(path)
}
