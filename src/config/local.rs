//! Directives answering from local data and small switches: `file`,
//! `loop`, `reload`, `timeouts`, `limits` (`hosts` and `loadbalance` are in
//! `hosts.rs`, `log` in `log.rs`).
//!
//! ```text
//! file DBFILE [ZONES...] {           loop [{ exit }]
//!     reload DURATION (1m; 0 disables)   reload [INTERVAL (30s) [JITTER (15s)]]
//!     reload_by_mtime
//!     fallthrough [ZONES...]
//!     upstream [ADDRESS...]  (accepted and ignored, as CoreDNS does)
//! }
//! ```

use std::path::{Path, PathBuf};
use std::time::Duration;

use hickory_proto::rr::Name;

use super::args::Args;
use super::blocks::Directive;
use super::ConfigError;

pub use super::log::{LogConfig, LogStyle};

/// `file`.
#[derive(Debug, Clone)]
pub struct FileConfig {
    pub path: PathBuf,
    /// Each is an origin the file is loaded for (CIDRs: their reverse zones).
    pub zones: Vec<Name>,
    /// How often the file is looked at; a new SOA serial reloads it.
    pub reload: Duration,
    /// Reload on a new modification time, whatever the serial.
    pub reload_by_mtime: bool,
    /// `fallthrough [ZONES...]`: NXDOMAIN for these names (all when empty)
    /// goes on to the next plugin.
    pub fallthrough: Option<Vec<Name>>,
}

impl FileConfig {
    /// Whether `fallthrough` applies to `qname`.
    pub fn falls_through(&self, qname: &Name) -> bool {
        self.fallthrough
            .as_ref()
            .is_some_and(|zs| zs.is_empty() || zs.iter().any(|z| z.zone_of(qname)))
    }
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
    let zones = super::args::zones(zones, errors);
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

pub fn file(d: &Directive, block_zones: &[Name], dir: &Path, errors: &mut Vec<ConfigError>) -> Option<FileConfig> {
    let a = Args::from(d);
    if !a.count(1, usize::MAX, errors) {
        return None;
    }
    let mut cfg = FileConfig {
        path: dir.join(&d.args[0].text),
        zones: super::args::zones(&d.args[1..], errors),
        reload: Duration::from_secs(60),
        reload_by_mtime: false,
        fallthrough: None,
    };
    if cfg.zones.is_empty() {
        cfg.zones = block_zones.to_vec();
    }
    zone_loads(&cfg, a.pos(), errors);
    for line in &d.options {
        let a = Args::from(line);
        match a.name.text.as_str() {
            "reload" if a.count(1, 1, errors) => cfg.reload = a.duration(0, errors).unwrap_or(cfg.reload),
            "reload_by_mtime" if a.count(0, 0, errors) => cfg.reload_by_mtime = true,
            "fallthrough" => cfg.fallthrough = Some(super::args::zones(a.args, errors)),
            // CoreDNS reads and drops it ("remove soon"): CNAME targets outside the zone are
            // always looked up through the server itself, in both.
            "upstream" | "reload" | "reload_by_mtime" => {}
            other => errors.push(ConfigError::new(
                a.pos(),
                format!("file: unknown option '{other}' (supported: reload, reload_by_mtime, fallthrough, upstream)"),
            )),
        }
    }
    Some(cfg)
}

/// A zone file that exists must parse, as CoreDNS refuses to start with
/// one that does not (a missing one may appear later: reloads retry it).
fn zone_loads(cfg: &FileConfig, pos: &super::lexer::Pos, errors: &mut Vec<ConfigError>) {
    let Ok(text) = std::fs::read_to_string(&cfg.path) else {
        return;
    };
    for origin in &cfg.zones {
        if let Err(e) = crate::zone::parse(&text, Some(&cfg.path), origin) {
            errors.push(ConfigError::new(
                pos,
                format!("file: {} does not load for {origin}: {e}", cfg.path.display()),
            ));
        }
    }
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
    /// Percent of an overloaded UDP worker's queries above which one
    /// client is limited to a queue of its own (`client_share`); 0: off.
    pub client_share: u8,
    /// Clients limited at once per UDP worker (`limited_clients`).
    pub limited_clients: usize,
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
            client_share: 10,
            limited_clients: 8,
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
            // As CoreDNS: 1 s to 24 h.
            Some(d) if d < Duration::from_secs(1) || d > Duration::from_secs(86_400) => errors.push(ConfigError::new(
                &a.args[0].pos,
                format!("timeouts: {} must be between 1s and 24h", a.name.text),
            )),
            Some(d) => *slot = d,
            None => {}
        }
    }
}

/// `limits { connections N pipeline N in_flight N client_share PERCENT
/// limited_clients N }` (a clusterdns extension): the TCP connection cap per
/// listener, forwarded queries in flight per TCP connection, forwarded
/// queries in flight in all, and per-client fairness (`query/udp/fair.rs`).
pub fn limits(d: &Directive, tcp: &mut TcpLimits, in_flight: &mut usize, errors: &mut Vec<ConfigError>) {
    Args::from(d).count(0, 0, errors);
    for line in &d.options {
        let a = Args::from(line);
        if a.name.text == "client_share" {
            if a.count(1, 1, errors) {
                match a.parse::<u8>(0, "a percentage (0 turns fairness off)", errors) {
                    Some(n) if n <= 100 => tcp.client_share = n,
                    Some(_) => errors.push(ConfigError::new(
                        &a.args[0].pos,
                        "limits: client_share must be between 0 (off) and 100",
                    )),
                    None => {}
                }
            }
            continue;
        }
        let slot = match a.name.text.as_str() {
            "connections" => &mut tcp.connections,
            "pipeline" => &mut tcp.pipeline,
            "in_flight" => &mut *in_flight,
            "limited_clients" => &mut tcp.limited_clients,
            other => {
                errors.push(ConfigError::new(
                    a.pos(),
                    format!("limits: unknown option '{other}' (supported: connections, pipeline, in_flight, client_share, limited_clients)"),
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
