//! `startup_timeout`: how long a start (or a reload bringing a new
//! `kubernetes` block) waits for the cluster state before it serves.
//!
//! As CoreDNS does, the DNS listeners open once every `kubernetes` source
//! has its first state (a full list from the API, a `snapshot` file read,
//! or a `persist`ed state loaded) or once the longest `startup_timeout` of
//! the configuration has passed (default 5 s; `0s` opens them at once).
//! A reload swaps in the new configuration by the same rule, the old one
//! answering meanwhile. After the wait, a source still without state
//! answers SERVFAIL for its names until it syncs (never NXDOMAIN from an
//! empty cache), and `/ready` fails until then.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::kubernetes::client::DEFAULT_STARTUP_TIMEOUT;
use crate::kubernetes::KubernetesConfig;
use crate::store::Store;

/// How often the stores are looked at while waiting.
const POLL: Duration = Duration::from_millis(10);

/// The wait of one `kubernetes` block.
pub fn timeout(cfg: &KubernetesConfig) -> Duration {
    cfg.client.startup_timeout.unwrap_or(DEFAULT_STARTUP_TIMEOUT)
}

/// Waits until every store of `stores` is synced or `limit` has passed;
/// returns whether they all synced. Logs a wait that ran out.
pub async fn await_sync(stores: &[Arc<Store>], limit: Duration) -> bool {
    let started = Instant::now();
    loop {
        let waiting = stores.iter().filter(|s| !s.synced()).count();
        if waiting == 0 {
            return true;
        }
        if started.elapsed() >= limit {
            tracing::warn!(
                "kubernetes: {waiting} source(s) not synced after startup_timeout {limit:?}: serving; their names are SERVFAIL until synced"
            );
            return false;
        }
        tokio::time::sleep(POLL.min(limit.saturating_sub(started.elapsed()))).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn waits_for_the_stores_at_most_the_limit() {
        let store = Arc::new(Store::default());
        let stores = [store.clone()];
        assert!(!await_sync(&stores, Duration::ZERO).await, "0s: no wait");
        assert!(!await_sync(&stores, Duration::from_millis(100)).await, "never synced");
        let later = store.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            later.publish(crate::store::Writer::new(&[]).snapshot(1));
        });
        assert!(
            await_sync(&stores, Duration::from_secs(60)).await,
            "synced within the limit"
        );
        assert!(await_sync(&[], Duration::ZERO).await, "nothing to wait for");
    }
}
