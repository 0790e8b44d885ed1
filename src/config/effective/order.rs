//! The directives in the order their plugins run, as CoreDNS's `plugin.cfg`
//! lists them (clusterdns's own `limits` and `nodelocal` beside `timeouts`
//! and `bind`), each with the function that prints it; `clusterdns check`
//! prints a server block by walking [`RUN_ORDER`]. It names every directive
//! of `config::directives::DIRECTIVES` once (a test there checks it).

use super::{
    acl, duration, file, hosts, limits, loadbalance, log, names, on_off, quote, rewrite, sources, template, timeouts,
    with, Block,
};
use crate::config::{Config, Server};

/// Prints one directive of server `s` if it holds it; the configuration is
/// given when `s` is the block that carries the process-wide directives.
pub(in crate::config) type Print = fn(&mut Block, &Server, Option<&Config>);

/// Every directive in the order its plugin runs, with its printer.
pub(in crate::config) const RUN_ORDER: &[(&str, Print)] = &[
    ("timeouts", |b, s, _| timeouts(b, &s.tcp)),
    ("limits", |b, s, global| limits(b, &s.tcp, global)),
    ("reload", |b, _, global| {
        if let Some((interval, jitter)) = global.and_then(|g| g.reload) {
            b.line(1, format_args!("reload {} {}", duration(interval), duration(jitter)));
        }
    }),
    ("bufsize", |b, s, _| {
        s.bufsize
            .into_iter()
            .for_each(|n| b.line(1, format_args!("bufsize {n}")));
    }),
    ("bind", |b, s, _| {
        if !s.bind.is_empty() {
            let addrs: Vec<String> = s.bind.iter().map(ToString::to_string).collect();
            b.line(1, format_args!("bind {}", addrs.join(" ")));
        }
    }),
    ("nodelocal", |b, _, global| {
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
    }),
    ("ready", |b, _, global| {
        global
            .and_then(|g| g.ready.map(|a| (a, g.ready_continuously)))
            .into_iter()
            .for_each(|(a, c)| {
                let monitor = if c { "continuously" } else { "until-ready" };
                b.directive(format!("ready {a}"), &[format!("monitor {monitor}")]);
            });
    }),
    ("health", |b, _, global| {
        global.and_then(|g| g.health.as_ref()).into_iter().for_each(|h| {
            b.directive(
                format!("health {}", h.addr),
                &[format!("lameduck {}", duration(h.lameduck))],
            );
        });
    }),
    ("prometheus", |b, _, global| {
        global
            .and_then(|g| g.prometheus)
            .into_iter()
            .for_each(|a| b.line(1, format_args!("prometheus {a}")));
    }),
    ("errors", |b, s, _| {
        s.errors.iter().for_each(|e| {
            b.directive("errors".into(), &crate::config::errors::effective(e, quote, duration));
        });
    }),
    ("log", |b, s, _| s.log.iter().for_each(|l| log(b, l))),
    ("dnstap", |b, s, _| s.dnstap.iter().for_each(|d| sources::dnstap(b, d))),
    ("local", |b, s, _| {
        s.local.into_iter().for_each(|prefix| {
            b.directive("local".into(), &[format!("localhost_prefix {}", on_off(prefix))]);
        });
    }),
    ("dns64", |b, s, _| {
        s.dns64.iter().for_each(|d| {
            let mut options = vec![format!("prefix {}/{}", d.prefix, d.length)];
            options.extend(d.translate_all.then(|| "translate_all".to_string()));
            options.extend(d.allow_ipv4.then(|| "allow_ipv4".to_string()));
            b.directive("dns64".into(), &options);
        });
    }),
    ("any", |b, s, _| {
        if s.any {
            b.line(1, "any");
        }
    }),
    ("chaos", |b, s, _| {
        s.chaos.iter().for_each(|c| {
            let mut words = vec![quote(&c.version)];
            words.extend(c.authors.iter().map(|a| quote(a)));
            b.line(1, format_args!("chaos {}", words.join(" ")));
        });
    }),
    ("loadbalance", |b, s, _| {
        s.loadbalance.iter().for_each(|lb| loadbalance(b, lb))
    }),
    ("rewrite", |b, s, _| s.rewrites.iter().for_each(|r| rewrite(b, r))),
    ("autopath", |b, s, _| {
        s.autopath.iter().for_each(|(a, _)| {
            let from = a
                .resolv
                .as_ref()
                .map_or("@kubernetes".to_string(), |p| p.display().to_string());
            let args = format!("{} {from}", names(&a.zones));
            b.line(1, format_args!("{}", with("autopath", args.trim_start())));
        });
    }),
    ("acl", |b, s, _| acl(b, &s.acl)),
    ("cache", |b, s, _| s.cache.iter().for_each(|c| sources::cache(b, c))),
    ("template", |b, s, _| s.templates.iter().for_each(|t| template(b, t))),
    ("transfer", |b, s, _| {
        s.transfers.iter().for_each(|t| sources::transfer(b, t))
    }),
    ("hosts", |b, s, _| s.hosts.iter().for_each(|h| hosts(b, h))),
    ("k8s_external", |b, s, _| {
        s.k8s_external.iter().for_each(|e| {
            let mut options = vec![format!("apex {}", e.apex), format!("ttl {}", e.ttl)];
            options.extend(e.headless.then(|| "headless".to_string()));
            options.extend(e.fallthrough.as_ref().map(|z| with("fallthrough", &names(z))));
            b.directive(with("k8s_external", &names(&e.zones)), &options);
        });
    }),
    ("kubernetes", |b, s, _| {
        s.kubernetes.iter().for_each(|k| sources::kubernetes(b, k))
    }),
    ("file", |b, s, _| s.files.iter().for_each(|z| file(b, z))),
    ("loop", |b, s, _| {
        s.loop_detect.into_iter().for_each(|exit| {
            b.directive("loop".into(), &if exit { vec!["exit".to_string()] } else { Vec::new() });
        });
    }),
    ("forward", |b, s, _| {
        s.forward.iter().for_each(|fw| sources::forward(b, fw))
    }),
    ("whoami", |b, s, _| {
        if s.whoami {
            b.line(1, "whoami");
        }
    }),
];
