//! What the API source's followers feed its single writer: the kinds a
//! `kubernetes` directive watches and the one message per change; and
//! what the writer records after each publish. Below both the followers
//! ([`super::follow`]) and the writer ([`super::api`]), and read by
//! [`super::persist`] to restore what the writer will watch.

use crate::kubernetes::{KubernetesConfig, PodMode};
use crate::metrics::Metrics;
use crate::store::{Kind, ObjectKey, Record, Writer};

/// One message from a follower to the writer.
#[derive(Debug)]
pub enum Change {
    /// An object was added or changed.
    Upsert(Record),
    /// An object was deleted, or the filters now leave it out.
    Delete(ObjectKey),
    /// A full list begins; `true`: a `resync`, whose corrections are counted.
    RelistStart(Kind, bool),
    RelistDone(Kind),
}

/// Which kinds a `kubernetes` directive watches.
pub fn watched_kinds(cfg: &KubernetesConfig) -> Vec<Kind> {
    let mut kinds = vec![Kind::Namespace, Kind::Service];
    if !cfg.noendpoints {
        kinds.push(Kind::EndpointSlice);
    }
    if cfg.pods == PodMode::Verified {
        kinds.push(Kind::Pod);
    }
    if !cfg.multicluster.is_empty() {
        kinds.push(Kind::ServiceImport);
    }
    kinds
}

/// The writer of a `kubernetes` directive's API source: its kinds, and
/// under `namespace_labels` a snapshot that serves only the namespaces
/// whose (matching) Namespace object it holds.
pub fn writer(cfg: &KubernetesConfig) -> Writer {
    Writer::new(&watched_kinds(cfg)).selecting_namespaces(cfg.namespace_labels.is_some())
}

/// Updates the object gauges and the programming latency after a publish.
pub fn record(writer: &mut Writer, metrics: &Metrics) {
    for (gauge, count) in metrics.watch.objects.iter().zip(writer.counts()) {
        gauge.store(count as u64, std::sync::atomic::Ordering::Relaxed);
    }
    let now = std::time::SystemTime::now();
    for (kind, at) in writer.take_programmed() {
        let seconds = now.duration_since(at).map_or(0.0, |d| d.as_secs_f64());
        metrics.watch.programming[kind].observe(seconds);
    }
}
