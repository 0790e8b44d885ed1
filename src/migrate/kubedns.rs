//! A kube-dns ConfigMap → the Corefile kubeadm writes today, with what the
//! ConfigMap said carried over as kubeadm's own kube-dns translation did
//! (`cmd/kubeadm/app/phases/addons/dns`, up to Kubernetes 1.20):
//!
//! | kube-dns `data`                        | Corefile                                          |
//! |----------------------------------------|---------------------------------------------------|
//! | (none)                                 | `forward . /etc/resolv.conf`, as kube-dns did     |
//! | `upstreamNameservers: ["A", "B"]`      | `forward . A B`                                   |
//! | `stubDomains: {"Z": ["A:P"]}`          | `Z:53 { errors; cache 30; loop; forward . A:P }`, with `max_concurrent 1000` as every forward today |
//! | `federations: {"NAME": "DOMAIN"}`      | removed with a note: no federation plugin since CoreDNS 1.7.0 |
//!
//! A nameserver that is a host name, not an address, is left out with a
//! note (forward takes addresses; kubeadm dropped them too). Values are
//! JSON inside strings, as kube-dns reads them; a YAML map or list is
//! taken as well.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};

use super::configmap::{Entry, KUBE_DNS_KEYS};
use super::doc::{word, Block, Doc, Item, Top};
use crate::corefile::lexer::Pos;
use crate::corefile::problem::ConfigError;

/// What the ConfigMap says, read.
#[derive(Default)]
struct KubeDns {
    stubs: BTreeMap<String, (Vec<String>, Pos)>,
    upstreams: Option<(Vec<String>, Pos)>,
    federations: Option<(BTreeMap<String, String>, Pos)>,
}

