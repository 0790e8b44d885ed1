//! Rows of the directive table ([`super::DIRECTIVES`]) kept in a file of
//! their own, so the table stays within the size limit: one constant per
//! directive, named in the table where its plugin runs.

use std::sync::Arc;

use super::spec::{once, Ctx, Spec, NOT_REPORTED};
use crate::config::effective::print;
use crate::query::plugins::file::{self as zones, line::Line};

/// `header`: flags set or cleared in queries and responses.
pub const HEADER: Spec = Spec {
    name: "header",
    options: true,
    parse: |d, c| crate::query::reply::header::setup::parse(d, c.server.header.get_or_insert_default(), c.errors),
    enabled: |s, _| s.header.is_some(),
    print: |b, s, _| crate::query::reply::header::print::header(b, s.header.as_ref()),
};

/// `dnssec`: answers signed on the fly with the given keys; once per block.
pub const DNSSEC: Spec = Spec {
    name: "dnssec",
    options: true,
    parse: |d, c| {
        once(d, c.server.has("dnssec"), "per server block", c.errors);
        let setup = crate::query::plugins::dnssec::setup::parse(d, &c.server.zones, c.dir, c.errors);
        c.server.plug(setup);
    },
    enabled: |s, _| s.has("dnssec"),
    print: |b, s, _| print::plugin(b, s, "dnssec"),
};

/// `sign`: zone files signed and written for `file` to serve, resigned on schedule.
pub const SIGN: Spec = Spec {
    name: "sign",
    options: true,
    parse: |d, c| {
        let setup = crate::query::plugins::dnssec::sign_setup::parse(d, &c.server.zones, c.dir, c.errors);
        c.server.plug(setup);
    },
    enabled: |s, _| s.has("sign"),
    print: |b, s, _| print::plugin(b, s, "sign"),
};

/// `shed`: CoreDNS's UDP load shedding, which clusterdns's overload policy
/// already does; the block's `coredns_shed_dropped_total` series.
pub const SHED: Spec = Spec {
    name: "shed",
    options: false,
    parse: |d, c| {
        once(d, c.server.shed, "per server block", c.errors);
        c.server.shed |= crate::query::limits::shed::parse(d, c.server.listen.scheme.name(), c.errors);
    },
    enabled: |s, _| s.shed,
    print: |b, s, _| crate::query::limits::shed::print(b, s.shed),
};

/// `dns64`: AAAA synthesized from A records; once per block.
pub const DNS64: Spec = Spec {
    name: "dns64",
    options: true,
    parse: |d, c| {
        once(d, c.server.has("dns64"), "per server block", c.errors);
        let setup = crate::query::plugins::dns64::setup::parse(d, c.errors);
        c.server.plug(std::sync::Arc::new(setup));
    },
    enabled: |s, _| s.has("dns64"),
    print: |b, s, _| print::plugin(b, s, "dns64"),
};

/// `grpc`: CoreDNS's forwarder over gRPC, after `forward`; once per block.
pub const GRPC: Spec = Spec {
    name: "grpc",
    options: true,
    parse: |d, c| {
        once(
            d,
            c.server.forward.iter().any(|f| f.grpc.is_some()),
            "per server block",
            c.errors,
        );
        c.server
            .forward
            .extend(crate::query::forward::grpc_setup::parse(d, c.dir, c.errors))
    },
    enabled: |s, _| s.forward.iter().any(|f| f.grpc.is_some()),
    print: |b, s, _| {
        s.forward
            .iter()
            .for_each(|f| crate::query::forward::grpc_setup::print(b, f))
    },
};

/// `erratic`: A/AAAA for everything, one query in N dropped, delayed, truncated.
pub const ERRATIC: Spec = Spec {
    name: "erratic",
    options: true,
    parse: |d, c| c.server.plug(crate::query::plugins::erratic::setup::parse(d, c.errors)),
    enabled: |s, _| s.has("erratic"),
    print: |b, s, _| print::plugin(b, s, "erratic"),
};

/// `whoami`: the client's address and port, for a name nothing before answers.
pub const WHOAMI: Spec = Spec {
    name: "whoami",
    options: false,
    parse: |d, c| c.server.plug(crate::query::plugins::whoami::parse(d, c.errors)),
    enabled: NOT_REPORTED,
    print: |b, s, _| print::plugin(b, s, "whoami"),
};

/// `etcd`: SkyDNS records mirrored from etcd, after `secondary`.
pub const ETCD: Spec = Spec {
    name: "etcd",
    options: true,
    parse: |d, c| {
        let setup = crate::query::plugins::etcd::setup::parse(d, &c.server.zones, c.dir, c.errors);
        c.server.plug(setup);
    },
    enabled: |s, _| s.has("etcd"),
    print: |b, s, _| print::plugin(b, s, "etcd"),
};

/// `template`: answers rendered from the question, the block's lines one plugin.
pub const TEMPLATE: Spec = Spec {
    name: "template",
    options: true,
    parse: |d, c| {
        let earlier = (&c.server.zones[..], c.server.setup("template"));
        if let Some(templates) = crate::query::plugins::template::setup::parse(d, earlier, c.errors) {
            c.server.plug(templates);
        }
    },
    enabled: |s, _| s.has("template"),
    print: |b, s, _| print::plugin(b, s, "template"),
};

/// `k8s_external`: Services' external addresses under other zones.
pub const K8S_EXTERNAL: Spec = Spec {
    name: "k8s_external",
    options: true,
    parse: |d, c| {
        once(d, c.server.has("k8s_external"), "per server block", c.errors);
        let setup = crate::query::plugins::k8s_external::setup::parse(d, &c.server.zones, c.errors);
        c.server.plug(std::sync::Arc::new(setup));
    },
    enabled: |s, _| s.has("k8s_external"),
    print: |b, s, _| print::plugin(b, s, "k8s_external"),
};

