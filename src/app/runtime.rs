//! What the running server holds between reloads: the listener groups,
//! the cluster sources kept across reloads, and what a configuration
//! builds before it is switched in; and why starting can fail.

use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use hickory_proto::rr::Name;

use crate::admin::Live;
use crate::config::Config;
use crate::metrics::Metrics;
use crate::query::{Handler, LoopProbe, Router};
use crate::store::Store;
use crate::watch;

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error("cannot listen on {proto} {addr}: {source}")]
    Bind {
        proto: &'static str,
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error(transparent)]
    NodeLocal(#[from] crate::nodelocal::NodeLocalError),
}

/// Listeners are grouped by port, `bind` addresses and transport (the
/// scheme with its `tls` and `https` settings).
pub(super) type GroupKey = (u16, Vec<IpAddr>, crate::config::transport::Listen);

/// A running cluster source, reused by a reload whose `kubernetes` block
/// is unchanged.
pub(super) struct Source {
    pub(super) store: Arc<Store>,
    pub(super) task: tokio::task::JoinHandle<()>,
}

/// One listener group: its handler, its stop switch and threads, and
/// the addresses it is bound to.
pub(super) struct Group {
    pub(super) handler: Arc<Handler>,
    pub(super) stop: Arc<AtomicBool>,
    pub(super) threads: Vec<std::thread::JoinHandle<()>>,
    pub(super) bound: Vec<SocketAddr>,
    /// A second handle on each UDP socket, to take it out of its
    /// `SO_REUSEPORT` group at a hand-over; the TCP accept loops.
    pub(super) udp: Vec<std::net::UdpSocket>,
    pub(super) tcp: Vec<tokio::task::JoinHandle<()>>,
}

/// Everything a configuration runs, built beside the running one.
pub(super) struct Built {
    pub(super) routers: BTreeMap<GroupKey, Router>,
    pub(super) live: Live,
    /// Loop probes to send once listening: (group, probe, zone).
    pub(super) probes: Vec<(GroupKey, Arc<LoopProbe>, Name)>,
}

pub(super) struct Runtime {
    pub(super) metrics: Arc<Metrics>,
    pub(super) sources: HashMap<String, Source>,
    pub(super) groups: BTreeMap<GroupKey, Group>,
    pub(super) epoch: u64,
    pub(super) workers: usize,
    /// `tls { acme }`: one task per configuration the groups hold.
    pub(super) acme: crate::serve::acme::Managers,
}

impl Runtime {
    pub(super) fn new() -> Runtime {
        Runtime {
            metrics: Arc::new(Metrics::default()),
            sources: HashMap::new(),
            groups: BTreeMap::new(),
            epoch: 0,
            workers: default_workers(),
            acme: Default::default(),
        }
    }
}

/// UDP workers per listening address without `multisocket`: one per core
/// (two when the count is unknown).
pub(super) fn default_workers() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}

/// How long listeners wait for the cluster state: the longest
/// `startup_timeout` of the configuration's `kubernetes` blocks.
pub(super) fn startup_wait(config: &Config) -> Duration {
    let blocks = config.servers.iter().filter_map(|s| s.kubernetes.as_ref());
    blocks.map(watch::startup::timeout).max().unwrap_or_default()
}
