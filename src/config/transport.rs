//! How a server block is reached: the scheme of its keys (`dns://`,
//! `tls://`, `https://`, `https3://`, `quic://`, `grpc://`, each with
//! CoreDNS's default port), and the directives that shape its listener:
//! `tls CERT KEY [CA] { client_auth MODE }`, `https { max_connections N }`,
//! `quic { ... }`, and `https3`/`grpc_server { max_streams N
//! max_connections N }`. What one listener needs is
//! [`Listen`], the part of a listener group's key that tells transports
//! apart (two blocks share a listener only when their `Listen` is equal).

use std::path::{Path, PathBuf};

use crate::corefile::args::{choice, Args};
use crate::corefile::blocks::{Directive, RawBlock};
use crate::corefile::options::{self, Opt};
use crate::corefile::problem::ConfigError;

/// The transport of a server block, from its keys' scheme.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scheme {
    /// `dns://` (or none): UDP and TCP.
    #[default]
    Dns,
    /// `tls://`: DNS over TLS (RFC 7858).
    Tls,
    /// `https://`: DNS over HTTPS (RFC 8484), plain HTTP without `tls`.
    Https,
    /// `quic://`: DNS over QUIC (RFC 9250).
    Quic,
    /// `https3://`: DNS over HTTPS over HTTP/3 (RFC 8484 over RFC 9114).
    Https3,
    /// `grpc://`: CoreDNS's gRPC service, plain HTTP/2 without `tls`.
    Grpc,
}

impl Scheme {
    /// The schemes clusterdns serves, as written before `://`.
    const ALL: [(&'static str, Scheme); 6] = [
        ("dns", Scheme::Dns),
        ("tls", Scheme::Tls),
        ("https", Scheme::Https),
        ("quic", Scheme::Quic),
        ("https3", Scheme::Https3),
        ("grpc", Scheme::Grpc),
    ];

    pub fn name(self) -> &'static str {
        Scheme::ALL[self as usize].0
    }

    /// The port a key of this scheme that names none listens on (`dns`:
    /// `-dns.port`, as CoreDNS's flag changes only plain DNS).
    pub fn default_port(self, dns_port: u16) -> u16 {
        match self {
            Scheme::Dns => dns_port,
            Scheme::Tls | Scheme::Quic => 853,
            Scheme::Https | Scheme::Https3 | Scheme::Grpc => 443,
        }
    }

    /// Whether its listener takes TCP (`dns`, `tls`, `https`, `grpc`) and
    /// UDP (`dns`, `quic`, `https3`) on its port.
    pub fn sockets(self) -> (bool, bool) {
        let udp = matches!(self, Scheme::Dns | Scheme::Quic | Scheme::Https3);
        (!matches!(self, Scheme::Quic | Scheme::Https3), udp)
    }
}

/// The scheme written before `://` in a key (`None`: unknown, reported).
pub fn scheme_of(key: &crate::corefile::lexer::Word, errors: &mut Vec<ConfigError>) -> Option<Scheme> {
    let Some((written, _)) = key.text.split_once("://") else {
        return Some(Scheme::Dns);
    };
    if let Some((_, s)) = Scheme::ALL.iter().find(|(n, _)| *n == written) {
        return Some(*s);
    }
    errors.push(ConfigError::new(
        &key.pos,
        format!(
            "'{written}://' servers are not supported (dns://, tls://, https://, https3://, quic:// and grpc:// are)"
        ),
    ));
    None
}

/// The scheme every key of `block` shares (mixed schemes are an error).
pub fn block_scheme(block: &RawBlock, errors: &mut Vec<ConfigError>) -> Scheme {
    let mut found: Option<Scheme> = None;
    for key in &block.keys {
        let mut ignored = Vec::new();
        let Some(s) = scheme_of(key, &mut ignored) else {
            continue; // reported by the key's own reading
        };
        match found {
            Some(f) if f != s => errors.push(ConfigError::new(
                &key.pos,
                format!(
                    "keys of one block must share a scheme ({}:// and {}://)",
                    f.name(),
                    s.name()
                ),
            )),
            _ => found = Some(s),
        }
    }
    found.unwrap_or_default()
}

/// Who must show a client certificate (`tls { client_auth }`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ClientAuth {
    /// None is asked for (no CA given, or `nocert`).
    NoCert,
    /// Checked against the CA when shown (`verify_if_given`).
    VerifyIfGiven,
    /// Required and checked against the CA (`require_and_verify`, the
    /// default with a CA: mutual TLS).
    RequireAndVerify,
}

/// `tls CERT KEY [CA] { client_auth MODE }`: the server's certificate and
/// key, and the CA client certificates are checked against.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
    pub ca: Option<PathBuf>,
    pub client_auth: ClientAuth,
    /// `keylog FILE`: TLS secrets appended in the NSS key log format
    /// (debugging only).
    pub keylog: Option<PathBuf>,
    /// `tls { acme ... }`: the certificate comes from an ACME server, kept
    /// in one file (`cert` and `key` both name it) that may not exist yet.
    pub acme: Option<super::acme::Acme>,
}