/// The Corefile for `entries`, serving `domain` (kube-dns's `--domain`).
pub fn generate(entries: &[Entry], domain: &str, top: &Pos) -> Result<Doc, Vec<ConfigError>> {
    let mut errors = Vec::new();
    let mut k = KubeDns::default();
    for e in entries {
        match e.key.as_str() {
            "stubDomains" => {
                if let Some(map) = decode::<BTreeMap<String, Vec<String>>>(e, &mut errors) {
                    for (zone, servers) in map {
                        if valid_zone(&zone) {
                            k.stubs
                                .insert(zone.trim_end_matches('.').to_string(), (servers, e.pos.clone()));
                        } else {
                            errors.push(ConfigError::new(
                                &e.pos,
                                format!("stubDomains: '{zone}' is not a domain name"),
                            ));
                        }
                    }
                }
            }
            "upstreamNameservers" => k.upstreams = decode(e, &mut errors).map(|v| (v, e.pos.clone())),
            "federations" => k.federations = decode(e, &mut errors).map(|v| (v, e.pos.clone())),
            other => errors.push(ConfigError::new(
                &e.pos,
                format!(
                    "cannot migrate kube-dns key '{other}' (kube-dns reads {})",
                    KUBE_DNS_KEYS.join(", ")
                ),
            )),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let mut dropped = Vec::new();
    let stubs: Vec<Top> = k
        .stubs
        .iter()
        .filter_map(|(zone, (servers, pos))| stub(zone, servers, pos).map_err(|n| dropped.push(n)).ok())
        .map(Top::Block)
        .collect();
    let mut main = main_block(&k, domain, top);
    main.notes.extend(dropped);
    let mut tops = vec![Top::Block(main)];
    tops.extend(stubs);
    Ok(Doc {
        tops,
        comments: BTreeMap::new(),
    })
}

/// A value: JSON in a string (kube-dns's form), or YAML data as is.
fn decode<T: serde::de::DeserializeOwned>(e: &Entry, errors: &mut Vec<ConfigError>) -> Option<T> {
    let result = match &e.value {
        serde_json::Value::String(s) => serde_json::from_str(s).map_err(|err| {
            let (l, c) = (err.line() as u32, err.column() as u32);
            let mut p = e.pos.clone();
            if e.shift.0 > 0 {
                p.line = e.shift.0 + l;
                p.col = e.shift.1 + c;
            }
            let msg = err.to_string();
            let msg = msg
                .rsplit_once(" at line ")
                .map_or(msg.as_str(), |(m, _)| m)
                .to_string();
            ConfigError::new(&p, format!("{}: {msg}", e.key))
        }),
        v => serde_json::from_value(v.clone()).map_err(|err| ConfigError::new(&e.pos, format!("{}: {err}", e.key))),
    };
    result.map_err(|err| errors.push(err)).ok()
}

fn valid_zone(z: &str) -> bool {
    let z = z.trim_end_matches('.');
    !z.is_empty()
        && z.split('.').all(|l| {
            !l.is_empty() && l.len() <= 63 && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        })
}

/// An address forward takes: `IP`, `IP:PORT`, `[IPv6]:PORT`.
fn is_address(s: &str) -> bool {
    s.parse::<IpAddr>().is_ok() || s.parse::<SocketAddr>().is_ok()
}

/// The addresses of `servers`, and a note for each host name left out.
fn addresses(servers: &[String], notes: &mut Vec<String>) -> Vec<String> {
    let (ok, names): (Vec<&String>, Vec<&String>) = servers.iter().partition(|s| is_address(s));
    for n in names {
        notes.push(format!(
            "left out nameserver \"{n}\": forward takes IP addresses, not host names (as kubeadm's translation did)"
        ));
    }
    ok.into_iter().cloned().collect()
}

fn main_block(k: &KubeDns, domain: &str, top: &Pos) -> Block {
    let rev = ["in-addr.arpa", "ip6.arpa"];
    let mut kube = Item::new(top, "kubernetes", &[domain, rev[0], rev[1]]);
    kube.options = Some(vec![
        Item::new(top, "pods", &["insecure"]),
        Item::new(top, "fallthrough", &rev),
        Item::new(top, "ttl", &["30"]),
    ]);
    if let Some((feds, pos)) = &k.federations {
        let list: Vec<String> = feds.iter().map(|(n, d)| format!("{n}: {d}")).collect();
        kube.notes.push(format!(
            "left out federations (line {}) {{{}}}: Kubernetes Federation v1 is retired, CoreDNS 1.7.0 removed \
             its federation plugin and clusterdns has none",
            pos.line,
            list.join(", ")
        ));
    }
    let items = vec![
        Item::new(top, "errors", &[]),
        health(top),
        Item::new(top, "ready", &[]),
        kube,
        Item::new(top, "prometheus", &[":9153"]),
        forward(k, top),
        cache(top, domain),
        Item::new(top, "loop", &[]),
        Item::new(top, "reload", &[]),
        Item::new(top, "loadbalance", &[]),
    ];
    Block {
        keys: vec![word(top, ".:53")],
        items,
        close_line: 0,
        notes: vec![format!(
            "from the kube-dns ConfigMap {}: kubeadm's default Corefile serving {domain} (kube-dns's --domain; \
             another with `clusterdns migrate --domain`)",
            top.file
        )],
    }
}

fn health(top: &Pos) -> Item {
    let mut health = Item::new(top, "health", &[]);
    health.options = Some(vec![Item::new(top, "lameduck", &["5s"])]);
    health
}

fn cache(top: &Pos, domain: &str) -> Item {
    let mut cache = Item::new(top, "cache", &["30"]);
    cache.options = Some(vec![
        Item::new(top, "disable", &["success", domain]),
        Item::new(top, "disable", &["denial", domain]),
    ]);
    cache
}

/// `forward . UPSTREAMS`, from `upstreamNameservers` or the node's resolv.conf.
fn forward(k: &KubeDns, top: &Pos) -> Item {
    let mut notes = Vec::new();
    let upstream = match &k.upstreams {
        Some((servers, pos)) => {
            let addrs = addresses(servers, &mut notes);
            if addrs.is_empty() {
                notes.push(format!(
                    "upstreamNameservers (line {}) names no address: the node's /etc/resolv.conf, as kube-dns did",
                    pos.line
                ));
                vec!["/etc/resolv.conf".to_string()]
            } else {
                notes.push(format!(
                    "upstreamNameservers (line {}): forward . {}",
                    pos.line,
                    addrs.join(" ")
                ));
                addrs
            }
        }
        None => {
            notes.push("no upstreamNameservers: the node's /etc/resolv.conf, as kube-dns did".into());
            vec!["/etc/resolv.conf".to_string()]
        }
    };
    let mut fwd = Item::new(top, "forward", &["."]);
    fwd.args.extend(upstream.iter().map(|u| word(top, u)));
    fwd.options = Some(vec![Item::new(top, "max_concurrent", &["1000"])]);
    fwd.notes = notes;
    fwd
}

/// A stub domain's block, or the note saying why it was left out (it
/// names no address).
fn stub(zone: &str, servers: &[String], pos: &Pos) -> Result<Block, String> {
    let mut notes = vec![format!(
        "stubDomains \"{zone}\" (line {}): a server block of its own, as kubeadm translated stub domains",
        pos.line
    )];
    let addrs = addresses(servers, &mut notes);
    if addrs.is_empty() {
        return Err(format!(
            "left out stubDomains \"{zone}\" (line {}): its nameservers {servers:?} are host names, \
             and forward takes IP addresses",
            pos.line
        ));
    }
    let mut fwd = Item::new(pos, "forward", &["."]);
    fwd.args.extend(addrs.iter().map(|a| word(pos, a)));
    fwd.options = Some(vec![Item::new(pos, "max_concurrent", &["1000"])]);
    Ok(Block {
        keys: vec![word(pos, &format!("{zone}:53"))],
        items: vec![
            Item::new(pos, "errors", &[]),
            Item::new(pos, "cache", &["30"]),
            Item::new(pos, "loop", &[]),
            fwd,
        ],
        close_line: 0,
        notes,
    })
}
