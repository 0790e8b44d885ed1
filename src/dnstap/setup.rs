//! `dnstap`: every query and reply (and every upstream exchange) sent as a
//! dnstap message to a collector, as CoreDNS's plugin of that name.
//!
//! ```text
//! dnstap [listen] SOCKET [full] [WRITEBUFFER] [QUEUE] {
//!     identity IDENTITY      default: the host name
//!     version VERSION        default: clusterdns-<version>
//!     extra EXTRA            default: none
//!     tls CERT KEY [CA]      listen tls:// only: the server's certificate; with CA,
//!                            collectors must show a certificate it signed
//!     skipverify             tls://: do not check the collector's certificate
//!                            (listen: a collector without one is let in too)
//! }
//! SOCKET: unix:///path, /path (a unix socket), tcp://HOST:PORT, tls://HOST:PORT
//! WRITEBUFFER: 1..=1024 (MiB of socket send buffer), QUEUE: 1..=4096 (× 10,000 messages)
//! ```
//!
//! A server block may hold several `dnstap` directives; each gets every
//! message. Without `listen` the server connects to the collector; with
//! it the server listens on SOCKET and every collector that connects gets
//! the stream.

use std::path::PathBuf;

use crate::corefile::args::Args;
use crate::corefile::blocks::Directive;
use crate::corefile::lexer::Word;
use crate::corefile::options::{self, Opt, MANY};
use crate::corefile::problem::ConfigError;

/// Messages queued per QUEUE unit (CoreDNS's queue size).
pub const QUEUE_UNIT: usize = 10_000;

/// Where the messages go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    Unix(PathBuf),
    /// `HOST:PORT`, resolved at each connect.
    Tcp(String),
    /// `HOST:PORT`; HOST is also the name the certificate must carry.
    Tls(String),
}

/// `dnstap listen`: the server listens on the endpoint and collectors
/// connect to it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Listen {
    /// `tls CERT KEY [CA]` (a tls:// endpoint needs it).
    pub tls: Option<ListenTls>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenTls {
    pub cert: PathBuf,
    pub key: PathBuf,
    /// Client certificates are asked for and verified against this CA.
    pub ca: Option<PathBuf>,
}

/// One `dnstap` directive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DnstapConfig {
    pub endpoint: Endpoint,
    /// `Some` for `dnstap listen`.
    pub listen: Option<Listen>,
    /// `full`: the wire messages are included.
    pub full: bool,
    /// Socket send buffer, MiB.
    pub write_buffer: u32,
    /// Queue length, in units of [`QUEUE_UNIT`] messages.
    pub queue: u32,
    pub identity: String,
    pub version: String,
    pub extra: Option<String>,
    pub skip_verify: bool,
}

impl DnstapConfig {
    /// How many messages may wait for the collector.
    pub fn queue_len(&self) -> usize {
        self.queue as usize * QUEUE_UNIT
    }
}

/// The options of a `dnstap` block.
const OPTIONS: &[Opt<DnstapConfig>] = &[
    Opt::new("identity", (1, 1), |a, cfg, _| cfg.identity = a.args[0].text.clone()),
    Opt::new("version", (1, 1), |a, cfg, _| cfg.version = a.args[0].text.clone()),
    Opt::new("extra", (1, 1), |a, cfg, _| cfg.extra = Some(a.args[0].text.clone())),
    Opt::new("tls", (0, MANY), |a, cfg, errors| listen_tls(cfg, a, errors)),
    Opt::new("skipverify", (0, 0), |_, cfg, _| cfg.skip_verify = true),
];

/// Parses one `dnstap` directive.
pub fn parse(d: &Directive, errors: &mut Vec<ConfigError>) -> Option<DnstapConfig> {
    let listening = d.args.first().is_some_and(|w| w.text == "listen");
    let args = &d.args[usize::from(listening)..];
    let a = Args { name: &d.name, args };
    if listening && args.is_empty() {
        errors.push(ConfigError::new(
            &d.name.pos,
            "dnstap: 'listen' needs a SOCKET to listen on",
        ));
        return None;
    }
    if !a.count(1, 4, errors) {
        return None;
    }
    let endpoint = endpoint(&args[0], errors);
    let full = match args.get(1) {
        Some(w) if w.text != "full" => {
            errors.push(ConfigError::new(&w.pos, format!("dnstap: '{}' is not 'full'", w.text)));
            false
        }
        w => w.is_some(),
    };
    let write_buffer = args.get(2).and_then(|w| number(w, "WRITEBUFFER (MiB)", 1024, errors));
    let queue = args
        .get(3)
        .and_then(|w| number(w, "QUEUE (× 10000 messages)", 4096, errors));
    let mut cfg = DnstapConfig {
        endpoint: endpoint?,
        listen: listening.then(Listen::default),
        full,
        write_buffer: write_buffer.unwrap_or(1),
        queue: queue.unwrap_or(1),
        identity: hostname(),
        version: format!("clusterdns-{}", env!("CARGO_PKG_VERSION")),
        extra: None,
        skip_verify: false,
    };
    let tls_line = d.options.iter().any(|l| l.name.text == "tls");
    options::read("dnstap", &d.options, OPTIONS, &mut cfg, errors);
    if let (Some(l), Endpoint::Tls(addr)) = (&cfg.listen, &cfg.endpoint) {
        if l.tls.is_none() && !tls_line {
            let pos = d.args.get(1).map_or(&d.name.pos, |w| &w.pos);
            errors.push(ConfigError::new(
                pos,
                format!("dnstap: listening on tls://{addr} needs 'tls CERT KEY [CA]' in its block"),
            ));
        }
    }
    Some(cfg)
}

