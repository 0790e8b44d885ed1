//! Directives answering from local data and small switches: `hosts`,
//! `file`, `loop`, `reload`, `loadbalance`, and `log`'s formats.
//!
//! ```text
//! hosts [FILE [ZONES...]] {          file DBFILE [ZONES...] {
//!     ADDRESS NAME...                    reload DURATION (1m; 0 disables)
//!     ttl SECONDS (3600)             }
//!     no_reverse                     loop [{ exit }]
//!     reload DURATION (5s)           reload [INTERVAL (30s) [JITTER (15s)]]
//!     fallthrough [ZONES...]         loadbalance [round_robin]
//! }                                  log [NAMES...] [FORMAT] { class success|denial|error|all... }
//! ```

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use hickory_proto::rr::Name;

use super::args::{zone, Args};
use super::blocks::Directive;
use super::ConfigError;

/// `hosts`.
#[derive(Debug, Clone)]
pub struct HostsConfig {
    /// `None`: inline entries only (an explicit file that is absent is
    /// reported at load time and retried on reload).
    pub file: Option<PathBuf>,
    pub zones: Vec<Name>,
    pub inline: Vec<(IpAddr, Vec<Name>)>,
    pub ttl: u32,
    pub no_reverse: bool,
    pub reload: Duration,
    pub fallthrough: Option<Vec<Name>>,
}

/// `file`.
#[derive(Debug, Clone)]
pub struct FileConfig {
    pub path: PathBuf,
    pub zones: Vec<Name>,
    pub reload: Duration,
}

/// `autopath [ZONES...] RESOLV-CONF|@kubernetes`.
#[derive(Debug, Clone)]
pub struct AutopathConfig {
    /// Empty: the block's zones.
    pub zones: Vec<Name>,
    /// Search domains after the pod's own (`<ns>.svc.<zone> svc.<zone> <zone>`):
    /// a RESOLV-CONF file's `search` list; none for `@kubernetes`.
    pub search: Vec<Name>,
    /// The RESOLV-CONF file; `None` for `@kubernetes`.
    pub resolv: Option<PathBuf>,
}

pub fn autopath(d: &Directive, dir: &Path, errors: &mut Vec<ConfigError>) -> Option<AutopathConfig> {
    let a = Args::from(d);
    if !a.count(1, usize::MAX, errors) {
        return None;
    }
    let (last, zones) = d.args.split_last()?;
    let zones = zones.iter().filter_map(|w| zone(w, errors)).collect();
    let resolv = (!last.text.starts_with('@')).then(|| dir.join(&last.text));
    let search = if last.text == "@kubernetes" {
        Vec::new()
    } else if last.text.starts_with('@') {
        errors.push(ConfigError::new(
            &last.pos,
            format!(
                "autopath: '{}' is not a plugin with a search path (supported: @kubernetes)",
                last.text
            ),
        ));
        return None;
    } else {
        let path = dir.join(&last.text);
        match std::fs::read_to_string(&path) {
            Ok(text) => text
                .lines()
                .filter_map(|l| l.strip_prefix("search"))
                .flat_map(str::split_whitespace)
                .filter_map(|d| {
                    Name::from_ascii(d).ok().map(|mut n| {
                        n.set_fqdn(true);
                        n.to_lowercase()
                    })
                })
                .collect(),
            Err(e) => {
                errors.push(ConfigError::new(
                    &last.pos,
                    format!("autopath: cannot read {}: {e}", path.display()),
                ));
                return None;
            }
        }
    };
    Some(AutopathConfig { zones, search, resolv })
}

/// `log`: for which names, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogConfig {
    /// Empty: every name of the block.
    pub names: Vec<Name>,
    pub style: LogStyle,
}

/// The format and the classes of answers logged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogStyle {
    pub combined: bool,
    pub success: bool,
    pub denial: bool,
    pub error: bool,
}

