//! The directives that open listeners or name them: server block keys
//! (`[dns://]ZONE[:PORT]`), `bind`, `health`, `ready`, and `prometheus`
//! (its address, and the web configuration of `tls FILE`).

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use hickory_proto::rr::Name;

use crate::corefile::args::{choice, listen_addr, zone};
use crate::corefile::blocks::Directive;
use crate::corefile::lexer::{Pos, Word};
use crate::corefile::options::{self, Opt, MANY};
use crate::corefile::problem::ConfigError;
use crate::metrics::web::WebConfig;

/// `health [ADDR] { lameduck DURATION }`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Health {
    pub addr: SocketAddr,
    pub lameduck: Duration,
}

/// `bind ADDRESS|INTERFACE... [{ except ADDRESS|INTERFACE... }]`: an
/// interface stands for every address it has now (as in CoreDNS).
pub(super) fn bind(d: &Directive, out: &mut Vec<IpAddr>, errors: &mut Vec<ConfigError>) {
    let mut except: Vec<IpAddr> = Vec::new();
    let options: &[Opt<Vec<IpAddr>>] = &[Opt::new("except", (1, MANY), |o, except, errors| {
        except.extend(o.args.iter().flat_map(|w| addresses(w, errors)))
    })];
    options::read("bind", &d.options, options, &mut except, errors);
    for ip in d.args.iter().flat_map(|w| addresses(w, errors)) {
        if !except.contains(&ip) && !out.contains(&ip) {
            out.push(ip);
        }
    }
}

/// The addresses one `bind` word names: an IP, or an interface's addresses.
fn addresses(w: &Word, errors: &mut Vec<ConfigError>) -> Vec<IpAddr> {
    if let Ok(ip) = w.text.parse::<IpAddr>() {
        return vec![ip];
    }
    let found: Vec<IpAddr> = nix::ifaddrs::getifaddrs()
        .map(|all| {
            all.filter(|i| i.interface_name == w.text)
                .filter_map(|i| i.address)
                .filter_map(|a| match (a.as_sockaddr_in(), a.as_sockaddr_in6()) {
                    (Some(v4), _) => Some(IpAddr::V4(v4.ip())),
                    (_, Some(v6)) if v6.scope_id() == 0 => Some(IpAddr::V6(v6.ip())),
                    _ => None, // link-local: needs a zone to listen on
                })
                .collect()
        })
        .unwrap_or_default();
    if found.is_empty() {
        errors.push(ConfigError::new(
            &w.pos,
            format!(
                "bind: '{}' is not an IP address nor a network interface with addresses",
                w.text
            ),
        ));
    }
    found
}

pub(super) fn addr_or(d: &Directive, default_port: u16, errors: &mut Vec<ConfigError>) -> Option<SocketAddr> {
    match d.args.first() {
        Some(w) => listen_addr(w, errors),
        None => Some(SocketAddr::new(IpAddr::from([0, 0, 0, 0]), default_port)),
    }
}

/// `ready { monitor until-ready|continuously }`: true for `continuously`.
/// Both answer alike here: readiness is the first sync of every cluster
/// source, which never goes back (lameduck fails `/ready` in both modes).
pub(super) fn ready_monitor(d: &Directive, errors: &mut Vec<ConfigError>) -> bool {
    let mut continuously = false;
    let options: &[Opt<bool>] = &[Opt::new("monitor", (1, 1), |a, continuously, errors| {
        let modes = [("until-ready", false), ("continuously", true)];
        *continuously = choice(&a.args[0], "ready: monitor", &modes, errors).unwrap_or(*continuously);
    })];
    options::read("ready", &d.options, options, &mut continuously, errors);
    continuously
}

/// `prometheus [ADDR] { tls FILE }`: the web configuration FILE (resolved
/// beside the Corefile) names, read now so that `check` reports a missing
/// or broken file and its certificates; `runtime_metrics` is accepted and
/// adds nothing (see [`runtime_metrics_noted`]).
pub(super) fn prometheus_options(d: &Directive, dir: &Path, errors: &mut Vec<ConfigError>) -> Option<(Pos, WebConfig)> {
    let mut p = Prometheus {
        dir: dir.to_path_buf(),
        tls_lines: 0,
        web: None,
    };
    options::read("prometheus", &d.options, PROMETHEUS, &mut p, errors);
    p.web
}

/// What `prometheus`'s options read.
struct Prometheus {
    dir: PathBuf,
    /// `tls` lines read: one at most.
    tls_lines: usize,
    web: Option<(Pos, WebConfig)>,
}

