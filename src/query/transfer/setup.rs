//! `transfer [ZONES...] { to ADDRESS... | *; source ADDRESS }`: zone
//! transfers (AXFR, IXFR answered as AXFR) of the `kubernetes` plugin's
//! zones and of the answering plugins that send theirs to the listed
//! secondaries, and NOTIFY to them when a zone changes (CoreDNS's
//! `transfer` plugin).
//!
//! Without ZONES the block's zones apply. Each zone must cover a forward
//! zone of the block's `kubernetes` directive or a zone of an answering
//! plugin that sends its zones (`Setup::transferred`; checked with the
//! block: [`check`]); the zones transferred are those under it.

use std::net::{IpAddr, SocketAddr};

use hickory_proto::rr::Name;

use crate::corefile::args::zone;
use crate::corefile::blocks::Directive;
use crate::corefile::lexer::{Pos, Word};
use crate::corefile::options::{self, Opt, MANY};
use crate::corefile::problem::ConfigError;
use crate::kubernetes::KubernetesConfig;

/// The port NOTIFY goes to when an address names none.
pub const NOTIFY_PORT: u16 = 53;

/// One `to` address: anyone (`*`), or a secondary (its IP may transfer;
/// NOTIFY goes to IP:PORT).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum To {
    Any,
    Addr(SocketAddr),
}

/// One `transfer` directive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransferConfig {
    /// As written, or the block's zones.
    pub zones: Vec<Name>,
    pub to: Vec<To>,
    /// `source`: the local address NOTIFY is sent from.
    pub source: Option<IpAddr>,
    /// Where the directive is written (for the block-level check).
    pub pos: Pos,
}

impl TransferConfig {
    /// Whether `client` may transfer (`to *`, or its IP listed).
    pub fn allows(&self, client: IpAddr) -> bool {
        let client = canonical(client);
        self.to.iter().any(|t| match t {
            To::Any => true,
            To::Addr(a) => canonical(a.ip()) == client,
        })
    }

    /// The addresses NOTIFY goes to (every `to` but `*`).
    pub fn notify(&self) -> Vec<SocketAddr> {
        self.to
            .iter()
            .filter_map(|t| match t {
                To::Addr(a) => Some(*a),
                To::Any => None,
            })
            .collect()
    }
}

/// An IPv4-mapped IPv6 address as IPv4 (a dual-stack socket's peer).
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// The options of a `transfer` block.
const OPTIONS: &[Opt<TransferConfig>] = &[
    Opt::new("to", (1, MANY), |a, cfg, errors| {
        cfg.to.extend(a.args.iter().filter_map(|w| to(w, errors)))
    }),
    Opt::new("source", (1, 1), |a, cfg, errors| {
        if cfg.source.is_some() {
            errors.push(ConfigError::new(a.pos(), "transfer: source already specified"));
        }
        cfg.source = a.parse::<IpAddr>(0, "an IP address", errors);
    }),
];

/// Parses one `transfer` directive; `block_zones` are the server block's.
pub fn parse(d: &Directive, block_zones: &[Name], errors: &mut Vec<ConfigError>) -> TransferConfig {
    let mut cfg = TransferConfig {
        zones: d.args.iter().filter_map(|w| zone(w, errors)).collect(),
        to: Vec::new(),
        source: None,
        pos: d.name.pos.clone(),
    };
    if d.args.is_empty() {
        cfg.zones = block_zones.to_vec();
    }
    options::read("transfer", &d.options, OPTIONS, &mut cfg, errors);
    if cfg.to.is_empty() && !d.options.iter().any(|l| l.name.text == "to") {
        errors.push(ConfigError::new(&cfg.pos, "transfer: 'to' is required"));
    }
    cfg
}

