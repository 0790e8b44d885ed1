//! The `forward` directive, with CoreDNS's options.
//!
//! ```text
//! forward FROM TO... {
//!     except IGNORED_NAMES...      force_tcp (wins over prefer_udp)   prefer_udp
//!     expire DURATION (10s)        max_age DURATION (0: none; >= expire)
//!     max_idle_conns N (0: none)   read_timeout DURATION (2s)
//!     max_fails N (2)              max_connect_attempts N (2 x upstreams; 0: none)
//!     health_check DURATION (0.5s) [no_rec] [domain FQDN]
//!     policy random|round_robin|sequential           max_concurrent N
//!     next RCODE...                next_on_nodata     failover RCODE...
//!     failfast_all_unhealthy_upstreams               source_address IP
//!     resolver IP[:PORT]...
//!     tls [CERT KEY [CA]]          tls_servername NAME    doh_method GET|POST
//! }
//! ```
//! `FROM` and `TO` are read by `forward_to.rs`; `tls://` and `https://`
//! upstreams and the TLS options by `forward_tls.rs`.

pub mod tls;
pub mod to;

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use hickory_proto::op::ResponseCode;
use hickory_proto::rr::Name;

use self::tls::{DohMethod, Target, TlsSettings};
use self::to::MAX_UPSTREAMS;
use crate::corefile::args::{choice, zone, Args};
use crate::corefile::blocks::Directive;
use crate::corefile::lexer::Pos;
use crate::corefile::options::{self, Opt, MANY};
use crate::corefile::problem::ConfigError;

pub use crate::query::forward::setup::to::{resolv_conf, socket_addr};

/// How upstreams are ordered for each query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    Random,
    RoundRobin,
    Sequential,
}

/// Typed options of one `forward` directive.
#[derive(Debug, Clone)]
pub struct ForwardConfig {
    pub from: Name,
    pub except: Vec<Name>,
    pub to: Vec<Target>,
    /// `tls`, `tls_servername`, `doh_method`, and the client config built.
    pub tls: TlsSettings,
    /// resolv.conf files `to` was read from (for `clusterdns doctor`).
    pub files: Vec<std::path::PathBuf>,
    pub force_tcp: bool,
    pub prefer_udp: bool,
    pub expire: Duration,
    /// A pooled connection is closed this long after it was opened, however
    /// busy; 0: no limit.
    pub max_age: Duration,
    /// 0: no limit.
    pub max_idle_conns: usize,
    pub read_timeout: Duration,
    /// 0: never mark an upstream down.
    pub max_fails: u32,
    /// Upstream attempts that failed (no answer) per query before SERVFAIL;
    /// `None`: twice the upstreams; `Some(0)`: no cap (the 5 s budget only).
    pub max_connect_attempts: Option<u32>,
    pub health_check: Duration,
    pub health_check_rd: bool,
    pub health_check_domain: Name,
    pub policy: Policy,
    /// 0: no limit.
    pub max_concurrent: usize,
    pub next: Vec<ResponseCode>,
    /// A NOERROR answer with no records goes on to the next `forward`.
    pub next_on_nodata: bool,
    /// These rcodes make the same `forward` ask its next upstream.
    pub failover: Vec<ResponseCode>,
    /// SERVFAIL at once when every upstream is down (instead of trying one).
    pub failfast: bool,
    pub source_address: Option<IpAddr>,
    /// Resolved hostname `TO`s through these (empty: the system resolver).
    pub resolver: Vec<SocketAddr>,
    /// Set when the `grpc` directive wrote this (`grpc_setup.rs`).
    pub grpc: Option<GrpcOptions>,
}

/// What only a `grpc` directive has.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GrpcOptions {
    /// `tls` was given (with 0 to 3 files): the upstreams are asked over TLS.
    pub tls: bool,
    /// `fallthrough [ZONES...]`: an NXDOMAIN, or no answer, for a name in
    /// these zones (every zone when empty) goes on to what follows.
    pub fallthrough: Option<Vec<Name>>,
}

/// Parses `forward FROM TO... { ... }`; `dir` resolves relative files.
pub fn parse(d: &Directive, dir: &Path, errors: &mut Vec<ConfigError>) -> Option<ForwardConfig> {
    let a = Args::from(d);
    if !a.count(2, usize::MAX, errors) {
        return None;
    }
    let from = to::from_zone(&d.args[0], errors)?;
    let files = d.args[1..]
        .iter()
        .map(|w| w.text.trim_start_matches("dns://"))
        .filter(|t| socket_addr(t).is_none() && dir.join(t).is_file())
        .map(|t| dir.join(t))
        .collect();
    let cfg = ForwardConfig::new(from, files);
    // Options first (`resolver` resolves the hostnames among the TOs);
    // their errors after the TOs', in file order.
    let mut later = Vec::new();
    let mut r = Reading {
        cfg,
        dir: dir.to_path_buf(),
    };
    options::read("forward", &d.options, OPTIONS, &mut r, &mut later);
    let mut cfg = r.cfg;
    cfg.to = to::upstreams(&d.args[1..], dir, &cfg.resolver, errors);
    tls::finish(&cfg.to, &mut cfg.tls, &d.name, &mut later);
    errors.append(&mut later);
    checks(&cfg, a.pos(), errors).then_some(cfg)
}

