//! Printers of the directives whose options are plain settings:
//! `timeouts`, `limits`, `log`, `acl`, `hosts`, `loadbalance`, `file`.

use hickory_proto::rr::RecordType;

use crate::config::server::Config;
use crate::corefile::args::spaced;
use crate::corefile::words::{duration, names, quote, with, Block};
use crate::query::limits::timeouts::TcpLimits;
use crate::query::log::setup::LogConfig;
use crate::query::plugins::file::setup::FileConfig;
use crate::query::plugins::hosts::setup::HostsConfig;
use crate::query::reply::loadbalance::setup::LoadbalanceConfig;
use crate::query::route::acl::setup::{AclAction, AclRule};

pub(super) fn timeouts(b: &mut Block, t: &TcpLimits) {
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

pub(super) fn limits(b: &mut Block, t: &TcpLimits, global: Option<&Config>) {
    let mut options = vec![
        format!("connections {}", t.connections),
        format!("pipeline {}", t.pipeline),
    ];
    options.extend(global.map(|g| format!("in_flight {}", g.in_flight)));
    options.push(format!("client_share {}", t.client_share));
    options.push(format!("limited_clients {}", t.limited_clients));
    b.directive("limits".into(), &options);
}

pub(super) fn log(b: &mut Block, l: &LogConfig) {
    let written = crate::query::log::setup::written(l.style.format);
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
pub(super) fn acl(b: &mut Block, rules: &[AclRule]) {
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
        b.directive(with("acl", &spaced(&rule.zones, "")), &options);
    }
}

pub(super) fn hosts(b: &mut Block, h: &HostsConfig) {
    let file = h.file.as_ref().map_or(String::new(), |p| p.display().to_string());
    let mut options: Vec<String> = h.inline.iter().map(|(ip, n)| format!("{ip} {}", names(n))).collect();
    options.push(format!("ttl {}", h.ttl));
    options.extend(h.no_reverse.then(|| "no_reverse".to_string()));
    options.push(format!("reload {}", duration(h.reload)));
    options.extend(h.fallthrough.as_ref().map(|z| with("fallthrough", &names(z))));
    options.extend(h.fallthrough_unsupported.then(|| "fallthrough_unsupported".to_string()));
    b.directive(with("hosts", format!("{file} {}", names(&h.zones)).trim()), &options);
}

pub(super) fn loadbalance(b: &mut Block, lb: &LoadbalanceConfig) {
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

pub(super) fn file(b: &mut Block, z: &FileConfig) {
    let head = with(&format!("file {}", z.path.display()), &names(&z.zones));
    let mut options = vec![format!("reload {}", duration(z.reload))];
    options.extend(z.reload_by_mtime.then(|| "reload_by_mtime".to_string()));
    options.extend(z.fallthrough.as_ref().map(|f| with("fallthrough", &names(f))));
    b.directive(head, &options);
}