/// `*`, `IP`, `IP:PORT` or `[IPv6]:PORT`.
fn to(w: &Word, errors: &mut Vec<ConfigError>) -> Option<To> {
    let text = w.text.as_str();
    if text == "*" {
        return Some(To::Any);
    }
    let parsed = text
        .parse::<IpAddr>()
        .map(|ip| SocketAddr::new(ip, NOTIFY_PORT))
        .or_else(|_| text.parse::<SocketAddr>());
    match parsed {
        Ok(addr) => Some(To::Addr(addr)),
        Err(_) => {
            errors.push(ConfigError::new(
                &w.pos,
                format!("transfer: '{text}' is not an IP address, IP:PORT or '*'"),
            ));
            None
        }
    }
}

/// The zones a block's plugins can transfer: the `kubernetes`
/// directive's forward zones, then the answering plugins' (`plugins`,
/// CoreDNS's Transferers in plugin order).
pub fn transferable<'a>(k: Option<&'a KubernetesConfig>, plugins: &[&'a Name]) -> Vec<&'a Name> {
    let forward = |zones: &'a [Name]| zones.iter().filter(|z| !is_reverse(z));
    let cluster = k.into_iter().flat_map(|k| forward(&k.zones));
    cluster.chain(plugins.iter().copied()).collect()
}

/// The zones `cfg` transfers: those of `zones` ([`transferable`]) under
/// one of its zones.
pub fn transferred<'z>(cfg: &TransferConfig, zones: &[&'z Name]) -> Vec<&'z Name> {
    zones
        .iter()
        .copied()
        .filter(|z| cfg.zones.iter().any(|t| t.zone_of(z)))
        .collect()
}

fn is_reverse(zone: &Name) -> bool {
    let arpa = |s: &str| Name::from_ascii(s).is_ok_and(|n| n.zone_of(zone));
    arpa("in-addr.arpa.") || arpa("ip6.arpa.")
}

/// The block's `kubernetes` directive and the zones its answering plugins
/// send.
pub type Sources<'a> = (Option<&'a KubernetesConfig>, &'a [&'a Name]);