/// What one listener serves besides its router: the transport, its
/// certificate files, its own connection cap (`https { max_connections }`).
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Listen {
    pub scheme: Scheme,
    pub tls: Option<TlsFiles>,
    /// `https { max_connections N }` (default 200; 0: no cap).
    pub max_connections: Option<usize>,
    /// `quic { max_streams N worker_pool_size N }`.
    pub quic: Option<QuicLimits>,
    /// `https3 { ... }` or `grpc_server { max_streams N max_connections N }`.
    pub streams: Option<StreamLimits>,
    /// `multisocket N`: UDP sockets (and worker threads) on the port; the
    /// largest of the blocks sharing it (`None`: one per core).
    pub sockets: Option<usize>,
}

/// `quic { max_streams N worker_pool_size N }` (CoreDNS's defaults 256 and 1024).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct QuicLimits {
    /// Streams (queries) open at once per connection.
    pub max_streams: usize,
    /// Queries answered at once over the listener's connections.
    pub worker_pool_size: usize,
}

impl Default for QuicLimits {
    fn default() -> Self {
        QuicLimits {
            max_streams: 256,
            worker_pool_size: 1024,
        }
    }
}

/// `https3` and `grpc_server { max_streams N max_connections N }`
/// (CoreDNS's defaults 256 and 200; 0: no cap).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StreamLimits {
    /// Streams (requests) open at once per connection.
    pub max_streams: usize,
    /// Connections open at once on the listener.
    pub max_connections: usize,
}

impl Default for StreamLimits {
    fn default() -> Self {
        StreamLimits {
            max_streams: 256,
            max_connections: HTTPS_MAX_CONNECTIONS,
        }
    }
}

/// CoreDNS's `https { max_connections }` default.
pub const HTTPS_MAX_CONNECTIONS: usize = 200;

/// Reads `tls CERT KEY [CA] { client_auth MODE }`, or `tls { acme ... }`
/// (`root`: where its relative paths resolve), into `listen`.
pub fn tls(d: &Directive, listen: &mut Listen, (dir, root): (&Path, Option<&Path>), errors: &mut Vec<ConfigError>) {
    if listen.tls.is_some() {
        errors.push(ConfigError::new(&d.name.pos, "tls: only one per server block"));
    }
    only_encrypted(d, listen, errors);
    if d.args.is_empty() {
        if let Some(acme) = super::acme::parse(d, root.unwrap_or(dir), errors) {
            let file = acme.cert_file();
            listen.tls = Some(TlsFiles {
                cert: file.clone(),
                key: file,
                ca: None,
                client_auth: ClientAuth::NoCert,
                keylog: None,
                acme: Some(acme),
            });
        }
        return;
    }
    if !Args::from(d).count(2, 3, errors) {
        return;
    }
    let path = |i: usize| dir.join(&d.args[i].text);
    let ca = d.args.get(2).map(|_| path(2));
    let mut files = TlsFiles {
        cert: path(0),
        key: path(1),
        client_auth: if ca.is_some() {
            ClientAuth::RequireAndVerify
        } else {
            ClientAuth::NoCert
        },
        ca,
        keylog: None,
        acme: None,
    };
    options::read("tls", &d.options, TLS_OPTIONS, &mut files, errors);
    files.keylog = files.keylog.take().map(|f| dir.join(f));
    if files.ca.is_none() && files.client_auth != ClientAuth::NoCert {
        errors.push(ConfigError::new(
            &d.name.pos,
            "tls: client_auth other than nocert needs a CA (tls CERT KEY CA)",
        ));
    }
    // Read now, so that `check` reports a missing or broken file (the
    // listener reads them again when it opens, and on every change).
    let ca = files.ca.as_deref().filter(|_| files.client_auth != ClientAuth::NoCert);
    let optional = files.client_auth == ClientAuth::VerifyIfGiven;
    if let Err(e) = crate::tls::server_config(&files.cert, &files.key, ca, optional) {
        errors.push(ConfigError::new(&d.name.pos, format!("tls: {e}")));
    }
    listen.tls = Some(files);
}

/// `tls` serves only the encrypted schemes.
fn only_encrypted(d: &Directive, listen: &Listen, errors: &mut Vec<ConfigError>) {
    if listen.scheme == Scheme::Dns {
        errors.push(ConfigError::new(
            &d.name.pos,
            "tls: only in a tls://, https://, https3://, quic:// or grpc:// server block (dns:// is plain UDP and TCP)",
        ));
    }
}