/// The directives whose zones `transfer` sends, in the order its errors
/// name them.
pub const TRANSFERRED: [&str; 5] = ["kubernetes", "k8s_external", "file", "auto", "secondary"];

/// `hosts`: a hosts file and inline entries.
pub const HOSTS: Spec = Spec {
    name: "hosts",
    options: true,
    parse: |d, c| {
        once(d, c.server.has("hosts"), "per server block", c.errors);
        c.server.plug(crate::query::plugins::hosts::setup::parse(
            d,
            &c.server.zones,
            c.dir,
            c.errors,
        ));
    },
    enabled: |s, _| s.has("hosts"),
    print: |b, s, _| print::plugin(b, s, "hosts"),
};

/// `file`, after `kubernetes` as in CoreDNS's `plugin.cfg`: a zone file.
/// The block's `file`, `auto` and `secondary` lines are one plugin (the
/// longest origin answers), each row printing its own lines.
pub const FILE: Spec = Spec {
    name: "file",
    options: true,
    parse: |d, c| {
        let dir = crate::config::root::dir(c.server.root.as_deref(), c.dir);
        let line = crate::query::plugins::file::setup::file(d, &c.server.zones, dir, c.errors);
        zone_line(c, line)
    },
    enabled: |s, _| zones::holds(s.setup("file"), "file"),
    print: |b, s, _| zones::print_lines(b, s.setup("file"), "file"),
};

/// `auto`, after `file` as in CoreDNS's `plugin.cfg`: a directory's zone files.
pub const AUTO: Spec = Spec {
    name: "auto",
    options: true,
    parse: |d, c| {
        let dir = crate::config::root::dir(c.server.root.as_deref(), c.dir);
        let line = crate::query::plugins::auto::setup::parse(d, &c.server.zones, dir, c.errors);
        zone_line(c, Some(line))
    },
    enabled: |s, _| zones::holds(s.setup("file"), "auto"),
    print: |b, s, _| zones::print_lines(b, s.setup("file"), "auto"),
};

/// `secondary`, after `auto` as in CoreDNS's `plugin.cfg`: zones transferred from a primary.
pub const SECONDARY: Spec = Spec {
    name: "secondary",
    options: true,
    parse: |d, c| {
        let line = crate::query::plugins::secondary::setup::parse(d, &c.server.zones, c.errors);
        zone_line(c, Some(line))
    },
    enabled: |s, _| zones::holds(s.setup("file"), "secondary"),
    print: |b, s, _| zones::print_lines(b, s.setup("file"), "secondary"),
};

/// `line` (when it parsed) added to the block's zone plugin.
fn zone_line(c: &mut Ctx<'_>, line: Option<impl Line + 'static>) {
    if let Some(line) = line {
        let setup = zones::with(c.server.setup("file"), Arc::new(line));
        c.server.plug(setup);
    }
}

/// `acl`: who may ask what, the block's lines one guard.
pub const ACL: Spec = Spec {
    name: "acl",
    options: true,
    parse: |d, c| {
        let earlier = (&c.server.zones[..], c.server.setup("acl"));
        c.server
            .plug(crate::query::plugins::acl::setup::parse(d, earlier, c.errors));
    },
    enabled: |s, _| s.has("acl"),
    print: |b, s, _| print::plugin(b, s, "acl"),
};

/// `any`: an ANY question gets RFC 8482's one HINFO record.
pub const ANY: Spec = Spec {
    name: "any",
    options: false,
    parse: |d, c| c.server.plug(crate::query::plugins::any::parse(d, c.errors)),
    enabled: |s, _| s.has("any"),
    print: |b, s, _| print::plugin(b, s, "any"),
};

/// `geoip DBFILE [{ edns-subnet }]`: metadata labels from a MaxMind DB,
/// after `metadata`; one per block.
pub const GEOIP: Spec = Spec {
    name: "geoip",
    options: true,
    parse: |d, c| {
        let dir = crate::config::root::dir(c.server.root.as_deref(), c.dir);
        let earlier = c.server.has("geoip");
        if let Some(setup) = crate::query::plugins::geoip::setup::parse(d, earlier, dir, c.errors) {
            c.server.plug(setup);
        }
    },
    enabled: |s, _| s.has("geoip"),
    print: |b, s, _| print::plugin(b, s, "geoip"),
};

/// `on startup|shutdown|certrenew COMMAND [ARGS...] [&]`: commands at
/// process events, the block's lines one setup.
pub const ON: Spec = Spec {
    name: "on",
    options: false,
    parse: |d, c| {
        if let Some(setup) = crate::query::plugins::on::setup::parse(d, c.server.setup("on"), c.errors) {
            c.server.plug(setup);
        }
    },
    enabled: |s, _| s.has("on"),
    print: |b, s, _| print::plugin(b, s, "on"),
};

/// `trace [zipkin] [ENDPOINT] { ... }`: Zipkin spans of sampled queries,
/// after `debug`; a later line replaces an earlier one.
pub const TRACE: Spec = Spec {
    name: "trace",
    options: true,
    parse: |d, c| {
        if let Some(setup) = crate::query::plugins::trace::setup::parse(d, c.errors) {
            c.server.plug(setup);
        }
    },
    enabled: |s, _| s.has("trace"),
    print: |b, s, _| print::plugin(b, s, "trace"),
};
