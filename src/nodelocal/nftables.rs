//! node-cache's conntrack bypass through nftables, in a table of our own
//! (`inet clusterdns-nodelocal`), programmed and read through `nft -j`
//! (JSON in, JSON out; never its text output):
//!
//! ```text
//! chain prerouting  hook prerouting priority raw:  ADDR dport DNS    notrack  (tcp, udp)
//! chain output      hook output     priority raw:  ADDR sport DNS    notrack  (tcp, udp)
//!                                                  ADDR dport DNS    notrack  (tcp, udp)
//!                                                  ADDR d/sport HEALTH notrack (tcp)
//! ```
//!
//! No ACCEPT rules: in nftables an accept ends only its own base chain, so
//! one in our table could not override a drop in another (iptables' filter
//! ACCEPT rules exist to come before kube-proxy's in the same chain). The
//! table is written whole in one `nft -j -f -` transaction (add, flush,
//! chains, rules), so another reader sees the old rules or the new ones,
//! never a half; a check that finds any rule missing rewrites it.
//!
//! `rules auto` picks nftables when kube-proxy runs in its nftables mode on
//! the node, known by its tables (`ip kube-proxy`, `ip6 kube-proxy`), and
//! iptables otherwise (or when `nft` is not installed).

use std::collections::BTreeSet;
use std::net::IpAddr;

use serde_json::{json, Value};

use super::rules::{run_with, RuleError};

/// Our table's name (family `inet`).
pub const TABLE: &str = "clusterdns-nodelocal";

/// One rule, as written and as read back.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Notrack {
    pub chain: &'static str,
    pub proto: &'static str,
    /// Matched as the destination (`daddr`/`dport`), else the source.
    pub to: bool,
    pub ip: IpAddr,
    pub port: u16,
}

/// The rules for `addresses`, DNS on `port`, health on `health`.
pub fn notrack_rules(addresses: &[IpAddr], port: u16, health: u16) -> Vec<Notrack> {
    let mut out = Vec::new();
    for ip in addresses {
        for proto in ["tcp", "udp"] {
            let rule = |chain, to, port| Notrack {
                chain,
                proto,
                to,
                ip: *ip,
                port,
            };
            out.push(rule("prerouting", true, port));
            out.push(rule("output", false, port));
            out.push(rule("output", true, port));
        }
        for to in [true, false] {
            out.push(Notrack {
                chain: "output",
                proto: "tcp",
                to,
                ip: *ip,
                port: health,
            });
        }
    }
    out
}

fn rule_json(r: &Notrack) -> Value {
    let family = if r.ip.is_ipv4() { "ip" } else { "ip6" };
    let (addr, port) = if r.to { ("daddr", "dport") } else { ("saddr", "sport") };
    json!({"rule": {"family": "inet", "table": TABLE, "chain": r.chain, "expr": [
        {"match": {"op": "==", "left": {"payload": {"protocol": family, "field": addr}}, "right": r.ip.to_string()}},
        {"match": {"op": "==", "left": {"payload": {"protocol": r.proto, "field": port}}, "right": r.port}},
        {"notrack": null}
    ]}})
}

/// The whole table as one transaction.
pub fn table_json(rules: &[Notrack]) -> Value {
    let table = json!({"table": {"family": "inet", "name": TABLE}});
    let mut cmds = vec![json!({"add": table}), json!({"flush": table})];
    for (chain, hook) in [("prerouting", "prerouting"), ("output", "output")] {
        cmds.push(
            json!({"add": {"chain": {"family": "inet", "table": TABLE, "name": chain,
            "type": "filter", "hook": hook, "prio": -300, "policy": "accept"}}}),
        );
    }
    cmds.extend(rules.iter().map(|r| json!({"add": rule_json(r)})));
    json!({ "nftables": cmds })
}