impl LogStyle {
    /// Whether an answer with `rcode` and `answers` records is logged.
    pub fn logs(&self, rcode: hickory_proto::op::ResponseCode, answers: u16) -> bool {
        use hickory_proto::op::ResponseCode as R;
        match rcode {
            R::NoError if answers > 0 => self.success,
            R::NoError | R::NXDomain => self.denial,
            _ => self.error,
        }
    }
}

fn fallthrough(a: &Args<'_>, errors: &mut Vec<ConfigError>) -> Vec<Name> {
    a.args.iter().filter_map(|w| zone(w, errors)).collect()
}

pub fn hosts(d: &Directive, block_zones: &[Name], dir: &Path, errors: &mut Vec<ConfigError>) -> Option<HostsConfig> {
    let mut cfg = HostsConfig {
        file: Some(
            d.args
                .first()
                .map_or_else(|| PathBuf::from("/etc/hosts"), |w| dir.join(&w.text)),
        ),
        zones: d.args.iter().skip(1).filter_map(|w| zone(w, errors)).collect(),
        inline: Vec::new(),
        ttl: 3600,
        no_reverse: false,
        reload: Duration::from_secs(5),
        fallthrough: None,
    };
    if cfg.zones.is_empty() {
        cfg.zones = block_zones.to_vec();
    }
    for line in &d.options {
        let a = Args::from(line);
        if let Ok(ip) = a.name.text.parse::<IpAddr>() {
            let names: Vec<Name> = a.args.iter().filter_map(|w| zone(w, errors)).collect();
            if names.is_empty() {
                errors.push(ConfigError::new(a.pos(), "hosts: an address needs at least one name"));
            }
            cfg.inline.push((ip, names));
            continue;
        }
        match a.name.text.as_str() {
            "ttl" if a.count(1, 1, errors) => match a.parse::<u32>(0, "a number of seconds", errors) {
                Some(t) if (1..=86400).contains(&t) => cfg.ttl = t,
                Some(_) => errors.push(ConfigError::new(&a.args[0].pos, "ttl: out of range 1..86400")),
                None => {}
            },
            "no_reverse" if a.count(0, 0, errors) => cfg.no_reverse = true,
            "reload" if a.count(1, 1, errors) => cfg.reload = a.duration(0, errors).unwrap_or(cfg.reload),
            "fallthrough" => cfg.fallthrough = Some(fallthrough(&a, errors)),
            "ttl" | "no_reverse" | "reload" => {}
            other => errors.push(ConfigError::new(
                a.pos(),
                format!("hosts: unknown option '{other}' (supported: ADDRESS NAME..., ttl, no_reverse, reload, fallthrough)"),
            )),
        }
    }
    Some(cfg)
}

pub fn file(d: &Directive, block_zones: &[Name], dir: &Path, errors: &mut Vec<ConfigError>) -> Option<FileConfig> {
    let a = Args::from(d);
    if !a.count(1, usize::MAX, errors) {
        return None;
    }
    let mut cfg = FileConfig {
        path: dir.join(&d.args[0].text),
        zones: d.args[1..].iter().filter_map(|w| zone(w, errors)).collect(),
        reload: Duration::from_secs(60),
    };
    if cfg.zones.is_empty() {
        cfg.zones = block_zones.to_vec();
    }
    for line in &d.options {
        let a = Args::from(line);
        match a.name.text.as_str() {
            "reload" if a.count(1, 1, errors) => cfg.reload = a.duration(0, errors).unwrap_or(cfg.reload),
            "reload" => {}
            other => errors.push(ConfigError::new(
                a.pos(),
                format!("file: unknown option '{other}' (supported: reload)"),
            )),
        }
    }
    Some(cfg)
}

/// `loop [{ exit }]`: whether a detected loop ends the process.
pub fn loop_exit(d: &Directive, errors: &mut Vec<ConfigError>) -> bool {
    Args::from(d).count(0, 0, errors);
    let mut exit = false;
    for line in &d.options {
        let a = Args::from(line);
        match a.name.text.as_str() {
            "exit" if a.count(0, 0, errors) => exit = true,
            "exit" => {}
            other => errors.push(ConfigError::new(
                a.pos(),
                format!("loop: unknown option '{other}' (supported: exit)"),
            )),
        }
    }
    exit
}

