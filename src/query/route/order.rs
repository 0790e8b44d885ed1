//! The block's plugins in CoreDNS's order, for a query the router has
//! taken (block chosen, `rewrite` applied, `acl` passed): `local`, `any`
//! and `chaos` first ([`early`]), then [`Router::through`]: `any`,
//! `loop`'s probe, `template`, the block's own data (`hosts`,
//! `k8s_external`, `file`), `kubernetes`, and `cache` then `forward`.
//! Each step writes its answer into `out` and names its plugin.

use std::net::IpAddr;

use hickory_proto::op::{Query, ResponseCode};
use hickory_proto::rr::{DNSClass, Name, RecordType};

use super::{block, Asker, Block, Onward, Routed, Router};
use crate::metrics::Plugin;
use crate::query::cluster::Outcome;
use crate::query::local::Local;
use crate::query::reply::{self, Answer};
use crate::query::template::Templated;
use crate::query::UNHANDLED;

impl Router {
    /// `query` through `block`'s plugins in order (no autopath, no dns64):
    /// `any`, `loop`'s probe, `template`, the block's own data, `kubernetes`,
    /// then `cache` and `forward`.
    pub(super) fn through<'a>(&'a self, block: &'a Block, query: &Query, asker: Asker, out: &mut Answer) -> Routed<'a> {
        let (qname, qtype) = (query.name(), query.query_type());
        if any(block, query, out) {
            return Routed::Done;
        }
        if let Some(probe) = &block.loop_probe {
            if probe.looped(query) {
                block::loop_detected(block, probe, qname);
            }
        }
        if template(block, query, asker.client, out)
            || data(block, qname, qtype, out)
            || kubernetes(block, qname, qtype, out)
        {
            return Routed::Done;
        }
        forward(block, query, asker, out)
    }
}

/// `local`, `any` and `chaos`, before anything may change the question
/// and before `acl`: `Some` when one of them settled the query.
pub(super) fn early<'a>(block: &Block, query: &Query, out: &mut Answer) -> Option<Routed<'a>> {
    let (qname, qtype, qclass) = (query.name(), query.query_type(), query.query_class());
    if let Some(local) = &block.local {
        if local.answer(qname, qtype, qclass, out) == Local::Answered {
            out.plugin = Plugin::Local;
            return Some(Routed::Done);
        }
    }
    if any(block, query, out) {
        return Some(Routed::Done);
    }
    let chaos = block.chaos.as_ref().filter(|_| qclass != DNSClass::IN)?;
    if chaos.answer(qname, qtype, qclass, out) == Local::Answered {
        out.plugin = Plugin::Chaos;
        return Some(Routed::Done);
    }
    None
}

/// `any`: RFC 8482's minimal answer to an ANY question; true when written.
fn any(block: &Block, query: &Query, out: &mut Answer) -> bool {
    if query.query_type() != RecordType::ANY || !block.any {
        return false;
    }
    out.answers.push(reply::hinfo_rfc8482(query.name()));
    out.memoizable = true;
    true
}

/// `template`: true when it answered (a CNAME to a name outside is chased
/// afterwards).
fn template(block: &Block, query: &Query, client: IpAddr, out: &mut Answer) -> bool {
    let Some(templates) = &block.templates else {
        return false;
    };
    match templates.answer(query, client, out) {
        Templated::Next => return false,
        Templated::Answered => {}
        Templated::Chase(target) => out.outside = Some(target),
    }
    out.plugin = Plugin::Template;
    true
}

/// The block's own data in order: `hosts`, `k8s_external`, `file`; true
/// when one answered.
fn data(block: &Block, qname: &Name, qtype: RecordType, out: &mut Answer) -> bool {
    if let Some(hosts) = &block.hosts {
        if hosts.answer(qname, qtype, out) == Local::Answered {
            out.plugin = Plugin::Hosts;
            return true;
        }
    }
    if let (Some(ext), Some(cluster)) = (&block.k8s_external, &block.cluster) {
        if ext.answer(qname, qtype, &cluster.store, out) == Some(Outcome::Answered) {
            (out.plugin, out.memoizable) = (Plugin::K8sExternal, true);
            return true;
        }
    }
    for file in block.files.iter().filter(|f| f.serves(qname)) {
        if file.answer(qname, qtype, out) == Local::Answered {
            out.plugin = Plugin::File;
            return true;
        }
    }
    false
}

/// `kubernetes`: true when the cluster zone answered (an NXDOMAIN notes
/// which store changes could make the name exist).
fn kubernetes(block: &Block, qname: &Name, qtype: RecordType, out: &mut Answer) -> bool {
    let Some(cluster) = &block.cluster else {
        return false;
    };
    let Some(zone) = cluster.zone_for(qname) else {
        return false;
    };
    if cluster.answer(qname, qtype, zone, out) != Outcome::Answered {
        return false;
    }
    if out.rcode == ResponseCode::NXDomain {
        out.expansion = cluster.expansion(qname, zone, &mut out.deps);
    }
    out.plugin = Plugin::Kubernetes;
    out.memoizable = true;
    true
}

/// `cache` then `forward`, for a name no plugin before answered; REFUSED
/// when the block forwards nothing for it.
fn forward<'a>(block: &'a Block, query: &Query, asker: Asker, out: &mut Answer) -> Routed<'a> {
    let qname = query.name();
    let Some(fwd) = block.forwarding.as_ref().filter(|f| f.handles(qname)) else {
        out.error(UNHANDLED);
        out.memoizable = true;
        return Routed::Done;
    };
    out.clear_records();
    if fwd.cached(query, asker.dnssec_ok, asker.cd, out) {
        out.plugin = Plugin::Cache;
        return Routed::Done;
    }
    Routed::Forward(Onward::to(fwd, block.loadbalance.as_ref()))
}
