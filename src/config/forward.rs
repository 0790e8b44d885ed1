//! The `forward` directive, with CoreDNS's options.
//!
//! ```text
//! forward FROM TO... {
//!     except IGNORED_NAMES...      force_tcp          prefer_udp
//!     expire DURATION (10s)        max_idle_conns N   read_timeout DURATION (2s)
//!     max_fails N (2)              health_check DURATION (0.5s) [no_rec] [domain FQDN]
//!     policy random|round_robin|sequential           max_concurrent N
//!     next RCODE...
//! }
//! ```
//! `TO` is `IP[:PORT]`, `dns://IP[:PORT]`, or a resolv.conf-style file whose
//! `nameserver` lines are the upstreams.

use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::time::Duration;

use hickory_proto::op::ResponseCode;
use hickory_proto::rr::Name;

use super::args::{zone, Args};
use super::blocks::Directive;
use super::lexer::Word;
use super::ConfigError;

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
    pub to: Vec<SocketAddr>,
    /// resolv.conf files `to` was read from (for `clusterdns doctor`).
    pub files: Vec<std::path::PathBuf>,
    pub force_tcp: bool,
    pub prefer_udp: bool,
    pub expire: Duration,
    /// 0: no limit.
    pub max_idle_conns: usize,
    pub read_timeout: Duration,
    /// 0: never mark an upstream down.
    pub max_fails: u32,
    pub health_check: Duration,
    pub health_check_rd: bool,
    pub health_check_domain: Name,
    pub policy: Policy,
    /// 0: no limit.
    pub max_concurrent: usize,
    pub next: Vec<ResponseCode>,
}