const TLS_OPTIONS: &[Opt<TlsFiles>] = &[
    Opt::new("client_auth", (1, 1), |a, files, errors| {
        let modes = [
            ("nocert", ClientAuth::NoCert),
            ("verify_if_given", ClientAuth::VerifyIfGiven),
            ("require_and_verify", ClientAuth::RequireAndVerify),
        ];
        if matches!(a.args[0].text.as_str(), "request" | "require") {
            errors.push(ConfigError::new(
                &a.args[0].pos,
                format!(
                    "tls: client_auth {} is not supported: a certificate shown is always verified; \
                     write verify_if_given or require_and_verify",
                    a.args[0].text
                ),
            ));
            return;
        }
        files.client_auth = choice(&a.args[0], "tls: client_auth", &modes, errors).unwrap_or(files.client_auth);
    }),
    Opt::new("keylog", (1, 1), |a, files, _| {
        files.keylog = Some(PathBuf::from(&a.args[0].text))
    }),
];

/// Reads `https { max_connections N }` into `listen`.
pub fn https(d: &Directive, listen: &mut Listen, errors: &mut Vec<ConfigError>) {
    Args::from(d).count(0, 0, errors);
    if listen.scheme != Scheme::Https {
        errors.push(ConfigError::new(&d.name.pos, "https: only in an https:// server block"));
    }
    let mut max = listen.max_connections.unwrap_or(HTTPS_MAX_CONNECTIONS);
    let options: &[Opt<usize>] = &[Opt::new("max_connections", (1, 1), |a, max, errors| {
        if let Some(n) = a.parse::<usize>(0, "a number (0: no limit)", errors) {
            *max = n;
        }
    })];
    options::read("https", &d.options, options, &mut max, errors);
    listen.max_connections = Some(max);
}

/// Reads `quic { max_streams N worker_pool_size N }` into `listen`.
pub fn quic(d: &Directive, listen: &mut Listen, errors: &mut Vec<ConfigError>) {
    Args::from(d).count(0, 0, errors);
    if listen.scheme != Scheme::Quic {
        errors.push(ConfigError::new(&d.name.pos, "quic: only in a quic:// server block"));
    }
    let mut limits = listen.quic.unwrap_or_default();
    options::read("quic", &d.options, QUIC_OPTIONS, &mut limits, errors);
    listen.quic = Some(limits);
}

const QUIC_OPTIONS: &[Opt<QuicLimits>] = &[
    Opt::new("max_streams", (1, 1), |a, l, errors| {
        l.max_streams = positive(a, errors).unwrap_or(l.max_streams)
    }),
    Opt::new("worker_pool_size", (1, 1), |a, l, errors| {
        l.worker_pool_size = positive(a, errors).unwrap_or(l.worker_pool_size)
    }),
];

/// Reads `https3 { ... }` (in an `https3://` block) or `grpc_server {
/// ... }` (in a `grpc://` block): `max_streams N max_connections N`.
pub fn streams(d: &Directive, listen: &mut Listen, errors: &mut Vec<ConfigError>) {
    let name = d.name.text.as_str();
    let scheme = if name == "https3" { Scheme::Https3 } else { Scheme::Grpc };
    Args::from(d).count(0, 0, errors);
    if listen.scheme != scheme {
        let what = format!("{name}: only in a {}:// server block", scheme.name());
        errors.push(ConfigError::new(&d.name.pos, what));
    }
    if listen.streams.is_some() {
        errors.push(ConfigError::new(
            &d.name.pos,
            format!("{name}: only one per server block"),
        ));
    }
    let mut limits = StreamLimits::default();
    options::read(name, &d.options, STREAM_OPTIONS, &mut limits, errors);
    listen.streams = Some(limits);
}

const STREAM_OPTIONS: &[Opt<StreamLimits>] = &[
    Opt::new("max_streams", (1, 1), |a, l, errors| {
        l.max_streams = a.parse(0, "a number (0: no limit)", errors).unwrap_or(l.max_streams)
    }),
    Opt::new("max_connections", (1, 1), |a, l, errors| {
        l.max_connections = a
            .parse(0, "a number (0: no limit)", errors)
            .unwrap_or(l.max_connections)
    }),
];

/// The option's one argument, a number above 0.
fn positive(a: &Args<'_>, errors: &mut Vec<ConfigError>) -> Option<usize> {
    let n = a.parse::<usize>(0, "a positive number", errors)?;
    if n == 0 {
        errors.push(ConfigError::new(
            &a.args[0].pos,
            format!("{}: must be above 0", a.name.text),
        ));
        return None;
    }
    Some(n)
}

/// A `tls://`, `quic://` or `https3://` block needs a `tls` directive
/// (clusterdns never serves DNS over TLS's port in the clear; QUIC is TLS
/// 1.3 always).
pub fn needs(listen: &Listen, open: &crate::corefile::lexer::Pos, errors: &mut Vec<ConfigError>) {
    if matches!(listen.scheme, Scheme::Tls | Scheme::Quic | Scheme::Https3) && listen.tls.is_none() {
        errors.push(ConfigError::new(
            open,
            format!(
                "{}:// servers need a tls directive (tls CERT KEY [CA]) in their block",
                listen.scheme.name()
            ),
        ));
    }
}
