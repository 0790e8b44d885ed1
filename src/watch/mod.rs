//! The watch path: cluster objects in, snapshots out. It never sees a
//! query; it only publishes to the [`Store`].
//!
//! Today's source is `snapshot FILE` ([`snapshot`]); objects are turned
//! into compact records on arrival by [`convert`].

pub mod convert;
pub mod dump;
pub mod snapshot;

use std::sync::Arc;
use std::time::Duration;

use crate::config::{KubernetesConfig, Source};
use crate::store::Store;

/// How often a snapshot file is checked for changes.
pub const SNAPSHOT_POLL: Duration = Duration::from_secs(1);

/// Starts the source of one `kubernetes` directive on the current runtime.
pub fn start(cfg: Arc<KubernetesConfig>, store: Arc<Store>) -> tokio::task::JoinHandle<()> {
    match &cfg.source {
        Source::Snapshot(path) => tokio::spawn(snapshot::run(path.clone(), cfg.clone(), store, SNAPSHOT_POLL)),
        Source::Api { .. } => tokio::spawn(async {
            // Rejected by config validation; kept total so a store never hangs unnoticed.
            tracing::error!(target: "kubernetes", "the API source is not implemented; the store stays unsynced");
        }),
    }
}
