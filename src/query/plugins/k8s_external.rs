//! `k8s_external`: Services' outside addresses under other zones, from the
//! block's cluster store. A decision table on the name relative to the zone:
//!
//! ```text
//! <zone>                        SOA; NS ns1.<apex>.<zone> (+ its addresses); else NODATA
//! <apex>.<zone>                 NODATA
//! ns1.<apex>.<zone>             A/AAAA: kube-system/kube-dns's external IPs, else its cluster IPs
//! other names under <apex>      NXDOMAIN
//! <ns>                          NODATA if the namespace exists, else NXDOMAIN
//! <svc>.<ns>                    A/AAAA: externalIPs and load-balancer ingress IPs; an ingress
//!                               hostname is a CNAME (only when the Service has no IP);
//!                               SRV: one per port, target <svc>.<ns>.<zone> with glue
//! <host>.<svc>.<ns>             with `headless`: that endpoint of a headless Service
//! _<port>._<proto>.<svc>.<ns>   SRV of that named port
//! <reverse IP> (reverse zones)  PTR <svc>.<ns>.<first forward zone> for an external IP
//! anything else                 NXDOMAIN
//! ```
//!
//! With `headless`, a headless Service without external addresses answers
//! its ready endpoints instead. Negative answers carry the zone's SOA
//! (`ns1.<apex>.<zone> hostmaster.<apex>.<zone>`); an NXDOMAIN covered by
//! `fallthrough` goes on to the next plugin. An ingress hostname's CNAME is
//! followed ([`chase`]): here when the block knows the target, else by
//! forwarding it (the answer comes back under the CNAME, as autopath's do).
//!
//! In the chain it runs before the cluster, after the block's other
//! plugins there ([`Stage::BeforeCluster`]); its answers change with the
//! cluster store ([`Answering::store_zones`]), and its forward zones go out
//! by AXFR ([`walk`]). It needs the block's `kubernetes` (its store).
mod answer;
pub mod setup;
mod walk;

use std::sync::Arc;

use hickory_proto::op::Query;
use hickory_proto::rr::Name;

use crate::corefile::problem::ConfigError;
use crate::corefile::words::Block;
use crate::metrics::Plugin;
use crate::query::plugins::chain::{Answering, BuildContext, CheckContext, Client, Setup, Stage};
use crate::query::plugins::cluster::reverse::is_reverse;
use crate::query::plugins::verdict::Verdict;
use crate::query::plugins::zone_source::ZoneSource;
use crate::query::reply::Answer;
use crate::store::Store;
use answer::K8sExternal;
use setup::K8sExternalConfig;
use walk::ExternalSource;

/// The plugin in a block's chain: its lookup and the block's cluster store.
struct External {
    ext: Arc<K8sExternal>,
    /// `None` only where no block is built (the block's check needs
    /// `kubernetes`): then it passes every question on.
    store: Option<Arc<Store>>,
}

impl Setup for K8sExternalConfig {
    fn name(&self) -> &'static str {
        "k8s_external"
    }

    fn build(&self, server: &str) -> Box<dyn Answering> {
        self.build_in(&BuildContext::of(server))
    }

    fn build_in(&self, ctx: &BuildContext<'_>) -> Box<dyn Answering> {
        Box::new(External {
            ext: Arc::new(K8sExternal::new(Arc::new(self.clone()))),
            store: ctx.store.cloned(),
        })
    }

    fn print(&self, b: &mut Block) {
        setup::print(b, self);
    }

    fn check(&self, block: &CheckContext<'_>, errors: &mut Vec<ConfigError>) {
        if block.kubernetes.is_none() {
            errors.push(ConfigError::new(
                &self.pos,
                "k8s_external: needs a kubernetes directive in this server block (it serves that plugin's Services)",
            ));
        }
    }

    /// Its forward zones (CoreDNS's k8s_external `Transfer`).
    fn transferred(&self) -> Vec<&Name> {
        self.zones.iter().filter(|z| !is_reverse(z)).collect()
    }
}

impl Answering for External {
    fn stage(&self) -> Stage {
        Stage::BeforeCluster
    }

    fn plugin(&self) -> Plugin {
        Plugin::K8sExternal
    }

    fn answer(&self, query: &Query, _: &Client, out: &mut Answer) -> Verdict {
        let Some(store) = &self.store else {
            return Verdict::Next;
        };
        let verdict = self.ext.answer(query.name(), query.query_type(), store, out);
        if verdict != Verdict::Next {
            out.tags.memoizable = true; // until the store changes
        }
        verdict
    }

    fn store_zones(&self) -> Vec<Name> {
        self.ext.cfg.zones.clone()
    }

    fn zone_sources(&self) -> Vec<Arc<dyn ZoneSource>> {
        let Some(store) = &self.store else {
            return Vec::new();
        };
        let zones = self.ext.cfg.transferred().into_iter().cloned();
        zones
            .map(|zone| {
                let source = ExternalSource {
                    zone,
                    ext: self.ext.clone(),
                    store: store.clone(),
                };
                Arc::new(source) as Arc<dyn ZoneSource>
            })
            .collect()
    }
}

#[cfg(test)]
mod tests;
