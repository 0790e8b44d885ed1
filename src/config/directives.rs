//! The one table of directives clusterdns knows, in the order their
//! plugins run (as CoreDNS's `plugin.cfg`): for each its name, whether it
//! takes an options block, the parser that reads it into the server block
//! or the process-wide configuration, and the printer `clusterdns check`
//! calls. [`directive`] looks a directive up here, reports an unknown one
//! naming it, and calls its parser; every message that lists the
//! supported directives reads [`DIRECTIVES`].

use crate::config::effective::print;
use crate::config::listeners::{addr_or, bind, health, prometheus_options, prometheus_tls, ready_monitor};
use crate::config::nodelocal;
use crate::corefile::args::Args;
use crate::kubernetes;
use crate::query::forward::cache::setup as cache;
use crate::query::forward::setup as forward;
use crate::query::plugins::chaos::setup as chaos;
use crate::query::proxyproto::setup as proxyproto;
use crate::query::tsig::setup as tsig;

pub use rows::TRANSFERRED;
use spec::{listener, once, NOT_REPORTED};
pub use spec::{Ctx, Parse, Spec, NOT_YET, REFUSED};

mod routing;
mod rows;
mod spec;

/// `https3` and `grpc_server`: `max_streams N max_connections N`.
const STREAMS: Parse = |d, c| super::transport::streams(d, &mut c.server.listen, c.errors);

