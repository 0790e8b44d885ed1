//! How a `forward` reaches each upstream: plain DNS, DNS over TLS
//! (`tls://IP[:PORT][%SERVERNAME]`, port 853) or DNS over HTTPS
//! (`https://HOST[:PORT][/dns-query]`, port 443), and the TLS client
//! configuration both encrypted ones share, built once at load time:
//!
//! ```text
//! tls                  server certificate checked against the system roots
//! tls CA               ... against CA (a PEM file) instead
//! tls CERT KEY         client certificate, system roots
//! tls CERT KEY CA      client certificate, CA
//! tls_servername NAME  the name every tls:// upstream's certificate must carry
//!                      (refused beside a per-upstream `%NAME`, as CoreDNS does)
//! doh_method GET|POST  how https:// upstreams are asked (POST)
//! ```
//! Without a server name a `tls://IP` upstream's certificate must carry the
//! IP; verification is never turned off and nothing falls back to plain DNS.

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

use crate::corefile::lexer::Word;
use crate::corefile::problem::ConfigError;

/// One upstream of a `forward` and how it is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub addr: SocketAddr,
    pub via: Via,
}

/// The transport to one upstream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Via {
    Dns,
    /// DNS over TLS; the server name given with `%NAME`, if any.
    Tls(Option<String>),
    /// DNS over HTTPS; the host as written (the URL's authority and the
    /// name checked when no `tls_servername` is set).
    Https(String),
    /// CoreDNS's gRPC service (the `grpc` directive): over TLS when its
    /// `tls` or `tls_servername` is set, else h2c.
    Grpc,
    /// The same over a unix socket (`grpc . unix://PATH`, h2c): the path as
    /// written; the target's address is [`UNIX`], no address.
    GrpcUnix(String),
}

/// The address a `unix://` gRPC upstream's target holds (none is dialled).
pub const UNIX: SocketAddr = SocketAddr::new(IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED), 0);

/// `doh_method`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DohMethod {
    Get,
    Post,
}

/// The shared TLS settings of one `forward`.
#[derive(Clone)]
pub struct TlsSettings {
    /// `tls` arguments as given (for `check`).
    pub files: Vec<PathBuf>,
    pub servername: Option<String>,
    pub doh_method: DohMethod,
    /// Built from `files` when some upstream is encrypted.
    pub client: Option<Arc<rustls::ClientConfig>>,
}

impl fmt::Debug for TlsSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsSettings")
            .field("files", &self.files)
            .field("servername", &self.servername)
            .field("doh_method", &self.doh_method)
            .finish()
    }
}

impl Default for TlsSettings {
    fn default() -> TlsSettings {
        TlsSettings {
            files: Vec::new(),
            servername: None,
            doh_method: DohMethod::Post,
            client: None,
        }
    }
}

impl Target {
    pub fn dns(addr: SocketAddr) -> Target {
        Target { addr, via: Via::Dns }
    }

    /// The name the upstream's certificate must carry: `%NAME`, else
    /// `tls_servername`, else the DoH host, else the IP.
    pub fn server_name(&self, tls: &TlsSettings) -> String {
        match &self.via {
            Via::Tls(Some(n)) => n.clone(),
            _ if tls.servername.is_some() => tls.servername.clone().unwrap_or_default(),
            Via::Https(host) => host.clone(),
            _ => self.addr.ip().to_string(),
        }
    }
}

/// The form a Corefile takes: `IP:PORT`, `tls://IP%NAME:PORT`, `https://HOST:PORT`.
impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ip = match self.addr.ip() {
            IpAddr::V4(v4) => v4.to_string(),
            IpAddr::V6(v6) => format!("[{v6}]"),
        };
        match &self.via {
            Via::Dns | Via::Grpc => write!(f, "{}", self.addr),
            Via::GrpcUnix(path) => write!(f, "unix://{path}"),
            Via::Tls(None) => write!(f, "tls://{}", self.addr),
            Via::Tls(Some(n)) if self.addr.is_ipv6() => {
                write!(f, "tls://[{}%{n}]:{}", self.addr.ip(), self.addr.port())
            }
            Via::Tls(Some(n)) => write!(f, "tls://{ip}%{n}:{}", self.addr.port()),
            Via::Https(host) if host.contains(':') => write!(f, "https://[{host}]:{}", self.addr.port()),
            Via::Https(host) => write!(f, "https://{host}:{}", self.addr.port()),
        }
    }
}