/// `tls CERT KEY [CA]`, of `dnstap listen tls://…` only; the files are
/// read now, so that a bad one is an error here.
fn listen_tls(cfg: &mut DnstapConfig, a: &Args<'_>, errors: &mut Vec<ConfigError>) {
    let tls_socket = matches!(cfg.endpoint, Endpoint::Tls(_));
    let Some(listen) = cfg.listen.as_mut().filter(|_| tls_socket) else {
        errors.push(ConfigError::new(
            a.pos(),
            "dnstap: 'tls CERT KEY [CA]' is an option of 'dnstap listen tls://HOST:PORT' only",
        ));
        return;
    };
    if !a.count(2, 3, errors) {
        return;
    }
    let path = |i: usize| a.args.get(i).map(|w| PathBuf::from(&w.text));
    let tls = ListenTls {
        cert: PathBuf::from(&a.args[0].text),
        key: PathBuf::from(&a.args[1].text),
        ca: path(2),
    };
    match crate::tls::server_config(&tls.cert, &tls.key, tls.ca.as_deref(), false) {
        Ok(_) => listen.tls = Some(tls),
        Err(e) => errors.push(ConfigError::new(a.pos(), format!("dnstap: tls: {e}"))),
    }
}

/// `unix:///path`, `/path`, `tcp://HOST:PORT` or `tls://HOST:PORT`.
fn endpoint(w: &Word, errors: &mut Vec<ConfigError>) -> Option<Endpoint> {
    let text = w.text.as_str();
    let remote = |rest: &str, make: fn(String) -> Endpoint, errors: &mut Vec<ConfigError>| {
        let port_ok = rest
            .rsplit_once(':')
            .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok_and(|p| p > 0));
        if port_ok && !rest.contains('/') {
            return Some(make(rest.to_string()));
        }
        errors.push(ConfigError::new(
            &w.pos,
            format!("dnstap: '{text}' is not SCHEME://HOST:PORT (a host and a port 1..=65535)"),
        ));
        None
    };
    if let Some(rest) = text.strip_prefix("tcp://") {
        remote(rest, Endpoint::Tcp, errors)
    } else if let Some(rest) = text.strip_prefix("tls://") {
        remote(rest, Endpoint::Tls, errors)
    } else if let Some((scheme, _)) = text.split_once("://").filter(|(s, _)| *s != "unix") {
        errors.push(ConfigError::new(
            &w.pos,
            format!("dnstap: unknown socket scheme '{scheme}' (unix://, tcp://, tls://)"),
        ));
        None
    } else {
        let path = text.strip_prefix("unix://").unwrap_or(text);
        if path.is_empty() {
            errors.push(ConfigError::new(&w.pos, "dnstap: the unix socket path is empty"));
            return None;
        }
        Some(Endpoint::Unix(PathBuf::from(path)))
    }
}

fn number(w: &Word, what: &str, max: u32, errors: &mut Vec<ConfigError>) -> Option<u32> {
    match w.text.parse::<u32>() {
        Ok(n) if (1..=max).contains(&n) => Some(n),
        _ => {
            errors.push(ConfigError::new(
                &w.pos,
                format!("dnstap: {what} '{}' is not a number between 1 and {max}", w.text),
            ));
            None
        }
    }
}

/// The host name, CoreDNS's default identity.
fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_default()
}