impl ForwardConfig {
    /// `forward FROM TO...`'s defaults (CoreDNS's), before its options.
    pub fn new(from: Name, files: Vec<PathBuf>) -> ForwardConfig {
        ForwardConfig {
            from,
            except: Vec::new(),
            to: Vec::new(),
            tls: TlsSettings::default(),
            files,
            force_tcp: false,
            prefer_udp: false,
            expire: Duration::from_secs(10),
            max_age: Duration::ZERO,
            max_idle_conns: 0,
            read_timeout: Duration::from_secs(2),
            max_fails: 2,
            max_connect_attempts: None,
            health_check: Duration::from_millis(500),
            health_check_rd: true,
            health_check_domain: Name::root(),
            policy: Policy::Random,
            max_concurrent: 0,
            next: Vec::new(),
            next_on_nodata: false,
            failover: Vec::new(),
            failfast: false,
            source_address: None,
            resolver: Vec::new(),
            grpc: None,
        }
    }
}

/// What is checked once the upstreams and options are read; false when
/// none is left to forward to.
fn checks(cfg: &ForwardConfig, pos: &Pos, errors: &mut Vec<ConfigError>) -> bool {
    if !cfg.max_age.is_zero() && cfg.max_age < cfg.expire {
        errors.push(ConfigError::new(
            pos,
            format!(
                "forward: max_age ({:?}) must not be less than expire ({:?}); raise max_age or lower expire",
                cfg.max_age, cfg.expire
            ),
        ));
    }
    if cfg.to.len() > MAX_UPSTREAMS {
        errors.push(ConfigError::new(
            pos,
            format!(
                "forward: more than {MAX_UPSTREAMS} upstreams ({}); CoreDNS refuses this too",
                cfg.to.len()
            ),
        ));
    }
    if cfg.to.is_empty() {
        errors.push(ConfigError::new(
            pos,
            "forward: no valid upstream addresses found (a resolv.conf file without nameserver lines adds none)",
        ));
        return false;
    }
    true
}

/// What a `forward` block's options are read into, with the directory
/// relative files (`tls`) resolve in.
struct Reading {
    cfg: ForwardConfig,
    dir: PathBuf,
}

/// The options of a `forward` block, in CoreDNS's README order.
const OPTIONS: &[Opt<Reading>] = &[
    Opt::new("except", (1, MANY), |a, r, errors| {
        r.cfg.except.extend(a.args.iter().filter_map(|w| zone(w, errors)))
    }),
    Opt::new("force_tcp", (0, 0), |_, r, _| r.cfg.force_tcp = true),
    Opt::new("prefer_udp", (0, 0), |_, r, _| r.cfg.prefer_udp = true),
    Opt::new("expire", (1, 1), |a, r, errors| {
        r.cfg.expire = a.duration(0, errors).unwrap_or(r.cfg.expire)
    }),
    Opt::new("max_age", (1, 1), |a, r, errors| {
        r.cfg.max_age = a.duration(0, errors).unwrap_or(r.cfg.max_age)
    }),
    Opt::new("max_idle_conns", (1, 1), |a, r, errors| {
        r.cfg.max_idle_conns = a.parse(0, "a number", errors).unwrap_or(0)
    }),
    Opt::new("read_timeout", (1, 1), |a, r, errors| match a.duration(0, errors) {
        Some(t) if !t.is_zero() => r.cfg.read_timeout = t,
        Some(_) => errors.push(ConfigError::new(&a.args[0].pos, "read_timeout: must be above 0")),
        None => {}
    }),
    Opt::new("max_fails", (1, 1), |a, r, errors| {
        r.cfg.max_fails = a.parse(0, "a number", errors).unwrap_or(2)
    }),
    Opt::new("max_connect_attempts", (1, 1), |a, r, errors| {
        r.cfg.max_connect_attempts = a.parse(0, "a number", errors).or(r.cfg.max_connect_attempts);
    }),
    Opt::new("health_check", (1, 4), |a, r, errors| {
        health_check(a, &mut r.cfg, errors)
    }),
    Opt::new("policy", (1, 1), |a, r, errors| {
        r.cfg.policy = policy(a, errors).unwrap_or(r.cfg.policy);
    }),
    Opt::new("max_concurrent", (1, 1), |a, r, errors| {
        r.cfg.max_concurrent = a.parse(0, "a number", errors).unwrap_or(0)
    }),
    Opt::new("next", (1, MANY), |a, r, errors| {
        r.cfg.next.extend(rcodes(a, false, errors))
    }),
    Opt::new("next_on_nodata", (0, 0), |_, r, _| r.cfg.next_on_nodata = true),
    Opt::new("failover", (1, MANY), |a, r, errors| {
        r.cfg.failover.extend(rcodes(a, true, errors))
    }),
    Opt::new("failfast_all_unhealthy_upstreams", (0, 0), |_, r, _| {
        r.cfg.failfast = true
    }),
    Opt::new("source_address", (1, 1), |a, r, errors| {
        r.cfg.source_address = a.parse(0, "an IP address", errors)
    }),
    Opt::new("resolver", (1, MANY), |a, r, errors| {
        for w in a.args {
            match socket_addr(&w.text) {
                Some(addr) => r.cfg.resolver.push(addr),
                None => errors.push(ConfigError::new(
                    &w.pos,
                    format!("resolver: '{}' is not an IP address or IP:PORT", w.text),
                )),
            }
        }
    }),
    Opt::new("tls", (0, 3), |a, r, _| {
        r.cfg.tls.files = a.args.iter().map(|w| r.dir.join(&w.text)).collect()
    }),
    Opt::new("tls_servername", (1, 1), |a, r, _| {
        r.cfg.tls.servername = Some(a.args[0].text.clone())
    }),
    Opt::new("doh_method", (1, 1), |a, r, errors| match a.args[0].text.as_str() {
        "GET" => r.cfg.tls.doh_method = DohMethod::Get,
        "POST" => r.cfg.tls.doh_method = DohMethod::Post,
        other => errors.push(ConfigError::new(
            &a.args[0].pos,
            format!("doh_method: '{other}' must be either POST or GET"),
        )),
    }),
];

