//! What `clusterdns check` prints: the effective configuration, in Corefile
//! syntax, so an operator can diff it against the Corefile they wrote.
//!
//! Every server block is printed with every directive it holds, in the
//! order the plugins run ([`ORDER`], CoreDNS's `plugin.cfg`), and every
//! option of each directive with its value, defaults written out. The
//! process-wide directives (`reload`, `health`, `ready`, `prometheus`,
//! `nodelocal`, `limits { in_flight }`) are printed in the first block. One
//! function per directive; the printout loads again to the same values.

use std::fmt::{self, Display, Write as _};
use std::time::Duration;

use hickory_proto::rr::{Name, RecordType};

use super::acl::{AclAction, AclRule};
use super::hosts::{HostsConfig, LoadbalanceConfig};
use super::local::{FileConfig, LogConfig, TcpLimits};
use super::{Config, Server};
use rules::{rewrite, template};
use sources::{cache, forward, kubernetes};

mod rules;
mod sources;

/// The order the plugins run in, as CoreDNS's `plugin.cfg` lists them
/// (clusterdns's own `limits` and `nodelocal` beside `timeouts` and `bind`).
pub const ORDER: &[&str] = &[
    "timeouts",
    "limits",
    "reload",
    "bufsize",
    "bind",
    "nodelocal",
    "ready",
    "health",
    "prometheus",
    "errors",
    "log",
    "dnstap",
    "local",
    "dns64",
    "any",
    "chaos",
    "loadbalance",
    "rewrite",
    "autopath",
    "acl",
    "cache",
    "template",
    "transfer",
    "hosts",
    "k8s_external",
    "kubernetes",
    "file",
    "loop",
    "forward",
];

/// Lines of one server block, indented by depth.
pub(super) struct Block(String);

impl Block {
    pub(super) fn line(&mut self, depth: usize, text: impl Display) {
        let _ = writeln!(self.0, "{:w$}{text}", "", w = 4 * depth);
    }

    /// `name args {` + `options` + `}`, or `name args` when there are none.
    pub(super) fn directive(&mut self, head: String, options: &[String]) {
        if options.is_empty() {
            self.line(1, head);
            return;
        }
        self.line(1, format_args!("{head} {{"));
        for o in options {
            self.line(2, o);
        }
        self.line(1, "}");
    }
}

/// A duration as Go writes it in a Corefile (`500ms`, `30s`, `5m`, `1h`).
pub fn duration(d: Duration) -> String {
    let ms = d.as_millis();
    match d.as_secs() {
        _ if !d.subsec_nanos().is_multiple_of(1_000_000) => format!("{}us", d.as_micros()),
        _ if !ms.is_multiple_of(1000) => format!("{ms}ms"),
        0 => "0s".into(),
        s if s % 3600 == 0 => format!("{}h", s / 3600),
        s if s % 60 == 0 => format!("{}m", s / 60),
        s => format!("{s}s"),
    }
}

pub(super) fn names(zones: &[Name]) -> String {
    zones.iter().map(ToString::to_string).collect::<Vec<_>>().join(" ")
}

/// `word ARGS...` with a space only when there are arguments.
pub(super) fn with(word: &str, args: &str) -> String {
    if args.is_empty() {
        word.to_string()
    } else {
        format!("{word} {args}")
    }
}

fn on_off(on: bool) -> &'static str {
    if on {
        "on"
    } else {
        "off"
    }
}

impl Display for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "# effective configuration of {}", self.path.display())?;
        writeln!(
            f,
            "# directives in the order their plugins run; options at their defaults written out"
        )?;
        for (i, s) in self.servers.iter().enumerate() {
            let keys: Vec<String> = s.zones.iter().map(|z| format!("{z}:{}", s.port)).collect();
            writeln!(f, "{} {{", keys.join(" "))?;
            let mut b = Block(String::new());
            for name in ORDER {
                server_directive(&mut b, name, s, (i == 0).then_some(self));
            }
            f.write_str(&b.0)?;
            writeln!(f, "}}")?;
        }
        Ok(())
    }
}

