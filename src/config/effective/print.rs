//! How `clusterdns check` prints each directive: one function per
//! directive, named after it, called from its row of the directive table
//! (`config::directives::DIRECTIVES`) in the order the plugins run. The
//! first block also carries the process-wide directives (`global`).

use crate::config::server::{Config, Server};
use crate::corefile::words::{duration, names, on_off, quote, with, Block};

/// Prints one directive of server `s` if it holds it; the configuration is
/// given when `s` is the block that carries the process-wide directives.
pub(crate) type Print = fn(&mut Block, &Server, Option<&Config>);

/// The answering plugin `name` of `s`, printed by its own setup.
pub(crate) fn plugin(b: &mut Block, s: &Server, name: &str) {
    b.0.push_str(&s.printed(name));
}

pub(crate) fn timeouts(b: &mut Block, s: &Server, _: Option<&Config>) {
    crate::query::limits::print::timeouts(b, &s.tcp);
}

pub(crate) fn limits(b: &mut Block, s: &Server, global: Option<&Config>) {
    crate::query::limits::print::limits(b, &s.tcp, global.map(|g| g.in_flight));
}

pub(crate) fn reload(b: &mut Block, _: &Server, global: Option<&Config>) {
    if let Some((interval, jitter)) = global.and_then(|g| g.reload) {
        b.line(1, format_args!("reload {} {}", duration(interval), duration(jitter)));
    }
}

pub(crate) fn bufsize(b: &mut Block, s: &Server, _: Option<&Config>) {
    s.bufsize
        .into_iter()
        .for_each(|n| b.line(1, format_args!("bufsize {n}")));
}

pub(crate) fn bind(b: &mut Block, s: &Server, _: Option<&Config>) {
    if !s.bind.is_empty() {
        let addrs: Vec<String> = s.bind.iter().map(ToString::to_string).collect();
        b.line(1, format_args!("bind {}", addrs.join(" ")));
    }
}

pub(crate) fn nodelocal(b: &mut Block, _: &Server, global: Option<&Config>) {
    global.and_then(|g| g.nodelocal.as_ref()).into_iter().for_each(|n| {
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
    });
}

pub(crate) fn ready(b: &mut Block, _: &Server, global: Option<&Config>) {
    global
        .and_then(|g| g.ready.map(|a| (a, g.ready_continuously)))
        .into_iter()
        .for_each(|(a, c)| {
            let monitor = if c { "continuously" } else { "until-ready" };
            b.directive(format!("ready {a}"), &[format!("monitor {monitor}")]);
        });
}

pub(crate) fn health(b: &mut Block, _: &Server, global: Option<&Config>) {
    global.and_then(|g| g.health.as_ref()).into_iter().for_each(|h| {
        b.directive(
            format!("health {}", h.addr),
            &[format!("lameduck {}", duration(h.lameduck))],
        );
    });
}

pub(crate) fn prometheus(b: &mut Block, _: &Server, global: Option<&Config>) {
    let Some((addr, g)) = global.and_then(|g| g.prometheus.map(|a| (a, g))) else {
        return;
    };
    let options = match &g.prometheus_tls {
        None => Vec::new(),
        Some((_, web)) => {
            let effective = match &web.tls {
                Some(tls) => format!("# https: {tls}"),
                None => "# plain http: the file sets no tls_server_config".into(),
            };
            vec![format!("tls {}", web.file.display()), effective]
        }
    };
    b.directive(format!("prometheus {addr}"), &options);
}

pub(crate) fn errors(b: &mut Block, s: &Server, _: Option<&Config>) {
    s.errors.iter().for_each(|e| {
        b.directive(
            "errors".into(),
            &crate::query::errors::setup::effective(e, quote, duration),
        );
    });
}

pub(crate) fn log(b: &mut Block, s: &Server, _: Option<&Config>) {
    s.log.iter().for_each(|l| crate::query::log::print::log(b, l));
}

pub(crate) fn dnstap(b: &mut Block, s: &Server, _: Option<&Config>) {
    s.dnstap.iter().for_each(|d| crate::dnstap::print::dnstap(b, d));
}

pub(crate) fn loadbalance(b: &mut Block, s: &Server, _: Option<&Config>) {
    s.loadbalance
        .iter()
        .for_each(|lb| crate::query::reply::loadbalance::print::loadbalance(b, lb))
}

pub(crate) fn rewrite(b: &mut Block, s: &Server, _: Option<&Config>) {
    s.rewrites
        .iter()
        .for_each(|r| crate::query::plugins::rewrite::print::rewrite(b, r));
}

pub(crate) fn autopath(b: &mut Block, s: &Server, _: Option<&Config>) {
    s.autopath.iter().for_each(|(a, _)| {
        let from = a
            .resolv
            .as_ref()
            .map_or("@kubernetes".to_string(), |p| p.display().to_string());
        let args = format!("{} {from}", names(&a.zones));
        b.line(1, format_args!("{}", with("autopath", args.trim_start())));
    });
}

pub(crate) fn cache(b: &mut Block, s: &Server, _: Option<&Config>) {
    s.cache
        .iter()
        .for_each(|c| crate::query::forward::cache::print::cache(b, c));
}

pub(crate) fn transfer(b: &mut Block, s: &Server, _: Option<&Config>) {
    s.transfers
        .iter()
        .for_each(|t| crate::query::transfer::print::transfer(b, t))
}

pub(crate) fn kubernetes(b: &mut Block, s: &Server, _: Option<&Config>) {
    s.kubernetes
        .iter()
        .for_each(|k| crate::kubernetes::print::kubernetes(b, k))
}

pub(crate) fn loop_(b: &mut Block, s: &Server, _: Option<&Config>) {
    s.loop_detect.into_iter().for_each(|exit| {
        b.directive("loop".into(), &if exit { vec!["exit".to_string()] } else { Vec::new() });
    });
}

pub(crate) fn forward(b: &mut Block, s: &Server, _: Option<&Config>) {
    s.forward
        .iter()
        .filter(|fw| fw.grpc.is_none())
        .for_each(|fw| crate::query::forward::print::forward(b, fw))
}