/// The rcodes of `next` or `failover` (which refuses NOERROR).
fn rcodes(a: &Args<'_>, failover: bool, errors: &mut Vec<ConfigError>) -> Vec<ResponseCode> {
    let mut out = Vec::new();
    for w in a.args {
        match rcode(&w.text) {
            Some(ResponseCode::NoError) if failover => errors.push(ConfigError::new(
                &w.pos,
                "failover: NOERROR cannot be used (an answer is never retried); list error rcodes such as SERVFAIL REFUSED",
            )),
            Some(r) => out.push(r),
            None => errors.push(ConfigError::new(
                &w.pos,
                format!("{}: '{}' is not an rcode (e.g. NXDOMAIN, SERVFAIL, REFUSED)", a.name.text, w.text),
            )),
        }
    }
    out
}

/// The policies by their Corefile names (forward's and grpc's).
const POLICIES: [(&str, Policy); 3] = [
    ("random", Policy::Random),
    ("round_robin", Policy::RoundRobin),
    ("sequential", Policy::Sequential),
];

/// The policy a `policy` option names.
pub(crate) fn policy(a: &Args<'_>, errors: &mut Vec<ConfigError>) -> Option<Policy> {
    choice(&a.args[0], "policy", &POLICIES, errors)
}

impl Policy {
    /// Its name in a Corefile.
    pub fn name(self) -> &'static str {
        POLICIES.iter().find(|(_, p)| *p == self).map_or("random", |(n, _)| n)
    }
}

fn health_check(a: &Args<'_>, cfg: &mut ForwardConfig, errors: &mut Vec<ConfigError>) {
    if let Some(t) = a.duration(0, errors) {
        cfg.health_check = t;
    }
    let mut rest = a.args[1..].iter();
    while let Some(w) = rest.next() {
        match w.text.as_str() {
            "no_rec" => cfg.health_check_rd = false,
            "domain" => match rest.next() {
                Some(d) => {
                    if let Some(n) = zone(d, errors) {
                        cfg.health_check_domain = n;
                    }
                }
                None => errors.push(ConfigError::new(&w.pos, "health_check: domain needs a name")),
            },
            other => errors.push(ConfigError::new(
                &w.pos,
                format!("health_check: unknown option '{other}' (supported: no_rec, domain FQDN)"),
            )),
        }
    }
}

/// An rcode by its name in any case (`NXDOMAIN`, `servfail`, ...): the
/// names CoreDNS accepts, from the one table `template` keeps.
pub fn rcode(text: &str) -> Option<ResponseCode> {
    crate::corefile::values::rcode_by_name(&text.to_ascii_uppercase()).map(<ResponseCode as From<u16>>::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rcodes_by_name() {
        assert_eq!(rcode("nxdomain"), Some(ResponseCode::NXDomain));
        assert_eq!(rcode("YXDOMAIN"), Some(ResponseCode::YXDomain));
        assert_eq!(rcode("BOGUS"), None);
    }
}