/// `reload [INTERVAL (30s, at least 2s) [JITTER (15s; 0 or at least 1s)]]`.
pub fn reload(d: &Directive, errors: &mut Vec<ConfigError>) -> Option<(Duration, Duration)> {
    let a = Args::from(d);
    if !a.count(0, 2, errors) {
        return None;
    }
    let interval = if a.args.is_empty() {
        Duration::from_secs(30)
    } else {
        a.duration(0, errors)?
    };
    let jitter = if a.args.len() > 1 {
        a.duration(1, errors)?
    } else {
        interval / 2
    };
    if interval < Duration::from_secs(2) {
        errors.push(ConfigError::new(a.pos(), "reload: interval must be at least 2s"));
        return None;
    }
    if !jitter.is_zero() && jitter < Duration::from_secs(1) {
        errors.push(ConfigError::new(
            &a.args[1].pos,
            "reload: jitter must be 0 (none) or at least 1s",
        ));
        return None;
    }
    // As CoreDNS: a jitter above half the interval is cut to half.
    Some((interval, jitter.min(interval / 2)))
}

/// `loadbalance [round_robin]`.
pub fn loadbalance(d: &Directive, errors: &mut Vec<ConfigError>) {
    let a = Args::from(d);
    if a.count(0, 1, errors) {
        if let Some(w) = a.args.first().filter(|w| w.text != "round_robin") {
            errors.push(ConfigError::new(
                &w.pos,
                format!("loadbalance: unknown policy '{}' (supported: round_robin)", w.text),
            ));
        }
    }
}

pub fn log(d: &Directive, errors: &mut Vec<ConfigError>) -> LogConfig {
    let mut cfg = LogConfig {
        names: Vec::new(),
        style: LogStyle {
            combined: false,
            success: true,
            denial: true,
            error: true,
        },
    };
    for w in &d.args {
        match w.text.as_str() {
            "{common}" => cfg.style.combined = false,
            "{combined}" => cfg.style.combined = true,
            t if t.contains('{') => errors.push(ConfigError::new(
                &w.pos,
                format!("log: format '{t}' is not supported (supported: {{common}}, {{combined}})"),
            )),
            _ => cfg.names.extend(zone(w, errors)),
        }
    }
    let mut classes = Vec::new();
    for line in &d.options {
        let a = Args::from(line);
        match a.name.text.as_str() {
            "class" if a.count(1, usize::MAX, errors) => {
                for w in a.args.iter() {
                    match w.text.as_str() {
                        c @ ("success" | "denial" | "error" | "all") => classes.push(c),
                        other => errors.push(ConfigError::new(
                            &w.pos,
                            format!("class: '{other}' is not one of success, denial, error, all"),
                        )),
                    }
                }
            }
            "class" => {}
            other => errors.push(ConfigError::new(
                a.pos(),
                format!("log: unknown option '{other}' (supported: class)"),
            )),
        }
    }
    if !classes.is_empty() && !classes.contains(&"all") {
        cfg.style.success = classes.contains(&"success");
        cfg.style.denial = classes.contains(&"denial");
        cfg.style.error = classes.contains(&"error");
    }
    cfg
}

/// How TCP clients are held to account (`timeouts` and `limits`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpLimits {
    /// From a query's first byte to its last.
    pub read: Duration,
    /// For each batch of replies to be taken by the client.
    pub write: Duration,
    /// Between queries; an idle connection is closed after it.
    pub idle: Duration,
    /// Open connections per listener; at the cap the connection idle
    /// longest is closed for a new one (none idle: the new one is refused).
    pub connections: usize,
    /// Forwarded queries of one connection in flight at once; beyond it
    /// the connection is not read until one is answered.
    pub pipeline: usize,
    /// Queries answered on one connection before it is closed (CoreDNS's
    /// `maxtcpqueries`); 0: no limit.
    pub max_queries: usize,
}

