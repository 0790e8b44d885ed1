//! Directives answering from local data and small switches: `file`,
//! `loop`, `reload`, and `log`'s formats (`hosts` and `loadbalance` are in
//! `hosts.rs`).
//!
//! ```text
//! file DBFILE [ZONES...] {           loop [{ exit }]
//!     reload DURATION (1m; 0 disables)   reload [INTERVAL (30s) [JITTER (15s)]]
//! }                                  log [NAMES...] [FORMAT] { class success|denial|error|all... }
//! ```

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use hickory_proto::rr::Name;

use super::args::{zone, Args};
use super::blocks::Directive;
use super::ConfigError;

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
}

pub fn autopath(d: &Directive, dir: &Path, errors: &mut Vec<ConfigError>) -> Option<AutopathConfig> {
    let a = Args::from(d);
    if !a.count(1, usize::MAX, errors) {
        return None;
    }
    let (last, zones) = d.args.split_last()?;
    let zones = zones.iter().filter_map(|w| zone(w, errors)).collect();
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
    Some(AutopathConfig { zones, search })
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

/// `reload [INTERVAL [JITTER]]`.
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
    if jitter > interval / 2 {
        errors.push(ConfigError::new(
            a.pos(),
            "reload: jitter must be at most half the interval",
        ));
        return None;
    }
    Some((interval, jitter))
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

/// What an `acl` rule does with the queries it matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AclAction {
    Allow,
    /// REFUSED.
    Block,
    /// NOERROR without records.
    Filter,
    /// No reply at all.
    Drop,
}

/// One `acl` rule: `ACTION [type QTYPE...] [net CIDR...]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AclRule {
    pub action: AclAction,
    /// Empty: every type.
    pub types: Vec<hickory_proto::rr::RecordType>,
    /// Empty: every source. `(network, prefix length)`.
    pub nets: Vec<(IpAddr, u8)>,
}

impl AclRule {
    pub fn matches(&self, client: IpAddr, qtype: hickory_proto::rr::RecordType) -> bool {
        let typed = self.types.is_empty() || self.types.contains(&qtype);
        typed && (self.nets.is_empty() || self.nets.iter().any(|(net, len)| in_net(client, *net, *len)))
    }
}

fn in_net(ip: IpAddr, net: IpAddr, len: u8) -> bool {
    match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(n)) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(len.min(32))).unwrap_or(0);
            a.to_bits() & mask == n.to_bits() & mask
        }
        (IpAddr::V6(a), IpAddr::V6(n)) => {
            let mask = u128::MAX.checked_shl(128 - u32::from(len.min(128))).unwrap_or(0);
            a.to_bits() & mask == n.to_bits() & mask
        }
        _ => false,
    }
}

/// `acl [ZONES...] { allow|block|filter|drop [type QTYPE...] [net CIDR...] }`:
/// the first matching rule decides; no rule matching means allow.
pub fn acl(d: &Directive, errors: &mut Vec<ConfigError>) -> Vec<AclRule> {
    let mut rules = Vec::new();
    for line in &d.options {
        let a = Args::from(line);
        let action = match a.name.text.as_str() {
            "allow" => AclAction::Allow,
            "block" => AclAction::Block,
            "filter" => AclAction::Filter,
            "drop" => AclAction::Drop,
            other => {
                errors.push(ConfigError::new(
                    a.pos(),
                    format!("acl: unknown action '{other}' (supported: allow, block, filter, drop)"),
                ));
                continue;
            }
        };
        let mut rule = AclRule {
            action,
            types: Vec::new(),
            nets: Vec::new(),
        };
        let mut mode = "";
        for w in a.args.iter() {
            match w.text.as_str() {
                "type" | "net" => mode = if w.text == "type" { "type" } else { "net" },
                "*" => {}
                t if mode == "type" => match t.parse::<hickory_proto::rr::RecordType>() {
                    Ok(rt) if !matches!(rt, hickory_proto::rr::RecordType::Unknown(_)) => rule.types.push(rt),
                    _ => errors.push(ConfigError::new(&w.pos, format!("acl: '{t}' is not a query type"))),
                },
                n if mode == "net" => {
                    let (ip, len) = n.split_once('/').unwrap_or((n, ""));
                    match ip.parse::<IpAddr>() {
                        Ok(ip) => {
                            let max = if ip.is_ipv4() { 32 } else { 128 };
                            match if len.is_empty() { Ok(max) } else { len.parse::<u8>() } {
                                Ok(l) if l <= max => rule.nets.push((ip, l)),
                                _ => errors.push(ConfigError::new(&w.pos, format!("acl: '{n}' is not a CIDR"))),
                            }
                        }
                        Err(_) => errors.push(ConfigError::new(&w.pos, format!("acl: '{n}' is not a CIDR"))),
                    }
                }
                other => errors.push(ConfigError::new(
                    &w.pos,
                    format!("acl: expected 'type' or 'net' before '{other}'"),
                )),
            }
        }
        rules.push(rule);
    }
    rules
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
        }
    }
}

/// The default cap on queries being forwarded at once (process-wide).
pub const IN_FLIGHT: usize = 10_000;

/// `timeouts { read DURATION write DURATION idle DURATION }` (CoreDNS's),
/// into `tcp`.
pub fn timeouts(d: &Directive, tcp: &mut TcpLimits, errors: &mut Vec<ConfigError>) {
    Args::from(d).count(0, 0, errors);
    if d.options.is_empty() {
        errors.push(ConfigError::new(
            &d.name.pos,
            "timeouts: needs at least one of read, write, idle in a block (or leave the directive out)",
        ));
    }
    for line in &d.options {
        let a = Args::from(line);
        let slot = match a.name.text.as_str() {
            "read" => &mut tcp.read,
            "write" => &mut tcp.write,
            "idle" => &mut tcp.idle,
            other => {
                errors.push(ConfigError::new(
                    a.pos(),
                    format!("timeouts: unknown option '{other}' (supported: read, write, idle)"),
                ));
                continue;
            }
        };
        if !a.count(1, 1, errors) {
            continue;
        }
        match a.duration(0, errors) {
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