/// Reads our rules back from `nft -j list table` output.
pub fn parse_rules(listing: &Value) -> BTreeSet<Notrack> {
    let mut found = BTreeSet::new();
    let items = listing["nftables"].as_array().map(Vec::as_slice).unwrap_or_default();
    for rule in items.iter().filter_map(|i| i.get("rule")) {
        let chain = match rule["chain"].as_str() {
            Some("prerouting") => "prerouting",
            Some("output") => "output",
            _ => continue,
        };
        let exprs = rule["expr"].as_array().map(Vec::as_slice).unwrap_or_default();
        if !exprs.iter().any(|e| e.get("notrack").is_some()) {
            continue;
        }
        let (mut ip, mut port, mut proto, mut to) = (None, None, None, None);
        for m in exprs.iter().filter_map(|e| e.get("match")) {
            let payload = &m["left"]["payload"];
            match (payload["protocol"].as_str(), payload["field"].as_str()) {
                (Some("ip" | "ip6"), Some(f @ ("daddr" | "saddr"))) => {
                    ip = m["right"].as_str().and_then(|s| s.parse::<IpAddr>().ok());
                    to = Some(f == "daddr");
                }
                (Some(p @ ("tcp" | "udp")), Some("dport" | "sport")) => {
                    proto = Some(if p == "tcp" { "tcp" } else { "udp" });
                    port = m["right"].as_u64().and_then(|n| u16::try_from(n).ok());
                }
                _ => {}
            }
        }
        if let (Some(ip), Some(port), Some(proto), Some(to)) = (ip, port, proto, to) {
            found.insert(Notrack {
                chain,
                proto,
                to,
                ip,
                port,
            });
        }
    }
    found
}

/// Runs `nft -j ARGS` (with `input` on stdin); its stdout, or the error.
async fn nft(args: &[&str], input: Option<&[u8]>) -> Result<String, RuleError> {
    let mut all = vec!["-j"];
    all.extend_from_slice(args);
    match run_with("nft", &all, input).await? {
        (0, out, _) => Ok(out),
        (code, _, err) => Err(RuleError {
            command: format!("nft {}", all.join(" ")),
            message: format!("exit {code}: {err}"),
        }),
    }
}

/// Whether kube-proxy runs in its nftables mode here (its tables exist);
/// the error when `nft` cannot be run.
pub async fn kube_proxy_uses_nftables() -> Result<bool, RuleError> {
    let out = nft(&["list", "tables"], None).await?;
    let listing: Value = serde_json::from_str(&out).unwrap_or_default();
    let items = listing["nftables"].as_array().map(Vec::as_slice).unwrap_or_default();
    Ok(items
        .iter()
        .filter_map(|i| i.get("table"))
        .any(|t| t["name"] == "kube-proxy"))
}

/// How many of `rules` are missing from our table (all when it is absent).
pub async fn missing(rules: &[Notrack]) -> Result<usize, RuleError> {
    let out = match nft(&["list", "table", "inet", TABLE], None).await {
        Ok(out) => out,
        Err(e) if e.message.contains("No such file") => return Ok(rules.len()),
        Err(e) => return Err(e),
    };
    let listing: Value = serde_json::from_str(&out).map_err(|e| RuleError {
        command: format!("nft -j list table inet {TABLE}"),
        message: format!("unreadable JSON: {e}"),
    })?;
    let found = parse_rules(&listing);
    Ok(rules.iter().filter(|r| !found.contains(r)).count())
}

/// Writes the whole table when any rule is missing; how many were.
pub async fn ensure(rules: &[Notrack]) -> Result<usize, RuleError> {
    let missing = missing(rules).await?;
    if missing > 0 {
        let text = table_json(rules).to_string();
        nft(&["-f", "-"], Some(text.as_bytes())).await?;
    }
    Ok(missing)
}

/// Deletes our table (absent already: fine).
pub async fn delete() -> Result<(), RuleError> {
    let cmd = json!({"nftables": [{"delete": {"table": {"family": "inet", "name": TABLE}}}]}).to_string();
    match nft(&["-f", "-"], Some(cmd.as_bytes())).await {
        Err(e) if e.message.contains("No such file") => Ok(()),
        other => other.map(|_| ()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eight_rules_per_address_read_back_from_their_own_json() {
        let ip: IpAddr = "169.254.20.10".parse().expect("ip");
        let rules = notrack_rules(&[ip, "fd00::a".parse().expect("ip")], 53, 8080);
        assert_eq!(rules.len(), 16);
        let written = table_json(&rules);
        // What nft lists: the rule objects, as written.
        let listed = json!({"nftables": written["nftables"].as_array().expect("cmds").iter()
            .filter_map(|c| c["add"].get("rule").map(|r| json!({"rule": r}))).collect::<Vec<_>>()});
        let found = parse_rules(&listed);
        assert_eq!(found, rules.iter().cloned().collect());
        let text = written.to_string();
        assert!(text.contains(r#""prio":-300"#), "{text}");
    }
}
