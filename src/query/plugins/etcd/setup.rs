//! `etcd [ZONES...] { fallthrough [ZONES...]; path PATH; endpoint
//! ENDPOINT...; credentials USERNAME PASSWORD; tls [CERT KEY] [CACERT] }`
//! as CoreDNS reads it: the block's zones without ZONES (a CIDR stands
//! for its reverse zones), path `/skydns`, endpoint
//! `http://localhost:2379`. `stubzones`, `debug` and `upstream` are
//! accepted and ignored, as there. `min-lease-ttl` and `max-lease-ttl`
//! are refused: a record's TTL is its own (or 300), never its lease's.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use hickory_proto::rr::Name;

use crate::corefile::args::{zones, Args};
use crate::corefile::blocks::Directive;
use crate::corefile::options::{self, Opt, MANY};
use crate::corefile::problem::ConfigError;
use crate::query::plugins::chain::Setup;

/// The endpoint without `endpoint`.
pub const DEFAULT_ENDPOINT: &str = "http://localhost:2379";

/// One `etcd` directive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EtcdConfig {
    /// As written, or the block's zones.
    pub zones: Vec<Name>,
    /// `None`: no fallthrough; `Some(empty)`: every zone.
    pub fallthrough: Option<Vec<Name>>,
    /// The key prefix, as written (`/skydns`).
    pub path: String,
    pub endpoints: Vec<String>,
    /// `credentials`: user and password.
    pub credentials: Option<(String, String)>,
    /// `tls`'s files (none to three), resolved; `None` without `tls`.
    pub tls: Option<Vec<PathBuf>>,
}

impl EtcdConfig {
    /// Whether a name-error for `qname` passes to the next plugin.
    pub fn falls_through(&self, qname: &Name) -> bool {
        self.fallthrough
            .as_ref()
            .is_some_and(|z| z.is_empty() || z.iter().any(|z| z.zone_of(qname)))
    }

    /// The key prefix the mirror holds: `/PATH/` (etcd keys are bytes;
    /// names map below this).
    pub fn prefix(&self) -> String {
        let inner = self.path.trim_matches('/');
        if inner.is_empty() {
            "/".to_string()
        } else {
            format!("/{inner}/")
        }
    }
}

/// Reads one `etcd` directive; `block_zones` are the server block's,
/// `dir` where relative `tls` files are read.
pub fn parse(d: &Directive, block_zones: &[Name], dir: &Path, errors: &mut Vec<ConfigError>) -> Arc<dyn Setup> {
    let mut cfg = Reading {
        cfg: EtcdConfig {
            zones: if d.args.is_empty() {
                block_zones.to_vec()
            } else {
                zones(&d.args, errors)
            },
            fallthrough: None,
            path: "/skydns".into(),
            endpoints: vec![DEFAULT_ENDPOINT.into()],
            credentials: None,
            tls: None,
        },
        dir: dir.to_path_buf(),
    };
    options::read("etcd", &d.options, OPTIONS, &mut cfg, errors);
    Arc::new(cfg.cfg)
}

/// The configuration read so far, and where relative files are.
struct Reading {
    cfg: EtcdConfig,
    dir: PathBuf,
}

/// An option CoreDNS accepts and ignores.
const IGNORED: fn(&Args<'_>, &mut Reading, &mut Vec<ConfigError>) = |_, _, _| {};

const OPTIONS: &[Opt<Reading>] = &[
    Opt::new("fallthrough", (0, MANY), |a, r, errors| {
        r.cfg.fallthrough = Some(zones(a.args, errors));
    }),
    Opt::new("path", (1, 1), |a, r, _| r.cfg.path = a.args[0].text.clone()),
    Opt::new("endpoint", (1, MANY), |a, r, errors| {
        r.cfg.endpoints = a.args.iter().filter_map(|w| endpoint(&w.text, a, errors)).collect();
    }),
    Opt::new("credentials", (2, 2), |a, r, _| {
        r.cfg.credentials = Some((a.args[0].text.clone(), a.args[1].text.clone()));
    }),
    Opt::new("tls", (0, 3), |a, r, errors| {
        let files: Vec<PathBuf> = a.args.iter().map(|w| r.dir.join(&w.text)).collect();
        if let Err(e) = crate::tls::client_config(&files, false) {
            errors.push(ConfigError::new(a.pos(), format!("etcd: tls: {e}")));
        }
        r.cfg.tls = Some(files);
    }),
    Opt::new("stubzones", (0, MANY), IGNORED),
    Opt::new("debug", (0, MANY), IGNORED),
    Opt::new("upstream", (0, MANY), IGNORED),
    Opt::refused("min-lease-ttl", refuse_lease),
    Opt::refused("max-lease-ttl", refuse_lease),
];

/// `min-lease-ttl` and `max-lease-ttl`: refused, saying why.
fn refuse_lease(a: &Args<'_>, _: &mut Reading, errors: &mut Vec<ConfigError>) {
    let message = format!(
        "etcd: {}: not supported; records are answered with their own ttl (300 without one), not their lease's: remove the option",
        a.name.text
    );
    errors.push(ConfigError::new(a.pos(), message));
}

/// An endpoint: `http://HOST:PORT`, `https://HOST:PORT`, or `HOST:PORT`
/// (plain HTTP/2, as etcd's client takes it).
fn endpoint(text: &str, a: &Args<'_>, errors: &mut Vec<ConfigError>) -> Option<String> {
    let rest = text.strip_prefix("http://").or_else(|| text.strip_prefix("https://"));
    let r = rest.unwrap_or(text).trim_end_matches('/');
    let ok = !r.contains('/')
        && r.rsplit_once(':')
            .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok());
    if ok {
        return Some(text.to_string());
    }
    let message = format!("etcd: endpoint '{text}' is not http://HOST:PORT, https://HOST:PORT or HOST:PORT");
    errors.push(ConfigError::new(a.pos(), message));
    None
}