impl Default for TcpLimits {
    /// CoreDNS's timeouts (read 3 s, write 5 s, idle 10 s).
    fn default() -> Self {
        TcpLimits {
            read: Duration::from_secs(3),
            write: Duration::from_secs(5),
            idle: Duration::from_secs(10),
            connections: 10_000,
            pipeline: 64,
            max_queries: 0,
        }
    }
}

/// The default cap on queries being forwarded at once (process-wide).
pub const IN_FLIGHT: usize = 10_000;

/// `timeouts { read DURATION write DURATION idle DURATION maxtcpqueries N }`
/// (CoreDNS's), into `tcp`; `maxtcpqueries -1` is no limit.
pub fn timeouts(d: &Directive, tcp: &mut TcpLimits, errors: &mut Vec<ConfigError>) {
    Args::from(d).count(0, 0, errors);
    if d.options.is_empty() {
        errors.push(ConfigError::new(
            &d.name.pos,
            "timeouts: needs at least one of read, write, idle, maxtcpqueries in a block (or leave the directive out)",
        ));
    }
    for line in &d.options {
        let a = Args::from(line);
        if a.name.text == "maxtcpqueries" {
            if a.count(1, 1, errors) {
                match a.parse::<i64>(0, "a number", errors) {
                    Some(-1) => tcp.max_queries = 0,
                    Some(n) if n > 0 => tcp.max_queries = usize::try_from(n).unwrap_or(usize::MAX),
                    Some(n) => errors.push(ConfigError::new(
                        &a.args[0].pos,
                        format!("timeouts: maxtcpqueries {n} must be -1 (no limit) or a positive number"),
                    )),
                    None => {}
                }
            }
            continue;
        }
        let slot = match a.name.text.as_str() {
            "read" => &mut tcp.read,
            "write" => &mut tcp.write,
            "idle" => &mut tcp.idle,
            other => {
                errors.push(ConfigError::new(
                    a.pos(),
                    format!("timeouts: unknown option '{other}' (supported: read, write, idle, maxtcpqueries)"),
                ));
                continue;
            }
        };
        if !a.count(1, 1, errors) {
            continue;
        }
        // As CoreDNS: a bare number is seconds.
        let secs = a.args[0].text.parse::<u64>().ok().map(Duration::from_secs);
        match secs.or_else(|| a.duration(0, errors)) {
            Some(d) if d.is_zero() || d > Duration::from_secs(86_400) => errors.push(ConfigError::new(
                &a.args[0].pos,
                format!("timeouts: {} must be between 1ms and 24h", a.name.text),
            )),
            Some(d) => *slot = d,
            None => {}
        }
    }
}

/// `limits { connections N pipeline N in_flight N }` (a clusterdns
/// extension): the TCP connection cap per listener, forwarded queries in
/// flight per TCP connection, and forwarded queries in flight in all.
pub fn limits(d: &Directive, tcp: &mut TcpLimits, in_flight: &mut usize, errors: &mut Vec<ConfigError>) {
    Args::from(d).count(0, 0, errors);
    for line in &d.options {
        let a = Args::from(line);
        let slot = match a.name.text.as_str() {
            "connections" => &mut tcp.connections,
            "pipeline" => &mut tcp.pipeline,
            "in_flight" => &mut *in_flight,
            other => {
                errors.push(ConfigError::new(
                    a.pos(),
                    format!("limits: unknown option '{other}' (supported: connections, pipeline, in_flight)"),
                ));
                continue;
            }
        };
        if !a.count(1, 1, errors) {
            continue;
        }
        match a.parse::<usize>(0, "a number", errors) {
            Some(0) => errors.push(ConfigError::new(
                &a.args[0].pos,
                format!("limits: {} must be at least 1", a.name.text),
            )),
            Some(n) => *slot = n,
            None => {}
        }
    }
}