/// Parses `forward FROM TO... { ... }`; `dir` resolves relative files.
pub fn parse(d: &Directive, dir: &Path, errors: &mut Vec<ConfigError>) -> Option<ForwardConfig> {
    let a = Args::from(d);
    if !a.count(2, usize::MAX, errors) {
        return None;
    }
    let from = zone(&d.args[0], errors)?;
    let mut to = Vec::new();
    let mut files = Vec::new();
    for w in &d.args[1..] {
        to.extend(upstreams(w, dir, errors));
        if socket_addr(w.text.trim_start_matches("dns://")).is_none() {
            files.push(dir.join(&w.text));
        }
    }
    let mut cfg = ForwardConfig {
        from,
        except: Vec::new(),
        to,
        files,
        force_tcp: false,
        prefer_udp: false,
        expire: Duration::from_secs(10),
        max_idle_conns: 0,
        read_timeout: Duration::from_secs(2),
        max_fails: 2,
        health_check: Duration::from_millis(500),
        health_check_rd: true,
        health_check_domain: Name::root(),
        policy: Policy::Random,
        max_concurrent: 0,
        next: Vec::new(),
    };
    for line in &d.options {
        let a = Args::from(line);
        let opt = a.name.text.as_str();
        match opt {
            "except" if a.count(1, usize::MAX, errors) => {
                cfg.except.extend(a.args.iter().filter_map(|w| zone(w, errors)));
            }
            "force_tcp" if a.count(0, 0, errors) => cfg.force_tcp = true,
            "prefer_udp" if a.count(0, 0, errors) => cfg.prefer_udp = true,
            "expire" if a.count(1, 1, errors) => cfg.expire = a.duration(0, errors).unwrap_or(cfg.expire),
            "max_idle_conns" if a.count(1, 1, errors) => {
                cfg.max_idle_conns = a.parse(0, "a number", errors).unwrap_or(0);
            }
            "read_timeout" if a.count(1, 1, errors) => match a.duration(0, errors) {
                Some(t) if !t.is_zero() => cfg.read_timeout = t,
                Some(_) => errors.push(ConfigError::new(&a.args[0].pos, "read_timeout: must be above 0")),
                None => {}
            },
            "max_fails" if a.count(1, 1, errors) => cfg.max_fails = a.parse(0, "a number", errors).unwrap_or(2),
            "health_check" if a.count(1, 4, errors) => health_check(&a, &mut cfg, errors),
            "policy" if a.count(1, 1, errors) => match a.args[0].text.as_str() {
                "random" => cfg.policy = Policy::Random,
                "round_robin" => cfg.policy = Policy::RoundRobin,
                "sequential" => cfg.policy = Policy::Sequential,
                other => errors.push(ConfigError::new(
                    &a.args[0].pos,
                    format!("policy: '{other}' is not one of random, round_robin, sequential"),
                )),
            },
            "max_concurrent" if a.count(1, 1, errors) => {
                cfg.max_concurrent = a.parse(0, "a number", errors).unwrap_or(0);
            }
            "next" if a.count(1, usize::MAX, errors) => {
                for w in a.args.iter() {
                    match rcode(&w.text) {
                        Some(r) => cfg.next.push(r),
                        None => errors.push(ConfigError::new(
                            &w.pos,
                            format!("next: '{}' is not an rcode (e.g. NXDOMAIN, SERVFAIL, REFUSED)", w.text),
                        )),
                    }
                }
            }
            "except" | "force_tcp" | "prefer_udp" | "expire" | "max_idle_conns" | "read_timeout" | "max_fails"
            | "health_check" | "policy" | "max_concurrent" | "next" => {} // count already reported
            "tls" | "tls_servername" => errors.push(ConfigError::new(
                a.pos(),
                format!("forward: '{opt}' (DNS over TLS upstreams) is not supported"),
            )),
            other => errors.push(ConfigError::new(
                a.pos(),
                format!(
                    "forward: unknown option '{other}' (supported: except, force_tcp, prefer_udp, expire, \
                     max_idle_conns, read_timeout, max_fails, health_check, policy, max_concurrent, next)"
                ),
            )),
        }
    }
    if cfg.force_tcp && cfg.prefer_udp {
        errors.push(ConfigError::new(
            a.pos(),
            "forward: force_tcp and prefer_udp exclude each other",
        ));
    }
    if cfg.to.is_empty() {
        errors.push(ConfigError::new(a.pos(), "forward: no upstream to forward to"));
        return None;
    }
    Some(cfg)
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

/// An rcode by its name: `NXDOMAIN`, `SERVFAIL`, `REFUSED`, ...
pub fn rcode(text: &str) -> Option<ResponseCode> {
    crate::metrics::catalogue::RCODES
        .into_iter()
        .find(|r| crate::metrics::rcode_name(*r).eq_ignore_ascii_case(text))
}

/// The upstreams one `TO` word names.
fn upstreams(w: &Word, dir: &Path, errors: &mut Vec<ConfigError>) -> Vec<SocketAddr> {
    let text = w.text.as_str();
    if let Some(rest) = text.strip_prefix("tls://") {
        errors.push(ConfigError::new(
            &w.pos,
            format!("forward: 'tls://{rest}': DNS over TLS upstreams are not supported"),
        ));
        return Vec::new();
    }
    let bare = text.strip_prefix("dns://").unwrap_or(text);
    if let Some(addr) = socket_addr(bare) {
        return vec![addr];
    }
    if text.starts_with("dns://") {
        errors.push(ConfigError::new(
            &w.pos,
            format!("forward: '{text}' is not an address (IP[:PORT]) or a resolv.conf file"),
        ));
        return Vec::new();
    }
    let path = dir.join(text);
    match std::fs::read_to_string(&path) {
        Ok(body) => {
            let found = resolv_conf(&body);
            if found.is_empty() {
                errors.push(ConfigError::new(
                    &w.pos,
                    format!("forward: {} has no nameserver line", path.display()),
                ));
            }
            found
        }
        Err(e) => {
            errors.push(ConfigError::new(
                &w.pos,
                format!(
                    "forward: '{text}' is not an address (IP[:PORT]) nor a readable resolv.conf file ({}: {e})",
                    path.display()
                ),
            ));
            Vec::new()
        }
    }
}

/// `IP`, `IP:PORT`, `[IPv6]:PORT`; port 53 when absent.
pub fn socket_addr(text: &str) -> Option<SocketAddr> {
    if let Ok(ip) = text.parse::<IpAddr>() {
        return Some(SocketAddr::new(ip, 53));
    }
    text.parse().ok()
}

/// The `nameserver` addresses of a resolv.conf body.
pub fn resolv_conf(body: &str) -> Vec<SocketAddr> {
    body.lines()
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            (words.next() == Some("nameserver")).then(|| words.next()).flatten()
        })
        .filter_map(|ip| ip.split('%').next().and_then(socket_addr))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolv_conf_nameservers() {
        let body =
            "# x\nsearch a b\nnameserver 10.0.0.10\nnameserver fe80::1%eth0\noptions ndots:5\nnameserver bogus\n";
        assert_eq!(
            resolv_conf(body),
            vec![
                "10.0.0.10:53".parse().expect("addr"),
                "[fe80::1]:53".parse().expect("addr")
            ]
        );
        assert_eq!(
            socket_addr("127.0.0.1:5300"),
            Some("127.0.0.1:5300".parse().expect("addr"))
        );
        assert_eq!(rcode("nxdomain"), Some(ResponseCode::NXDomain));
    }
}
