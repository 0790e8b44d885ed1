//! In-band health checking as CoreDNS's forward does it. A query that gets
//! no answer from an upstream counts as one failure and, unless
//! `max_fails` is 0, starts a probe of that upstream at once:
//! `health_check_domain IN NS` (RD unless `no_rec`), over TCP with
//! `force_tcp`, repeated every `health_check` interval for as long as it
//! fails. A failed probe counts as a failure too; `max_fails` failures in
//! a row mark the upstream down (skipped while others are up). The first
//! probe answered, whatever its rcode, clears both and ends the probing.
//! One probe loop per upstream at a time.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hickory_proto::op::{Message, MessageType, OpCode, Query};
use hickory_proto::rr::RecordType;

use super::upstream::Upstream;
use crate::query::forward::setup::ForwardConfig;

/// The shortest interval between two probes of one upstream.
const MIN_INTERVAL: Duration = Duration::from_millis(100);

/// Counts one failure of `up` (`why`: the query's error) and starts its
/// probe unless one is running or `max_fails` is 0.
pub(super) fn failed(up: &Arc<Upstream>, cfg: &ForwardConfig, runtime: &tokio::runtime::Handle, why: &str) {
    if cfg.max_fails == 0 {
        up.fails.fetch_add(1, Ordering::Relaxed);
        return;
    }
    if count(up, cfg) {
        tracing::warn!(target: "forward", "upstream {} marked down after {} failures ({why}); probing it every {:?}", up.addr, cfg.max_fails, cfg.health_check);
    }
    if !up.probing.swap(true, Ordering::Relaxed) {
        runtime.spawn(probe(up.clone(), cfg.clone()));
    }
}

/// One more failure of `up`; true when it marked the upstream down.
fn count(up: &Upstream, cfg: &ForwardConfig) -> bool {
    let fails = up.fails.fetch_add(1, Ordering::Relaxed) + 1;
    fails >= cfg.max_fails && !up.down.swap(true, Ordering::Relaxed)
}

/// Probes `up` until it answers, then clears its failures.
async fn probe(up: Arc<Upstream>, cfg: ForwardConfig) {
    let query = Query::query(cfg.health_check_domain.clone(), RecordType::NS);
    let started = Instant::now();
    loop {
        let id = super::outgoing::random_id();
        let mut m = Message::new(id, MessageType::Query, OpCode::Query);
        m.metadata.recursion_desired = cfg.health_check_rd;
        m.add_query(query.clone());
        let Ok(bytes) = m.to_vec() else {
            up.probing.store(false, Ordering::Relaxed);
            return;
        };
        let deadline = tokio::time::Instant::now() + cfg.read_timeout;
        if up
            .exchange(&bytes, id, &query, cfg.force_tcp, deadline, &cfg)
            .await
            .is_ok()
        {
            up.fails.store(0, Ordering::Relaxed);
            up.probing.store(false, Ordering::Relaxed);
            if up.down.swap(false, Ordering::Relaxed) {
                tracing::info!(target: "forward", "upstream {} is up again (down {:.1}s)", up.addr, started.elapsed().as_secs_f64());
            }
            return;
        }
        up.healthcheck_failures.fetch_add(1, Ordering::Relaxed);
        if count(&up, &cfg) {
            tracing::warn!(target: "forward", "upstream {} marked down after {} failed health checks", up.addr, cfg.max_fails);
        }
        tokio::time::sleep(cfg.health_check.max(MIN_INTERVAL)).await;
    }
}
