//! `etcd [ZONES...] { fallthrough [ZONES...]; path PATH; endpoint
//! ENDPOINT...; credentials USERNAME PASSWORD; tls [CERT KEY] [CACERT] }`
//! as CoreDNS reads it: the block's zones without ZONES (a CIDR stands
//! for its reverse zones), path `/skydns`, endpoint
//! `http://localhost:2379`. `stubzones`, `debug` and `upstream` are
//! accepted and ignored, as there. `min-lease-ttl` and `max-lease-ttl`
//! (30 and 86400 seconds; a number of seconds or a Go duration such as
//! `2h30m`) bound the TTL a key's lease gives its records.

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
    /// The bounds of a lease's TTL, in seconds.
    pub min_lease_ttl: u32,
    pub max_lease_ttl: u32,
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
            min_lease_ttl: 30,
            max_lease_ttl: 86_400,
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
    Opt::new("min-lease-ttl", (1, 1), |a, r, errors| {
        r.cfg.min_lease_ttl = lease_ttl(a, errors).unwrap_or(r.cfg.min_lease_ttl);
    }),
    Opt::new("max-lease-ttl", (1, 1), |a, r, errors| {
        r.cfg.max_lease_ttl = lease_ttl(a, errors).unwrap_or(r.cfg.max_lease_ttl);
    }),
];

/// A lease TTL bound as CoreDNS reads it: seconds, or a Go duration
/// (`30s`, `5m`, `2h30m`), at most 4294967295 seconds.
fn lease_ttl(a: &Args<'_>, errors: &mut Vec<ConfigError>) -> Option<u32> {
    let text = a.args[0].text.trim();
    let seconds = match text.parse::<u64>() {
        Ok(n) => Some(n),
        Err(_) => crate::corefile::args::parse_duration(text).map(|d| d.as_secs()),
    };
    match seconds.map(u32::try_from) {
        Some(Ok(n)) => Some(n),
        _ => {
            let message = format!(
                "etcd: invalid {} value '{text}': use a number of seconds or a duration such as '30s', '5m', '1h' or '2h30m' (at most 4294967295 seconds)",
                a.name.text
            );
            errors.push(ConfigError::new(a.pos(), message));
            None
        }
    }
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