/// The block-level rule: each `transfer` zone must hold a zone that the
/// block's `kubernetes` or answering plugins serve (the plugins whose
/// zones clusterdns transfers; `directives`: their names, as the errors
/// list them).
pub fn check(
    transfers: &[TransferConfig],
    (k, plugins): Sources<'_>,
    directives: &[&str],
    errors: &mut Vec<ConfigError>,
) {
    let zones = transferable(k, plugins);
    let served: Vec<String> = zones.iter().map(ToString::to_string).collect();
    let listed = |and: &str| match directives.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} {and} {last}", rest.join(", ")),
        _ => directives.concat(),
    };
    for t in transfers {
        if zones.is_empty() {
            errors.push(ConfigError::new(
                &t.pos,
                format!(
                    "transfer: needs a {} directive in this server block (their zones are the ones transferred)",
                    listed("or")
                ),
            ));
            continue;
        }
        for zone in &t.zones {
            let one = TransferConfig {
                zones: vec![zone.clone()],
                ..t.clone()
            };
            if transferred(&one, &zones).is_empty() {
                errors.push(ConfigError::new(
                    &t.pos,
                    format!(
                        "transfer: no plugin of this block serves zone transfers for '{zone}' (the {} zones: {})",
                        listed("and"),
                        served.join(" ")
                    ),
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::tests::{loaded as load, one_error_each};

    fn transfers(body: &str) -> Result<Vec<TransferConfig>, Vec<String>> {
        let text = format!(
            ".:53 {{\n    kubernetes cluster.local clusterset.local in-addr.arpa {{\n        snapshot x.yaml\n    }}\n    {body}\n}}\n"
        );
        load(&text).map(|c| c.servers[0].transfers.clone())
    }

    #[test]
    fn zones_addresses_and_source() {
        // CoreDNS's setup_test.go TestParse, first case (the scoped address aside).
        let t = transfers(
            "transfer cluster.local clusterset.local {\n        to 1.2.3.4 5.6.7.8:1053 [1::2]:34\n        to *\n        source 2001:db8::53\n    }",
        )
        .expect("valid");
        assert_eq!(t.len(), 1);
        let zones: Vec<String> = t[0].zones.iter().map(ToString::to_string).collect();
        assert_eq!(zones, ["cluster.local.", "clusterset.local."]);
        let notify: Vec<String> = t[0].notify().iter().map(ToString::to_string).collect();
        assert_eq!(notify, ["1.2.3.4:53", "5.6.7.8:1053", "[1::2]:34"]);
        assert!(t[0].to.contains(&To::Any));
        assert_eq!(t[0].source, "2001:db8::53".parse().ok());
        // No zones: the block's ("."), which holds both kubernetes zones.
        let t = transfers("transfer {\n        to 10.0.0.9\n    }").expect("valid");
        assert_eq!(t[0].zones, [Name::root()]);
        assert!(t[0].allows("10.0.0.9".parse().expect("ip")));
        assert!(
            t[0].allows("::ffff:10.0.0.9".parse().expect("ip")),
            "a mapped peer is its IPv4"
        );
        assert!(!t[0].allows("10.0.0.8".parse().expect("ip")));
    }

    #[test]
    fn every_bad_argument_is_reported_with_its_position() {
        let cases: &[(&str, &str)] = &[
            (
                "transfer cluster.local {\n    }",
                "/tmp/Corefile:5:5: transfer: 'to' is required",
            ),
            (
                "transfer {\n        to\n    }",
                "/tmp/Corefile:6:9: 'to' takes at least 1 argument, got 0",
            ),
            (
                "transfer {\n        to example.com 1.2.3.4\n    }",
                "/tmp/Corefile:6:12: transfer: 'example.com' is not an IP address, IP:PORT or '*'",
            ),
            (
                "transfer {\n        to 1.2.3.4\n        source example.org\n    }",
                "/tmp/Corefile:7:16: 'source': 'example.org' is not an IP address",
            ),
            (
                "transfer {\n        to 1.2.3.4\n        source 192.0.2.53\n        source 192.0.2.54\n    }",
                "/tmp/Corefile:8:9: transfer: source already specified",
            ),
            (
                "transfer {\n        to 1.2.3.4\n        invalid option\n    }",
                "/tmp/Corefile:7:9: transfer: unknown option 'invalid'",
            ),
            (
                "transfer example.org {\n        to *\n    }",
                "/tmp/Corefile:5:5: transfer: no plugin of this block serves zone transfers for 'example.org.'",
            ),
            (
                "transfer in-addr.arpa {\n        to *\n    }",
                "/tmp/Corefile:5:5: transfer: no plugin of this block serves zone transfers for 'in-addr.arpa.'",
            ),
            (
                "transfer exa..mple {\n        to *\n    }",
                "/tmp/Corefile:5:14: 'exa..mple' is not a valid zone name",
            ),
        ];
        one_error_each(cases, transfers);
    }

    #[test]
    fn a_file_origin_may_be_transferred() {
        let dir = std::env::temp_dir().join(format!("clusterdns-transfer-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let db = dir.join("db");
        std::fs::write(&db, "example.org. 60 IN SOA ns hm 1 2 3 4 5\n").expect("write zone");
        let text = |zone: &str| {
            format!(
                "example.org:53 {{\n    file {} {{\n    }}\n    transfer {zone} {{\n        to *\n    }}\n}}\n",
                db.display()
            )
        };
        assert!(load(&text("")).is_ok(), "the block's zone is the file's origin");
        let errors = load(&text("example.com")).expect_err("no plugin serves example.com");
        assert!(
            errors[0].contains("no plugin of this block serves zone transfers for 'example.com.'"),
            "{errors:?}"
        );
    }

    #[test]
    fn without_a_kubernetes_or_file_directive_it_is_an_error() {
        let errors = load(".:53 {\n    transfer {\n        to *\n    }\n}\n").expect_err("needs kubernetes");
        assert_eq!(errors.len(), 1, "{errors:?}");
        // The directives as the table lists them, the last after "or".
        let [a, b, c, d, e] = crate::config::directives::TRANSFERRED;
        let expected = format!("/tmp/Corefile:2:5: transfer: needs a {a}, {b}, {c}, {d} or {e} directive");
        assert!(errors[0].starts_with(&expected), "{errors:?}");
    }
}
