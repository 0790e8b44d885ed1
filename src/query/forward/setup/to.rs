//! The words of a `forward` directive that name places: its `FROM` (a zone,
//! or a CIDR whose first reverse zone is used, as CoreDNS does) and its
//! `TO`s: `IP[:PORT]`, `dns://IP[:PORT]`, a resolv.conf-style file whose
//! `nameserver` lines are the upstreams, or a hostname resolved once at
//! load time (through the `resolver` addresses, else the system resolver);
//! `tls://` and `https://` ones are read by `forward_tls.rs`.
//! Upstreams named twice are kept once, first seen first.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs, UdpSocket};
use std::path::Path;
use std::time::Duration;

use hickory_proto::op::{Message, MessageType, OpCode, Query};
use hickory_proto::rr::{Name, RData, RecordType};

use crate::corefile::args::{zone, Net};
use crate::corefile::lexer::Word;
use crate::corefile::problem::ConfigError;
use crate::query::forward::setup::tls::{https_word, tls_word, Target, Via};

/// CoreDNS's cap on the upstreams of one `forward`.
pub const MAX_UPSTREAMS: usize = 15;

/// `FROM`: a zone, or `ADDR/LEN` for the first reverse zone it covers.
pub fn from_zone(w: &Word, errors: &mut Vec<ConfigError>) -> Option<Name> {
    if !w.text.contains('/') {
        return zone(w, errors);
    }
    let Some(name) = Net::parse(&w.text).and_then(|n| n.reverse_zones().into_iter().next()) else {
        errors.push(ConfigError::new(
            &w.pos,
            format!("forward: '{}' is neither a zone nor a CIDR (ADDR/LEN)", w.text),
        ));
        return None;
    };
    Some(name)
}

/// The upstreams of every `TO` word, deduplicated; `resolver` resolves
/// hostnames (empty: the system resolver).
pub fn upstreams(words: &[Word], dir: &Path, resolver: &[SocketAddr], errors: &mut Vec<ConfigError>) -> Vec<Target> {
    let mut to: Vec<Target> = Vec::new();
    for w in words {
        for t in encrypted(w, resolver, errors).unwrap_or_else(|| plain(w, dir, resolver, errors)) {
            if !to.contains(&t) {
                to.push(t);
            }
        }
    }
    to
}

/// The upstreams of a `tls://` or `https://` word; `None` for other words.
fn encrypted(w: &Word, resolver: &[SocketAddr], errors: &mut Vec<ConfigError>) -> Option<Vec<Target>> {
    let text = w.text.as_str();
    if let Some(rest) = text.strip_prefix("tls://") {
        let Some((addr, name)) = tls_word(rest) else {
            if let Some((host, name, port)) = tls_host(rest) {
                let via = Via::Tls(name);
                return Some(resolved(w, &host, port, resolver, via, errors));
            }
            let e = format!("forward: '{text}' is not tls://IP[:PORT], tls://IP%SERVERNAME[:PORT] nor tls://HOST[%SERVERNAME][:PORT]");
            errors.push(ConfigError::new(&w.pos, e));
            return Some(Vec::new());
        };
        return Some(vec![Target {
            addr,
            via: Via::Tls(name),
        }]);
    }
    let rest = text.strip_prefix("https://")?;
    let (host, port) = match https_word(rest) {
        Ok(hp) => hp,
        Err(e) => {
            errors.push(ConfigError::new(&w.pos, format!("forward: '{text}': {e}")));
            return Some(Vec::new());
        }
    };
    // `https://HOST%SERVERNAME`: the name the certificate must carry.
    let (host, via) = match host.split_once('%') {
        Some((h, name)) if !name.is_empty() => (h.to_string(), Via::Https(name.to_string())),
        _ => (host.clone(), Via::Https(host)),
    };
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Some(vec![Target {
            addr: SocketAddr::new(ip, port),
            via,
        }]);
    }
    Some(resolved(w, &host, port, resolver, via, errors))
}

/// `HOST[%SERVERNAME][:PORT]` of a `tls://` word naming a hostname.
fn tls_host(rest: &str) -> Option<(String, Option<String>, u16)> {
    let (hostpart, port) = match rest.rsplit_once(':') {
        Some((h, p)) => (h, p.parse().ok()?),
        None => (rest, 853),
    };
    let (host, name) = match hostpart.split_once('%') {
        Some((h, n)) if !n.is_empty() => (h, Some(n.to_string())),
        Some(_) => return None,
        None => (hostpart, None),
    };
    hostname(host).map(|(host, _)| (host, name, port))
}

/// The upstreams a hostname `TO` resolves to, over `via`.
fn resolved(
    w: &Word,
    host: &str,
    port: u16,
    resolver: &[SocketAddr],
    via: Via,
    errors: &mut Vec<ConfigError>,
) -> Vec<Target> {
    let addrs = lookup(host, port, resolver);
    if addrs.is_empty() {
        errors.push(ConfigError::new(
            &w.pos,
            format!("forward: failed to resolve '{host}' ({})", w.text),
        ));
    }
    addrs
        .into_iter()
        .map(|addr| Target { addr, via: via.clone() })
        .collect()
}

/// The plain-DNS upstreams one `TO` word names.
fn plain(w: &Word, dir: &Path, resolver: &[SocketAddr], errors: &mut Vec<ConfigError>) -> Vec<Target> {
    one(w, dir, resolver, errors).into_iter().map(Target::dns).collect()
}

