//! The `forward` and `cache` metric families of every server block, named
//! by [`crate::metrics::catalogue`] and rendered beside their counters.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use super::block::Forwarding;
use super::cache::{Cache, Stat};
use super::encrypted::Encrypted;
use crate::metrics::catalogue::{self as c, Family};

/// Writes the forward and cache families of `all` blocks.
pub fn render(all: &[Arc<Forwarding>], s: &mut String) {
    forwarding(all, s);
    let caches: Vec<(&str, &Cache)> = all
        .iter()
        .filter_map(|f| Some((f.server.as_str(), f.cache.as_ref()?)))
        .collect();
    caching(&caches, s);
}

/// The block-wide counters, then per upstream its failed health checks,
/// failed TLS handshakes (encrypted upstreams), stray replies and open
/// ports (plain ones) and request durations.
fn forwarding(all: &[Arc<Forwarding>], s: &mut String) {
    grpc(all, s);
    let sum = |f: fn(&Forwarding) -> &AtomicU64| all.iter().map(|x| f(x).load(Relaxed)).sum::<u64>();
    c::FORWARD_MAX_CONCURRENT_REJECTS.single(s, sum(|f| &f.max_concurrent_rejects));
    c::FORWARD_HEALTHCHECK_BROKEN.single(s, sum(|f| &f.healthcheck_broken));
    c::LOOP_DETECTED.single(s, sum(|f| &f.loop_detected));
    let upstreams = || {
        all.iter()
            .flat_map(|f| &f.chain)
            .filter(|fw| fw.cfg.grpc.is_none())
            .flat_map(|fw| &fw.upstreams)
    };
    c::PROXY_HEALTHCHECK_FAILURES.head(s);
    for up in upstreams() {
        let failures = up.healthcheck_failures.load(Relaxed);
        let name = c::PROXY_HEALTHCHECK_FAILURES.name;
        let _ = writeln!(s, "{name}{{proxy_name=\"forward\",to=\"{}\"}} {failures}", up.addr);
    }
    c::FORWARD_TLS_FAILURES.head(s);
    for up in upstreams() {
        if let Some(enc) = &up.encrypted {
            let (name, n) = (c::FORWARD_TLS_FAILURES.name, enc.failures());
            let _ = writeln!(
                s,
                "{name}{{proxy_name=\"forward\",to=\"{}://{}\"}} {n}",
                enc.scheme(),
                up.addr
            );
        }
    }
    c::FORWARD_STRAY_REPLIES.head(s);
    for up in upstreams().filter(|u| u.encrypted.is_none()) {
        for why in super::exchange::Stray::ALL {
            let (name, n) = (c::FORWARD_STRAY_REPLIES.name, up.outgoing.strays(why));
            let reason = why.label();
            let _ = writeln!(
                s,
                "{name}{{proxy_name=\"forward\",to=\"{}\",reason=\"{reason}\"}} {n}",
                up.addr
            );
        }
    }
    c::FORWARD_UDP_PORTS.head(s);
    for up in upstreams().filter(|u| u.encrypted.is_none()) {
        let (name, n) = (c::FORWARD_UDP_PORTS.name, up.outgoing.open());
        let _ = writeln!(s, "{name}{{proxy_name=\"forward\",to=\"{}\"}} {n}", up.addr);
    }
    c::PROXY_DURATION.head(s);
    for up in upstreams() {
        for (slot, rcode) in crate::metrics::RCODE_LABELS.iter().enumerate() {
            let labels = format!("proxy_name=\"forward\",to=\"{}\",rcode=\"{rcode}\"", up.addr);
            up.durations[slot].render(s, c::PROXY_DURATION.name, &labels);
        }
    }
}

/// The `grpc` directive's families, per upstream (`to`: `IP:PORT`).
fn grpc(all: &[Arc<Forwarding>], s: &mut String) {
    let upstreams = || all.iter().flat_map(|f| &f.chain).flat_map(|fw| &fw.upstreams);
    let grpcs = || {
        upstreams().filter_map(|u| match &u.encrypted {
            Some(Encrypted::Grpc(g)) => Some(g),
            _ => None,
        })
    };
    c::GRPC_REQUESTS.head(s);
    for g in grpcs() {
        let n: u64 = g.by_rcode().map(|(_, n)| n).sum();
        let _ = writeln!(s, "{}{{to=\"{}\"}} {n}", c::GRPC_REQUESTS.name, g.to());
    }
    c::GRPC_RESPONSES.head(s);
    for g in grpcs() {
        for (rcode, n) in g.by_rcode().filter(|(_, n)| *n > 0) {
            let _ = writeln!(
                s,
                "{}{{rcode=\"{rcode}\",to=\"{}\"}} {n}",
                c::GRPC_RESPONSES.name,
                g.to()
            );
        }
    }
    c::GRPC_DURATION.head(s);
    for g in grpcs() {
        g.durations
            .render(s, c::GRPC_DURATION.name, &format!("to=\"{}\"", g.to()));
    }
}

/// Every cache's entries, hits and other counters, labelled by server
/// block and zones.
fn caching(caches: &[(&str, &Cache)], s: &mut String) {
    let labels = |server: &str, cache: &Cache| {
        let zones = crate::corefile::args::spaced(&cache.cfg.zones, ".");
        format!("server=\"{server}\",zones=\"{zones}\",view=\"\"")
    };
    c::CACHE_ENTRIES.head(s);
    for (server, cache) in caches {
        let (success, denial) = cache.len();
        for (kind, n) in [("success", success), ("denial", denial)] {
            let name = c::CACHE_ENTRIES.name;
            let _ = writeln!(s, "{name}{{{},type=\"{kind}\"}} {n}", labels(server, cache));
        }
    }
    c::CACHE_HITS.head(s);
    for (server, cache) in caches {
        let stats = &cache.stats;
        for (kind, stat) in [("success", Stat::HitsSuccess), ("denial", Stat::HitsDenial)] {
            let (name, n) = (c::CACHE_HITS.name, stats.get(stat));
            let _ = writeln!(s, "{name}{{{},type=\"{kind}\"}} {n}", labels(server, cache));
        }
    }
    let counters: [(Family, Stat); 5] = [
        (c::CACHE_REQUESTS, Stat::Requests),
        (c::CACHE_MISSES, Stat::Misses),
        (c::CACHE_PREFETCH, Stat::Prefetch),
        (c::CACHE_SERVED_STALE, Stat::ServedStale),
        (c::CACHE_EVICTIONS, Stat::Evictions),
    ];
    for (family, stat) in counters {
        family.head(s);
        for (server, cache) in caches {
            let n = cache.stats.get(stat);
            let _ = writeln!(s, "{}{{{}}} {n}", family.name, labels(server, cache));
        }
    }
}