/// Prints directive `name` of server `s` if it holds it; `global` is the
/// configuration when `s` is the block that carries the process-wide ones.
fn server_directive(b: &mut Block, name: &str, s: &Server, global: Option<&Config>) {
    match name {
        "timeouts" => timeouts(b, &s.tcp),
        "limits" => limits(b, &s.tcp, global),
        "reload" => {
            if let Some((interval, jitter)) = global.and_then(|g| g.reload) {
                b.line(1, format_args!("reload {} {}", duration(interval), duration(jitter)));
            }
        }
        "bufsize" => s
            .bufsize
            .into_iter()
            .for_each(|n| b.line(1, format_args!("bufsize {n}"))),
        "bind" if !s.bind.is_empty() => {
            let addrs: Vec<String> = s.bind.iter().map(ToString::to_string).collect();
            b.line(1, format_args!("bind {}", addrs.join(" ")));
        }
        "nodelocal" => global.and_then(|g| g.nodelocal.as_ref()).into_iter().for_each(|n| {
            let addrs: Vec<String> = n.addresses.iter().map(ToString::to_string).collect();
            let options = [
                format!("interface {}", n.interface),
                format!("addresses {}", addrs.join(" ")),
                format!("iptables {}", on_off(n.iptables)),
                format!("rules {}", n.rules),
                format!("teardown {}", on_off(n.teardown)),
                format!("check {}", duration(n.check)),
                format!("lockdir {}", n.lockdir.display()),
            ];
            b.directive("nodelocal".into(), &options);
        }),
        "ready" => global
            .and_then(|g| g.ready.map(|a| (a, g.ready_continuously)))
            .into_iter()
            .for_each(|(a, c)| {
                let monitor = if c { "continuously" } else { "until-ready" };
                b.directive(format!("ready {a}"), &[format!("monitor {monitor}")]);
            }),
        "health" => global.and_then(|g| g.health.as_ref()).into_iter().for_each(|h| {
            b.directive(
                format!("health {}", h.addr),
                &[format!("lameduck {}", duration(h.lameduck))],
            );
        }),
        "prometheus" => global
            .and_then(|g| g.prometheus)
            .into_iter()
            .for_each(|a| b.line(1, format_args!("prometheus {a}"))),
        "errors" => s.errors.iter().for_each(|e| {
            b.directive("errors".into(), &crate::config::errors::effective(e, quote, duration));
        }),
        "log" => s.log.iter().for_each(|l| log(b, l)),
        "dnstap" => s.dnstap.iter().for_each(|d| sources::dnstap(b, d)),
        "local" => s.local.into_iter().for_each(|prefix| {
            b.directive("local".into(), &[format!("localhost_prefix {}", on_off(prefix))]);
        }),
        "dns64" => s.dns64.iter().for_each(|d| {
            let mut options = vec![format!("prefix {}/{}", d.prefix, d.length)];
            options.extend(d.translate_all.then(|| "translate_all".to_string()));
            options.extend(d.allow_ipv4.then(|| "allow_ipv4".to_string()));
            b.directive("dns64".into(), &options);
        }),
        "any" if s.any => b.line(1, "any"),
        "chaos" => s.chaos.iter().for_each(|c| {
            let mut words = vec![quote(&c.version)];
            words.extend(c.authors.iter().map(|a| quote(a)));
            b.line(1, format_args!("chaos {}", words.join(" ")));
        }),
        "loadbalance" => s.loadbalance.iter().for_each(|lb| loadbalance(b, lb)),
        "rewrite" => s.rewrites.iter().for_each(|r| rewrite(b, r)),
        "autopath" => s.autopath.iter().for_each(|(a, _)| {
            let from = a
                .resolv
                .as_ref()
                .map_or("@kubernetes".to_string(), |p| p.display().to_string());
            b.line(
                1,
                format_args!(
                    "{}",
                    with("autopath", format!("{} {from}", names(&a.zones)).trim_start())
                ),
            );
        }),
        "acl" => acl(b, &s.acl),
        "cache" => s.cache.iter().for_each(|c| cache(b, c)),
        "template" => s.templates.iter().for_each(|t| template(b, t)),
        "transfer" => s.transfers.iter().for_each(|t| transfer(b, t)),
        "hosts" => s.hosts.iter().for_each(|h| hosts(b, h)),
        "k8s_external" => s.k8s_external.iter().for_each(|e| {
            let mut options = vec![format!("apex {}", e.apex), format!("ttl {}", e.ttl)];
            options.extend(e.headless.then(|| "headless".to_string()));
            options.extend(e.fallthrough.as_ref().map(|z| with("fallthrough", &names(z))));
            b.directive(with("k8s_external", &names(&e.zones)), &options);
        }),
        "kubernetes" => s.kubernetes.iter().for_each(|k| kubernetes(b, k)),
        "file" => s.files.iter().for_each(|z| file(b, z)),
        "loop" => s.loop_detect.into_iter().for_each(|exit| {
            b.directive("loop".into(), &if exit { vec!["exit".to_string()] } else { Vec::new() });
        }),
        "forward" => s.forward.iter().for_each(|fw| forward(b, fw)),
        _ => {}
    }
}