/// Directives this build implements, in the order their plugins run
/// (CoreDNS's `plugin.cfg`, with clusterdns's own `limits` and `nodelocal`
/// beside `timeouts` and `bind`): `check` prints a block in this order and
/// every message that lists the directives lists them so.
pub const DIRECTIVES: &[Spec] = &[
    Spec {
        name: "root",
        options: false,
        parse: |d, c| c.server.root = super::root::parse(d, c.dir, c.errors).or(c.server.root.take()),
        enabled: NOT_REPORTED,
        print: |b, s, _| super::root::print(b, s.root.as_deref()),
    },
    routing::METADATA,
    rows::GEOIP,
    Spec {
        name: "cancel",
        options: false,
        parse: |d, c| c.server.cancel = crate::query::forward::cancel::parse(d, c.errors).or(c.server.cancel),
        enabled: |s, _| s.cancel.is_some(),
        print: |b, s, _| crate::query::forward::cancel::print(b, s.cancel),
    },
    Spec {
        name: "proxyproto",
        options: true,
        parse: |d, c| proxyproto::once(d, &mut c.server.proxyproto, c.errors),
        enabled: NOT_REPORTED,
        print: |b, s, _| proxyproto::print(b, s.proxyproto.as_ref()),
    },
    Spec {
        name: "tls",
        options: true,
        parse: |d, c| super::transport::tls(d, &mut c.server.listen, (c.dir, c.server.root.as_deref()), c.errors),
        enabled: |s, _| s.listen.tls.is_some(),
        print: super::serving::print_tls,
    },
    listener(
        "https",
        |d, c| super::transport::https(d, &mut c.server.listen, c.errors),
        super::serving::print_https,
    ),
    listener("https3", STREAMS, super::serving::print_https3),
    listener(
        "quic",
        |d, c| super::transport::quic(d, &mut c.server.listen, c.errors),
        super::serving::print_quic,
    ),
    listener("grpc_server", STREAMS, super::serving::print_grpc_server),
    Spec {
        name: "timeouts",
        options: true,
        parse: |d, c| crate::query::limits::timeouts::timeouts(d, &mut c.server.tcp, c.errors),
        enabled: NOT_REPORTED,
        print: print::timeouts,
    },
    Spec {
        name: "limits",
        options: true,
        parse: |d, c| crate::query::limits::limits(d, &mut c.server.tcp, &mut c.config.in_flight, c.errors),
        enabled: NOT_REPORTED,
        print: print::limits,
    },
    Spec {
        name: "multisocket",
        options: false,
        parse: |d, c| c.server.multisocket = super::multisocket::parse(d, c.errors).or(c.server.multisocket),
        enabled: NOT_REPORTED,
        print: |b, s, _| super::multisocket::print(b, s.multisocket),
    },
    Spec {
        name: "reload",
        options: false,
        parse: |d, c| c.config.reload = crate::config::reload::reload(d, c.errors).or(c.config.reload),
        enabled: |_, c| c.reload.is_some(),
        print: print::reload,
    },
    Spec {
        name: "nsid",
        options: false,
        parse: |d, c| {
            once(d, c.server.nsid.is_some(), "per server block", c.errors);
            c.server.nsid = crate::query::reply::nsid::setup::parse(d, c.errors).or(c.server.nsid.take());
        },
        enabled: |s, _| s.nsid.is_some(),
        print: |b, s, _| crate::query::reply::nsid::print::nsid(b, s.nsid.as_deref()),
    },
    Spec {
        name: "bufsize",
        options: false,
        parse: |d, c| c.server.bufsize = crate::config::bufsize::bufsize(d, c.errors).or(c.server.bufsize),
        enabled: |s, _| s.bufsize.is_some(),
        print: print::bufsize,
    },
    Spec {
        name: "bind",
        options: true,
        parse: |d, c| {
            if Args::from(d).count(1, usize::MAX, c.errors) {
                bind(d, &mut c.server.bind, c.errors);
            }
        },
        enabled: NOT_REPORTED,
        print: print::bind,
    },
    Spec {
        name: "debug",
        options: false,
        parse: |d, c| c.server.debug |= super::debug::parse(d, c.errors),
        enabled: NOT_REPORTED,
        print: |b, s, _| super::debug::print(b, s.debug),
    },
    rows::TRACE,
    Spec {
        name: "nodelocal",
        options: true,
        parse: |d, c| {
            if c.config.nodelocal.is_some() {
                once(d, true, "per Corefile", c.errors);
            } else {
                c.config.nodelocal = Some(nodelocal::parse(d, c.server.port, c.errors));
            }
        },
        enabled: NOT_REPORTED,
        print: print::nodelocal,
    },
    Spec {
        name: "ready",
        options: true,
        parse: |d, c| {
            if Args::from(d).count(0, 1, c.errors) {
                c.config.ready = addr_or(d, 8181, c.errors).or(c.config.ready);
                c.config.ready_continuously = ready_monitor(d, c.errors);
            }
        },
        enabled: |_, c| c.ready.is_some(),
        print: print::ready,
    },
    Spec {
        name: "health",
        options: true,
        parse: |d, c| {
            if Args::from(d).count(0, 1, c.errors) {
                c.config.health = health(d, c.errors).or(c.config.health.take());
            }
        },
        enabled: |_, c| c.health.is_some(),
        print: print::health,
    },
    Spec {
        name: "pprof",
        options: true,
        parse: |d, c| c.config.pprof = crate::profile::setup::parse(d, c.config.pprof, c.errors).or(c.config.pprof),
        enabled: |_, c| c.pprof.is_some(),
        print: |b, _, g| {
            if let Some(a) = g.and_then(|g| g.pprof) {
                b.directive(format!("pprof {a}"), &[]);
            }
        },
    },
    rows::SHED,
    Spec {
        name: "prometheus",
        options: true,
        parse: |d, c| {
            let web = prometheus_options(d, c.dir, c.errors);
            if Args::from(d).count(0, 1, c.errors) {
                c.config.prometheus = addr_or(d, 9153, c.errors).or(c.config.prometheus);
            }
            prometheus_tls(web, c.config, c.errors);
        },
        enabled: |_, c| c.prometheus.is_some(),
        print: print::prometheus,
    },
    Spec {
        name: "errors",
        options: true,
        parse: |d, c| {
            once(d, c.server.errors.is_some(), "per server block", c.errors);
            c.server.errors = Some(crate::query::errors::setup::parse(d, c.errors));
        },
        enabled: |s, _| s.errors.is_some(),
        print: print::errors,
    },
    Spec {
        name: "log",
        options: true,
        parse: |d, c| c.server.log = Some(crate::query::log::setup::parse(d, c.errors)),
        enabled: |s, _| s.log.is_some(),
        print: print::log,
    },
    Spec {
        name: "dnstap",
        options: true,
        parse: |d, c| c.server.dnstap.extend(crate::dnstap::setup::parse(d, c.errors)),
        enabled: NOT_REPORTED,
        print: print::dnstap,
    },
    Spec {
        name: "local",
        options: true,
        parse: |d, c| c.server.plug(crate::query::plugins::local::setup::parse(d, c.errors)),
        enabled: |s, _| s.has("local"),
        print: |b, s, _| print::plugin(b, s, "local"),
    },
    rows::DNS64,
    rows::ANY,
    Spec {
        name: "chaos",
        options: false,
        parse: |d, c| c.server.plug(chaos::parse(d)),
        enabled: |s, _| s.has("chaos"),
        print: |b, s, _| print::plugin(b, s, "chaos"),
    },
    Spec {
        name: "loadbalance",
        options: true,
        parse: |d, c| {
            c.server.loadbalance = Some(crate::query::reply::loadbalance::setup::loadbalance(d, c.dir, c.errors))
        },
        enabled: |s, _| s.loadbalance.is_some(),
        print: print::loadbalance,
    },
    Spec {
        name: "tsig",
        options: true,
        parse: |d, c| {
            once(d, c.server.tsig.is_some(), "per server block", c.errors);
            c.server.tsig = Some(tsig::parse(d, &c.server.zones, c.dir, c.errors));
        },
        enabled: |s, _| s.tsig.is_some(),
        print: |b, s, _| s.tsig.iter().for_each(|t| crate::query::tsig::print::tsig(b, t)),
    },
    Spec {
        name: "rewrite",
        options: true,
        parse: |d, c| {
            c.server
                .rewrites
                .extend(crate::query::plugins::rewrite::setup::parse(d, c.errors))
        },
        enabled: |s, _| !s.rewrites.is_empty(),
        print: print::rewrite,
    },
    routing::AUTOPATH,
    rows::ACL,
    Spec {
        name: "cache",
        options: true,
        parse: |d, c| {
            once(d, c.server.cache.is_some(), "per server block", c.errors);
            c.server.cache = cache::parse(d, c.errors);
        },
        enabled: |s, _| s.cache.is_some(),
        print: print::cache,
    },
    rows::HEADER,
    rows::DNSSEC,
    Spec {
        name: "minimal",
        options: false,
        parse: |d, c| c.server.minimal |= crate::query::settle::minimal::parse(d, c.errors),
        enabled: |s, _| s.minimal,
        print: |b, s, _| crate::query::settle::minimal::print(b, s.minimal),
    },
    rows::TEMPLATE,
    Spec {
        name: "transfer",
        options: true,
        parse: |d, c| {
            let t = crate::query::transfer::setup::parse(d, &c.server.zones, c.errors);
            c.server.transfers.push(t);
        },
        enabled: NOT_REPORTED,
        print: print::transfer,
    },
    rows::HOSTS,
    rows::K8S_EXTERNAL,
    Spec {
        name: "kubernetes",
        options: true,
        parse: |d, c| {
            once(d, c.server.kubernetes.is_some(), "per server block", c.errors);
            c.server.kubernetes = kubernetes::parse(d, &c.server.zones, c.dir, c.errors);
        },
        enabled: |s, _| s.kubernetes.is_some(),
        print: print::kubernetes,
    },
    rows::FILE,
    rows::AUTO,
    rows::SECONDARY,
    rows::ETCD,
    Spec {
        name: "loop",
        options: true,
        parse: |d, c| c.server.loop_detect = Some(super::r#loop::loop_exit(d, c.errors)),
        enabled: |s, _| s.loop_detect.is_some(),
        print: print::loop_,
    },
    Spec {
        name: "forward",
        options: true,
        parse: |d, c| c.server.forward.extend(forward::parse(d, c.dir, c.errors)),
        enabled: |s, _| s.forward.iter().any(|f| f.grpc.is_none()),
        print: print::forward,
    },
    rows::GRPC,
    rows::ERRATIC,
    rows::WHOAMI,
    rows::SIGN,
    rows::ON,
    routing::VIEW,
];

/// The directive called `name`, if this build implements it.
pub fn lookup(name: &str) -> Option<&'static Spec> {
    DIRECTIVES.iter().find(|s| s.name == name)
}

#[cfg(test)]
mod tests;