/// A `tls://` word's address and `%NAME` (CoreDNS's forms: `IP%NAME:PORT`,
/// `[IPv6%NAME]:PORT`, `IP:PORT`, `IP`); `None` when it is not one.
pub fn tls_word(rest: &str) -> Option<(SocketAddr, Option<String>)> {
    let (host, port) = match rest.rsplit_once(':') {
        Some((h, p))
            if !h.is_empty() && p.chars().all(|c| c.is_ascii_digit()) && (h.ends_with(']') || !h.contains(':')) =>
        {
            (h, p.parse::<u16>().ok()?)
        }
        _ => (rest, 853),
    };
    let host = host
        .strip_prefix('[')
        .map(|h| h.strip_suffix(']'))
        .unwrap_or(Some(host))?;
    let (ip, name) = match host.rsplit_once('%') {
        Some((ip, name)) if !name.is_empty() => (ip, Some(name.to_string())),
        Some(_) => return None,
        None => (host, None),
    };
    Some((SocketAddr::new(ip.parse().ok()?, port), name))
}

/// An `https://` word's host and port (443); `/dns-query` is the only path.
pub fn https_word(rest: &str) -> Result<(String, u16), String> {
    let (authority, path) = rest.split_once('/').map_or((rest, ""), |(a, p)| (a, p));
    if !path.is_empty() && path != "dns-query" || rest.ends_with('/') {
        return Err(format!(
            "only the /dns-query path is used for DNS over HTTPS upstreams ('/{path}' given)"
        ));
    }
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) if !h.contains(':') || h.ends_with(']') => {
            (h, p.parse::<u16>().map_err(|_| format!("'{p}' is not a port"))?)
        }
        _ => (authority, 443),
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() {
        return Err("no host".into());
    }
    Ok((host.to_string(), port))
}

/// Checks what holds across the upstreams and builds the client config
/// when any upstream is encrypted. `at` places the errors.
pub fn finish(to: &[Target], tls: &mut TlsSettings, at: &Word, errors: &mut Vec<ConfigError>) {
    if let (Some(name), Some(t)) = (&tls.servername, to.iter().find(|t| matches!(t.via, Via::Tls(Some(_))))) {
        errors.push(ConfigError::new(
            &at.pos,
            format!("forward: both forward ('{name}') and upstream ('{t}') TLS server names are set; keep one"),
        ));
    }
    if tls.files.is_empty() && to.iter().all(|t| t.via == Via::Dns) {
        return;
    }
    match crate::tls::client_config(&tls.files, false) {
        Ok(c) => tls.client = Some(Arc::new(c)),
        Err(e) => errors.push(ConfigError::new(&at.pos, format!("forward: tls: {e}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tls::client_config;

    #[test]
    fn tls_words_in_coredns_forms() {
        let w = |s: &str| tls_word(s).map(|(a, n)| (a.to_string(), n));
        assert_eq!(w("127.0.0.1"), Some(("127.0.0.1:853".into(), None)));
        assert_eq!(w("127.0.0.1:854"), Some(("127.0.0.1:854".into(), None)));
        assert_eq!(
            w("127.0.0.1%example.net:854"),
            Some(("127.0.0.1:854".into(), Some("example.net".into())))
        );
        assert_eq!(
            w("fe80::1%example.com"),
            Some(("[fe80::1]:853".into(), Some("example.com".into())))
        );
        assert_eq!(
            w("[2400:3200::1%dns.alidns.com]:853"),
            Some(("[2400:3200::1]:853".into(), Some("dns.alidns.com".into())))
        );
        assert_eq!(w("[2400:3200::1]:853"), Some(("[2400:3200::1]:853".into(), None)));
        assert_eq!(w("dns.example"), None);
        assert_eq!(w("1.1.1.1%"), None);
    }

    #[test]
    fn https_words() {
        assert_eq!(https_word("9.9.9.9"), Ok(("9.9.9.9".into(), 443)));
        assert_eq!(
            https_word("dns.example:8443/dns-query"),
            Ok(("dns.example".into(), 8443))
        );
        assert!(https_word("1.1.1.1/").is_err());
        assert!(https_word("1.1.1.1/resolve").is_err());
    }

    #[test]
    fn unreadable_or_empty_tls_files_are_errors() {
        let missing = client_config(&[PathBuf::from("/nonexistent/ca.pem")], false).expect_err("missing file");
        assert!(missing.contains("/nonexistent/ca.pem"), "{missing}");
        let dir = std::env::temp_dir().join(format!("clusterdns-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let empty = dir.join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").expect("write");
        let e = client_config(std::slice::from_ref(&empty), false).expect_err("no certificate");
        assert!(e.contains("no PEM certificate"), "{e}");
        assert!(
            client_config(&[empty.clone(), empty.clone(), empty.clone(), empty], false).is_err(),
            "four files"
        );
    }

    #[test]
    fn targets_print_as_written() {
        let t = |via| {
            Target {
                addr: "127.0.0.1:854".parse().expect("addr"),
                via,
            }
            .to_string()
        };
        assert_eq!(t(Via::Tls(Some("dns".into()))), "tls://127.0.0.1%dns:854");
        assert_eq!(t(Via::Tls(None)), "tls://127.0.0.1:854");
        assert_eq!(t(Via::Https("dns.example".into())), "https://dns.example:854");
    }
}