/// `prometheus`'s options: CoreDNS's two.
const PROMETHEUS: &[Opt<Prometheus>] = &[
    Opt::new("runtime_metrics", (0, 0), |_, _, _| runtime_metrics_noted()),
    Opt::new("tls", (1, 1), |a, p, errors| {
        p.tls_lines += 1;
        if p.tls_lines > 1 {
            errors.push(ConfigError::new(a.pos(), "prometheus: tls block already specified"));
            return;
        }
        let file = p.dir.join(&a.args[0].text);
        let read = crate::metrics::web::read(&file).and_then(|web| match &web.tls {
            Some(tls) => tls.server_config().map(|_| web),
            None => Ok(web),
        });
        match read {
            Ok(web) => p.web = Some((a.args[0].pos.clone(), web)),
            Err(e) => errors.push(ConfigError::new(
                &a.args[0].pos,
                format!("prometheus: tls {}: {e}", file.display()),
            )),
        }
    }),
];

/// `runtime_metrics` swaps in Go's runtime collector in CoreDNS; clusterdns
/// has no Go runtime and exports its `process_*` metrics always, so the
/// option is accepted (a Corefile CoreDNS loads loads here) and said once
/// per process to add nothing.
fn runtime_metrics_noted() {
    static SAID: std::sync::Once = std::sync::Once::new();
    SAID.call_once(|| {
        tracing::info!(
            target: "prometheus",
            "runtime_metrics exports Go runtime metrics in CoreDNS; clusterdns has no Go runtime, its process_* \
             metrics are always exported, so the option adds nothing"
        )
    });
}

/// Keeps what `prometheus { tls FILE }` read for the one metrics listener:
/// a block naming another FILE than an earlier block is an error (the
/// listener has one web configuration); a block without `tls` changes
/// nothing.
pub(super) fn prometheus_tls(web: Option<(Pos, WebConfig)>, config: &mut super::Config, errors: &mut Vec<ConfigError>) {
    let Some((pos, web)) = web else { return };
    match &config.prometheus_tls {
        Some((first, other)) if other.file != web.file => errors.push(ConfigError::new(
            &pos,
            format!(
                "prometheus: tls {} differs from {} given at {first}: the one metrics listener has one web \
                 configuration",
                web.file.display(),
                other.file.display()
            ),
        )),
        _ => config.prometheus_tls = Some((pos, web)),
    }
}

/// With `prometheus { tls }`, `health` and `ready` on the metrics address
/// (a port other than 0) are an error: that listener speaks TLS, and they
/// stay plain HTTP, as the kubelet's probes ask.
pub(super) fn check_metrics_shared(config: &super::Config, errors: &mut Vec<ConfigError>) {
    let Some((pos, web)) = &config.prometheus_tls else {
        return;
    };
    let (Some(metrics), Some(_)) = (config.prometheus, &web.tls) else {
        return;
    };
    let health = config.health.as_ref().map(|h| h.addr);
    for (addr, name) in [(health, "health"), (config.ready, "ready")] {
        // Port 0 is a free port for each.
        if addr == Some(metrics) && metrics.port() != 0 {
            errors.push(ConfigError::new(
                pos,
                format!(
                    "prometheus: tls: {name} listens on the metrics address {metrics}, which then speaks TLS; \
                     give {name} or prometheus an address of its own"
                ),
            ));
        }
    }
}

pub(super) fn health(d: &Directive, errors: &mut Vec<ConfigError>) -> Option<Health> {
    let addr = addr_or(d, 8080, errors)?;
    let mut lameduck = Duration::ZERO;
    let options: &[Opt<Duration>] = &[Opt::new("lameduck", (1, 1), |a, lameduck, errors| {
        if let Some(v) = a.duration(0, errors) {
            *lameduck = v;
        }
    })];
    options::read("health", &d.options, options, &mut lameduck, errors);
    Some(Health { addr, lameduck })
}

/// Splits a server block key `[SCHEME://]ZONE[:PORT]` (ZONE a name or a
/// network, ADDR/LEN, standing for its reverse zones); the port is `None`
/// when not written.
pub(super) fn key_zone_port(key: &Word, errors: &mut Vec<ConfigError>) -> Option<(Vec<Name>, Option<u16>)> {
    super::transport::scheme_of(key, errors)?;
    let text = key.text.split_once("://").map_or(key.text.as_str(), |(_, rest)| rest);
    let (zone_text, port) = match text.rsplit_once(':') {
        Some((z, p)) => match p.parse::<u16>() {
            Ok(p) => (z, Some(p)),
            Err(_) => {
                errors.push(ConfigError::new(&key.pos, format!("'{p}' is not a port number")));
                return None;
            }
        },
        None => (text, None),
    };
    if zone_text.contains('/') {
        // As CoreDNS: a network stands for its reverse zones, split on
        // label boundaries (`10.0.0.0/15` is `0.10.in-addr.arpa.` and
        // `1.10.in-addr.arpa.`).
        let Some(net) = crate::corefile::args::Net::parse(zone_text) else {
            errors.push(ConfigError::new(
                &key.pos,
                format!("'{zone_text}' is neither a zone nor a network (ADDR/LEN)"),
            ));
            return None;
        };
        return Some((net.reverse_zones(), port));
    }
    let word = Word {
        text: if zone_text.is_empty() {
            ".".into()
        } else {
            zone_text.into()
        },
        ..key.clone()
    };
    Some((vec![zone(&word, errors)?], port))
}