/// The default identity, for the printout's tests.
#[cfg(test)]
pub fn tests_hostname() -> String {
    hostname()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::tests::{loaded as load, one_error_each};

    fn taps(text: &str) -> Vec<DnstapConfig> {
        let config = load(text).unwrap_or_else(|e| panic!("{text}: {e:?}"));
        config.servers[0].dnstap.clone()
    }

    #[test]
    fn corefiles_of_coredns_readme_load() {
        let t = taps(".:53 {\n dnstap /tmp/dnstap.sock full 1024 2048\n dnstap tcp://example.com:6000\n}");
        assert_eq!(t.len(), 2);
        assert_eq!(t[0].endpoint, Endpoint::Unix("/tmp/dnstap.sock".into()));
        assert!(t[0].full && t[0].write_buffer == 1024 && t[0].queue_len() == 2048 * QUEUE_UNIT);
        assert_eq!(t[1].endpoint, Endpoint::Tcp("example.com:6000".into()));
        assert!(!t[1].full && t[1].queue == 1 && t[1].extra.is_none());
        let t = taps(".:53 {\n dnstap unix:///tmp/d.sock {\n identity my-dns-server1\n version MyDNSServer-1.2.3\n extra \"upstream: x\"\n }\n}");
        assert_eq!(t[0].endpoint, Endpoint::Unix("/tmp/d.sock".into()));
        assert_eq!(
            (t[0].identity.as_str(), t[0].version.as_str()),
            ("my-dns-server1", "MyDNSServer-1.2.3")
        );
        assert_eq!(t[0].extra.as_deref(), Some("upstream: x"));
        let t = taps(".:53 {\n dnstap tls://127.0.0.1:6000 full {\n skipverify\n }\n}");
        assert_eq!(t[0].endpoint, Endpoint::Tls("127.0.0.1:6000".into()));
        assert!(t[0].skip_verify && t[0].full);
    }

    #[test]
    fn listen_sockets_of_coredns_readme_load() {
        let t = taps(".:53 {\n dnstap listen /tmp/dnstap.sock full\n dnstap listen tcp://127.0.0.1:6000 full\n}");
        assert_eq!(t[0].endpoint, Endpoint::Unix("/tmp/dnstap.sock".into()));
        assert_eq!(t[1].endpoint, Endpoint::Tcp("127.0.0.1:6000".into()));
        assert!(t.iter().all(|t| t.full && t.listen == Some(Listen::default())));
        let t = taps(
            ".:53 {\n dnstap tcp://remote-collector.example.com:6000 full\n dnstap listen tcp://127.0.0.1:6001 full\n}",
        );
        assert_eq!((t[0].listen.is_some(), t[1].listen.is_some()), (false, true));
        // WRITEBUFFER and QUEUE follow `full` after `listen` as well.
        let t = taps(".:53 {\n dnstap listen unix:///tmp/d.sock full 2 3 {\n identity me\n }\n}");
        assert_eq!((t[0].write_buffer, t[0].queue, t[0].identity.as_str()), (2, 3, "me"));
    }

    #[test]
    fn bad_dnstap_lines_are_errors_with_their_place() {
        one_error_each(
            &[
                (
                    ".:53 {\n dnstap\n}",
                    "/tmp/Corefile:2:2: 'dnstap' takes 1 to 4 arguments",
                ),
                (
                    ".:53 {\n dnstap /s half\n}",
                    "/tmp/Corefile:2:12: dnstap: 'half' is not 'full'",
                ),
                (
                    ".:53 {\n dnstap tcp://host\n}",
                    "/tmp/Corefile:2:9: dnstap: 'tcp://host' is not",
                ),
                (
                    ".:53 {\n dnstap tls://h:0\n}",
                    "/tmp/Corefile:2:9: dnstap: 'tls://h:0' is not",
                ),
                (
                    ".:53 {\n dnstap udp://h:1\n}",
                    "/tmp/Corefile:2:9: dnstap: unknown socket scheme 'udp'",
                ),
                (
                    ".:53 {\n dnstap /s full 0\n}",
                    "/tmp/Corefile:2:17: dnstap: WRITEBUFFER (MiB) '0'",
                ),
                (".:53 {\n dnstap /s full 1 4097\n}", "/tmp/Corefile:2:19: dnstap: QUEUE"),
                (".:53 {\n dnstap listen\n}", "/tmp/Corefile:2:2: dnstap: 'listen' needs a SOCKET"),
                (
                    ".:53 {\n dnstap listen tls://127.0.0.1:6000\n}",
                    "/tmp/Corefile:2:16: dnstap: listening on tls://127.0.0.1:6000 needs 'tls CERT KEY [CA]'",
                ),
                (
                    ".:53 {\n dnstap tls://127.0.0.1:6000 {\n tls /c /k\n }\n}",
                    "/tmp/Corefile:3:2: dnstap: 'tls CERT KEY [CA]' is an option of 'dnstap listen tls://HOST:PORT' only",
                ),
                (
                    ".:53 {\n dnstap listen tls://127.0.0.1:6000 {\n tls /nonexistent/c.pem /nonexistent/k.pem\n }\n}",
                    "/tmp/Corefile:3:2: dnstap: tls: /nonexistent/c.pem",
                ),
                (
                    ".:53 {\n dnstap /s {\n identity\n }\n}",
                    "/tmp/Corefile:3:2: 'identity' takes exactly 1",
                ),
                (
                    ".:53 {\n dnstap /s {\n colour red\n }\n}",
                    "/tmp/Corefile:3:2: dnstap: unknown option 'colour'",
                ),
            ],
            load,
        );
    }
}