/// A Corefile word: quoted when it holds a space, a quote or nothing.
pub(super) fn quote(text: &str) -> String {
    if text.is_empty() || text.contains([' ', '"', '\t', '{', '}', '#']) {
        format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
    } else {
        text.to_string()
    }
}

fn timeouts(b: &mut Block, t: &TcpLimits) {
    let options = [
        format!("read {}", duration(t.read)),
        format!("write {}", duration(t.write)),
        format!("idle {}", duration(t.idle)),
        format!(
            "maxtcpqueries {}",
            if t.max_queries == 0 { -1 } else { t.max_queries as i64 }
        ),
    ];
    b.directive("timeouts".into(), &options);
}

fn limits(b: &mut Block, t: &TcpLimits, global: Option<&Config>) {
    let mut options = vec![
        format!("connections {}", t.connections),
        format!("pipeline {}", t.pipeline),
    ];
    options.extend(global.map(|g| format!("in_flight {}", g.in_flight)));
    b.directive("limits".into(), &options);
}

fn log(b: &mut Block, l: &LogConfig) {
    let written = crate::config::log::written(l.style.format);
    let format = if written.contains([' ', '"', '\t']) {
        quote(&written)
    } else {
        written
    };
    let s = l.style;
    let classes: Vec<&str> = [(s.success, "success"), (s.denial, "denial"), (s.error, "error")]
        .iter()
        .filter(|(on, _)| *on)
        .map(|(_, c)| *c)
        .collect();
    let classes = if classes.len() == 3 { vec!["all"] } else { classes };
    let head = with("log", format!("{} {format}", names(&l.names)).trim_start());
    b.directive(head, &[format!("class {}", classes.join(" "))]);
}

/// One `acl ZONES { ... }` per rule, in the order they are tried; every
/// policy with its types and nets written out (`*`: all).
fn acl(b: &mut Block, rules: &[AclRule]) {
    for rule in rules {
        let options: Vec<String> = rule
            .policies
            .iter()
            .map(|p| {
                let action = match p.action {
                    AclAction::Allow => "allow",
                    AclAction::Block => "block",
                    AclAction::Filter => "filter",
                    AclAction::Drop => "drop",
                };
                let types = p.types.as_ref().map_or("*".to_string(), |t| {
                    let t: Vec<String> = t.iter().map(|q| RecordType::from(*q).to_string()).collect();
                    t.join(" ")
                });
                let nets: Vec<String> = p.nets.iter().map(|(ip, len)| format!("{ip}/{len}")).collect();
                format!("{action} type {types} net {}", nets.join(" "))
            })
            .collect();
        b.directive(with("acl", &super::spaced(&rule.zones, "")), &options);
    }
}

fn hosts(b: &mut Block, h: &HostsConfig) {
    let file = h.file.as_ref().map_or(String::new(), |p| p.display().to_string());
    let mut options: Vec<String> = h.inline.iter().map(|(ip, n)| format!("{ip} {}", names(n))).collect();
    options.push(format!("ttl {}", h.ttl));
    options.extend(h.no_reverse.then(|| "no_reverse".to_string()));
    options.push(format!("reload {}", duration(h.reload)));
    options.extend(h.fallthrough.as_ref().map(|z| with("fallthrough", &names(z))));
    options.extend(h.fallthrough_unsupported.then(|| "fallthrough_unsupported".to_string()));
    b.directive(with("hosts", format!("{file} {}", names(&h.zones)).trim()), &options);
}

fn transfer(b: &mut Block, t: &crate::config::transfer::TransferConfig) {
    use crate::config::transfer::To;
    let to: Vec<String> =
        t.to.iter()
            .map(|to| match to {
                To::Any => "*".to_string(),
                To::Addr(a) => a.to_string(),
            })
            .collect();
    let mut options = vec![format!("to {}", to.join(" "))];
    options.extend(t.source.map(|s| format!("source {s}")));
    b.directive(with("transfer", &names(&t.zones)), &options);
}

fn loadbalance(b: &mut Block, lb: &LoadbalanceConfig) {
    let prefer: Vec<String> = lb.prefer.iter().map(|n| format!("{}/{}", n.addr, n.len)).collect();
    let options: Vec<String> = (!prefer.is_empty())
        .then(|| format!("prefer {}", prefer.join(" ")))
        .into_iter()
        .collect();
    b.directive("loadbalance round_robin".into(), &options);
}

fn file(b: &mut Block, z: &FileConfig) {
    let head = with(&format!("file {}", z.path.display()), &names(&z.zones));
    b.directive(head, &[format!("reload {}", duration(z.reload))]);
}

#[cfg(test)]
mod tests;
