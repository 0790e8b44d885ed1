//! What one kind's follower is given: what to request, the API client,
//! the channel to the writer, the metrics and the conversion of its kind.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use crate::metrics::Metrics;
use crate::store::Kind;
use crate::watch::feed::Change;
use crate::watch::wire::Api;

/// What to request for one kind.
pub struct Target {
    pub kind: Kind,
    /// The resource for messages (`endpointslices.discovery.k8s.io`).
    pub resource: &'static str,
    /// The collection's URL path (`/api/v1/services`).
    pub path: &'static str,
    pub metadata_only: bool,
    pub labels: Option<String>,
    pub fields: Option<String>,
}

/// Everything one kind's follower needs.
pub struct Follower<F> {
    pub target: Target,
    pub api: Arc<Api>,
    pub tx: mpsc::Sender<Change>,
    pub metrics: Arc<Metrics>,
    pub convert: F,
    /// Server-side length of one watch; silence for this + 5 s is a stall.
    pub watch_timeout: Duration,
    pub resync: Option<Duration>,
}
