//! What `clusterdns check` prints: the effective configuration, in Corefile
//! syntax, so an operator can diff it against the Corefile they wrote.
//!
//! Every server block is printed with every directive it holds, in the
//! order the plugins run ([`RUN_ORDER`], CoreDNS's `plugin.cfg`), and every
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
use super::Config;
pub(in crate::config) use order::RUN_ORDER;
use rules::{rewrite, template};

mod order;
mod rules;
mod sources;

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
            for (_, print) in RUN_ORDER {
                print(&mut b, s, (i == 0).then_some(self));
            }
            f.write_str(&b.0)?;
            writeln!(f, "}}")?;
        }
        Ok(())
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
    options.push(format!("client_share {}", t.client_share));
    options.push(format!("limited_clients {}", t.limited_clients));
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

fn loadbalance(b: &mut Block, lb: &LoadbalanceConfig) {
    if let Some(w) = &lb.weighted {
        let reload = format!("reload {}", duration(w.reload));
        b.directive(format!("loadbalance weighted {}", w.file.display()), &[reload]);
        return;
    }
    let prefer: Vec<String> = lb.prefer.iter().map(|n| format!("{}/{}", n.addr, n.len)).collect();
    let options: Vec<String> = (!prefer.is_empty())
        .then(|| format!("prefer {}", prefer.join(" ")))
        .into_iter()
        .collect();
    b.directive("loadbalance round_robin".into(), &options);
}

fn file(b: &mut Block, z: &FileConfig) {
    let head = with(&format!("file {}", z.path.display()), &names(&z.zones));
    let mut options = vec![format!("reload {}", duration(z.reload))];
    options.extend(z.reload_by_mtime.then(|| "reload_by_mtime".to_string()));
    options.extend(z.fallthrough.as_ref().map(|f| with("fallthrough", &names(f))));
    b.directive(head, &options);
}

#[cfg(test)]
mod tests;