/// The addresses one plain `TO` word names.
fn one(w: &Word, dir: &Path, resolver: &[SocketAddr], errors: &mut Vec<ConfigError>) -> Vec<SocketAddr> {
    let text = w.text.as_str();
    let bare = text.strip_prefix("dns://").unwrap_or(text);
    if let Some(addr) = socket_addr(bare) {
        return vec![addr];
    }
    let path = dir.join(bare);
    let read = std::fs::read_to_string(&path);
    if let Ok(body) = &read {
        // A file without nameserver lines adds none (as in CoreDNS); only
        // a forward left with no upstream at all is an error.
        return resolv_conf(body);
    }
    let Some((host, port)) = hostname(bare) else {
        let e = read
            .err()
            .map(|e| format!(" ({}: {e})", path.display()))
            .unwrap_or_default();
        errors.push(ConfigError::new(
            &w.pos,
            format!("forward: '{text}' is not an address (IP[:PORT]), a readable resolv.conf file nor a hostname{e}"),
        ));
        return Vec::new();
    };
    let found = lookup(&host, port, resolver);
    if found.is_empty() {
        let via = if resolver.is_empty() {
            "the system resolver".to_string()
        } else {
            format!("resolver {}", crate::corefile::args::spaced(resolver, ""))
        };
        errors.push(ConfigError::new(
            &w.pos,
            format!("forward: failed to resolve '{host}' through {via} (not an address, nor a readable resolv.conf file {})", path.display()),
        ));
    }
    found
}

/// `HOST[:PORT]` when `text` is a hostname (not a path, not an address).
fn hostname(text: &str) -> Option<(String, u16)> {
    let (host, port) = match text.rsplit_once(':') {
        Some((h, p)) => (h, p.parse().ok()?),
        None => (text, 53),
    };
    let valid = !host.is_empty()
        && !host.contains('/')
        && host.parse::<IpAddr>().is_err()
        && host
            .split('.')
            .all(|l| l.len() <= 63 && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'))
        && Name::from_ascii(host).is_ok();
    valid.then(|| (host.trim_end_matches('.').to_string(), port))
}

/// The addresses of `host` (A then AAAA) at `port`.
fn lookup(host: &str, port: u16, resolver: &[SocketAddr]) -> Vec<SocketAddr> {
    if resolver.is_empty() {
        return (host, port).to_socket_addrs().map(|a| a.collect()).unwrap_or_default();
    }
    let Ok(name) = Name::from_ascii(format!("{host}.")) else {
        return Vec::new();
    };
    for r in resolver {
        let mut ips: Vec<IpAddr> = Vec::new();
        for t in [RecordType::A, RecordType::AAAA] {
            ips.extend(ask(*r, &name, t));
        }
        if !ips.is_empty() {
            return ips.into_iter().map(|ip| SocketAddr::new(ip, port)).collect();
        }
    }
    Vec::new()
}

/// One question to `resolver` over UDP (2 s), its addresses.
fn ask(resolver: SocketAddr, name: &Name, t: RecordType) -> Vec<IpAddr> {
    let id = fastrand::u16(..);
    let mut m = Message::new(id, MessageType::Query, OpCode::Query);
    m.metadata.recursion_desired = true;
    m.add_query(Query::query(name.clone(), t));
    let local: SocketAddr = if resolver.is_ipv4() {
        ([0, 0, 0, 0], 0).into()
    } else {
        ([0u16; 8], 0).into()
    };
    let got = (|| {
        let s = UdpSocket::bind(local).ok()?;
        s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
        s.connect(resolver).ok()?;
        s.send(&m.to_vec().ok()?).ok()?;
        let mut buf = vec![0u8; 4096];
        let n = s.recv(&mut buf).ok()?;
        // the reply to this question (config never imports the query path: tests/layout.rs)
        let m = Message::from_vec(&buf[..n]).ok()?;
        let asked = Query::query(name.clone(), t);
        let ours = m.metadata.id == id
            && m.metadata.message_type == MessageType::Response
            && m.queries.first() == Some(&asked);
        ours.then_some(m)
    })();
    let answers = got.map(|m| m.answers).unwrap_or_default();
    answers
        .iter()
        .filter_map(|r| match &r.data {
            RData::A(a) => Some(IpAddr::V4(a.0)),
            RData::AAAA(a) => Some(IpAddr::V6(a.0)),
            _ => None,
        })
        .collect()
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
    }

    #[test]
    fn cidr_from_is_its_first_reverse_zone() {
        let z = |ip: &str, len: u8| {
            Net::parse(&format!("{ip}/{len}")).and_then(|n| n.reverse_zones().first().map(|z| z.to_ascii()))
        };
        // plugin/forward/setup_test.go TestSetup: 10.9.3.0/18 -> 0.9.10.in-addr.arpa.
        assert_eq!(z("10.9.3.0", 18).as_deref(), Some("0.9.10.in-addr.arpa."));
        assert_eq!(z("10.0.0.0", 8).as_deref(), Some("10.in-addr.arpa."));
        assert_eq!(z("fd00::", 12).as_deref(), Some("0.d.f.ip6.arpa."));
        assert_eq!(z("10.0.0.0", 33), None);
    }

    #[test]
    fn hostnames_are_told_from_paths_and_addresses() {
        assert_eq!(hostname("dns.example.org"), Some(("dns.example.org".into(), 53)));
        assert_eq!(hostname("my-dns.svc:5353"), Some(("my-dns.svc".into(), 5353)));
        assert_eq!(hostname("/etc/resolv.conf"), None);
        assert_eq!(hostname("10.0.0.1"), None);
        assert_eq!(hostname("a b"), None);
    }
}
