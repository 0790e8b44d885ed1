//! The watch path: cluster objects in, snapshots out. It never sees a
//! query; it only publishes to the [`Store`].
//!
//! Two sources: the Kubernetes API ([`api`]: watchers feeding the single
//! writer) and `snapshot FILE` ([`snapshot`]: a kubectl dump, reloaded on
//! change). Both turn objects into compact records on arrival ([`convert`])
//! and apply them through [`crate::store::Writer`].

pub mod api;
pub mod backoff;
mod codec;
pub mod convert;
pub mod dump;
pub mod feed;
pub mod follow;
pub mod lean;
mod page;
pub mod persist;
pub mod report;
pub mod snapshot;
pub mod startup;
pub mod throttle;
mod trim;
pub mod wire;

use std::sync::Arc;
use std::time::Duration;

use crate::kubernetes::{KubernetesConfig, Source};
use crate::metrics::Metrics;
use crate::store::Store;

/// How often a snapshot file is checked for changes.
pub const SNAPSHOT_POLL: Duration = Duration::from_secs(1);

/// Starts the source of one `kubernetes` directive on the current runtime.
pub fn start(cfg: Arc<KubernetesConfig>, store: Arc<Store>, metrics: Arc<Metrics>) -> tokio::task::JoinHandle<()> {
    match &cfg.source {
        Source::Snapshot(path) => tokio::spawn(snapshot::run(path.clone(), cfg.clone(), store, metrics, SNAPSHOT_POLL)),
        Source::Api { .. } => tokio::spawn(api::run(cfg.clone(), store, metrics)),
    }
}
