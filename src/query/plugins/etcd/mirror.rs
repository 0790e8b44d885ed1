//! The prefix held in memory: one `Range` of it, then a `Watch` from the
//! next revision whose events are applied as they come, so a change is
//! served at once. Readers load the current map ([`Mirror::records`]); the
//! keeper alone writes, swapping in a new map after each list or batch
//! of events (a persistent map: a batch costs what it changes).
//!
//! - Until the first list is in, the mirror is not synced: the plugin
//!   answers SERVFAIL, never NXDOMAIN, and `/ready` lists `etcd`.
//! - When etcd cannot be reached, or a stream breaks, the last state is
//!   served on and the keeper connects again after 250 ms, doubling up to
//!   10 s; then it lists afresh (what changed meanwhile is in the list).
//! - When the watch is cancelled because its revision was compacted away,
//!   the prefix is listed again on the same connection.
//! - A key with a lease: the lease's time left is asked (LeaseTimeToLive)
//!   after each list and batch, and again every second while any key has
//!   one, so its records' TTL follows the lease (kept alive or not) within
//!   a second, where CoreDNS asks on every query.
//! - The keeper stops when the block holding the mirror is gone.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;

use super::client::{self, Conn, EtcdError};
use super::service::{Entry, Service};
use super::setup::EtcdConfig;
use super::wire::{
    prefix_end, LeaseTimeToLiveRequest, LeaseTimeToLiveResponse, RangeRequest, RangeResponse, WatchCreateRequest,
    WatchRequest, WatchResponse, DELETE,
};

/// Every key under the prefix and what its value reads as.
pub type Records = imbl::OrdMap<Arc<str>, Arc<Stored>>;

/// When each lease of the keys ends, as last asked.
pub type Leases = HashMap<i64, Instant>;

/// A key's value read as a record, and its lease (0: none).
#[derive(Debug)]
pub struct Stored {
    pub entry: Entry,
    pub lease: i64,
}

/// The first reconnection waits this, doubling ...
const FIRST_RETRY: Duration = Duration::from_millis(250);
/// ... up to this.
const MAX_RETRY: Duration = Duration::from_secs(10);
/// How often an idle watch checks that its block still lives.
const ALIVE_CHECK: Duration = Duration::from_secs(1);

/// The records of one `etcd` directive, shared by its readers.
#[derive(Default)]
pub struct Mirror {
    records: ArcSwap<Records>,
    leases: ArcSwap<Leases>,
    synced: AtomicBool,
}

impl Mirror {
    /// The records now.
    pub fn records(&self) -> arc_swap::Guard<Arc<Records>> {
        self.records.load()
    }

    /// When the keys' leases end.
    pub fn leases(&self) -> arc_swap::Guard<Arc<Leases>> {
        self.leases.load()
    }

    /// Whether the first list is in.
    pub fn synced(&self) -> bool {
        self.synced.load(Ordering::Acquire)
    }

    /// Sets the records (a list, or a batch of events applied).
    pub fn store(&self, records: Records) {
        self.records.store(Arc::new(records));
        self.synced.store(true, Ordering::Release);
    }
}

/// `key`'s value read as a record, with its `lease`.
pub fn entry(key: &[u8], value: &[u8], lease: i64) -> (Arc<str>, Arc<Stored>) {
    let stored = Stored {
        entry: Service::parse(value),
        lease,
    };
    (String::from_utf8_lossy(key).into(), Arc::new(stored))
}

/// Asks when each lease of the mirror's keys ends.
async fn refresh_leases(conn: &mut Conn, mirror: &Mirror) -> Result<(), EtcdError> {
    let ids: BTreeSet<i64> = mirror.records().values().map(|s| s.lease).filter(|l| *l != 0).collect();
    if ids.is_empty() && mirror.leases().is_empty() {
        return Ok(());
    }
    let mut leases = Leases::new();
    for id in ids {
        let req = LeaseTimeToLiveRequest { id };
        let reply: LeaseTimeToLiveResponse = conn.unary("/etcdserverpb.Lease/LeaseTimeToLive", &req).await?;
        if let Ok(secs @ 1..) = u64::try_from(reply.ttl) {
            leases.insert(id, Instant::now() + Duration::from_secs(secs));
        }
    }
    mirror.leases.store(Arc::new(leases));
    Ok(())
}

/// Why a watch ended.
enum Ended {
    /// Its revision was compacted away: list again.
    Compacted,
    /// The block is gone.
    Orphaned,
}

/// Keeps `mirror` for as long as its block holds it.
pub async fn keep(cfg: EtcdConfig, mirror: Weak<Mirror>) {
    let tls = tls_config(&cfg);
    let (mut retry, mut first) = (FIRST_RETRY, 0);
    while mirror.strong_count() > 0 {
        match client::connect(&cfg, tls.as_ref(), first).await {
            Ok((mut conn, at)) => {
                first = at;
                match follow(&cfg, &mut conn, &mirror, &mut retry).await {
                    Ok(()) => return,
                    Err(e) => tracing::warn!(target: "etcd", "{}: {e}: serving the last known records", conn.endpoint),
                }
            }
            Err(e) => tracing::warn!(target: "etcd", "{e}: retrying in {}ms", retry.as_millis()),
        }
        first += 1;
        tokio::time::sleep(retry).await;
        retry = (retry * 2).min(MAX_RETRY);
    }
}

/// The TLS configuration of the endpoints: with `tls`, or for an
/// `https://` endpoint (the system's roots).
fn tls_config(cfg: &EtcdConfig) -> Option<Arc<rustls::ClientConfig>> {
    let https = cfg.endpoints.iter().any(|e| e.starts_with("https://"));
    let files = cfg.tls.clone().or_else(|| https.then(Vec::new))?;
    match crate::tls::client_config(&files, false) {
        Ok(mut c) => {
            c.alpn_protocols = vec![b"h2".to_vec()];
            Some(Arc::new(c))
        }
        Err(e) => {
            tracing::error!(target: "etcd", "tls: {e}");
            None
        }
    }
}

/// Lists the prefix and follows it on `conn` until the block is gone
/// (`Ok`) or the connection fails; lists again after a compaction.
async fn follow(
    cfg: &EtcdConfig,
    conn: &mut Conn,
    mirror: &Weak<Mirror>,
    retry: &mut Duration,
) -> Result<(), EtcdError> {
    let prefix = cfg.prefix().into_bytes();
    loop {
        let (records, revision) = list(conn, &prefix).await?;
        let Some(m) = mirror.upgrade() else { return Ok(()) };
        let count = records.len();
        m.store(records);
        refresh_leases(conn, &m).await?;
        drop(m);
        *retry = FIRST_RETRY;
        tracing::info!(target: "etcd", "{}: {count} keys under {} at revision {revision}", conn.endpoint, cfg.prefix());
        match watch(conn, &prefix, revision + 1, mirror).await? {
            Ended::Orphaned => return Ok(()),
            Ended::Compacted => tracing::info!(target: "etcd", "watch compacted: listing again"),
        }
    }
}

/// Every key under `prefix` and the revision they are at (in pages, as
/// a reply holds at most what etcd's limits allow).
async fn list(conn: &mut Conn, prefix: &[u8]) -> Result<(Records, i64), EtcdError> {
    let end = prefix_end(prefix);
    let (mut records, mut key) = (Records::new(), prefix.to_vec());
    loop {
        let req = RangeRequest {
            key: key.clone(),
            range_end: end.clone(),
        };
        let reply: RangeResponse = conn.unary("/etcdserverpb.KV/Range", &req).await?;
        let revision = reply.header.map_or(0, |h| h.revision);
        for kv in &reply.kvs {
            let (k, v) = entry(&kv.key, &kv.value, kv.lease);
            records.insert(k, v);
        }
        match reply.kvs.last().filter(|_| reply.more) {
            Some(last) => key = [last.key.as_slice(), b"\0"].concat(),
            None => return Ok((records, revision)),
        }
    }
}

/// Applies the changes under `prefix` from `start` until the watch is
/// compacted, the block is gone, or the stream fails.
async fn watch(conn: &mut Conn, prefix: &[u8], start: i64, mirror: &Weak<Mirror>) -> Result<Ended, EtcdError> {
    let create = WatchCreateRequest {
        key: prefix.to_vec(),
        range_end: prefix_end(prefix),
        start_revision: start,
        progress_notify: true,
    };
    let req = WatchRequest {
        create_request: Some(create),
    };
    let mut replies = conn.stream("/etcdserverpb.Watch/Watch", &req).await?;
    loop {
        let reply = tokio::select! {
            r = replies.next::<WatchResponse>() => r?,
            () = tokio::time::sleep(ALIVE_CHECK) => {
                let Some(m) = mirror.upgrade() else { return Ok(Ended::Orphaned) };
                refresh_leases(conn, &m).await?;
                continue;
            }
        };
        let Some(reply) = reply else {
            return Err(EtcdError::Reply("watch stream ended".into()));
        };
        if reply.compact_revision > 0 {
            return Ok(Ended::Compacted);
        }
        if reply.canceled {
            return Err(EtcdError::Reply(format!("watch cancelled: {}", reply.cancel_reason)));
        }
        let Some(m) = mirror.upgrade() else {
            return Ok(Ended::Orphaned);
        };
        if !reply.events.is_empty() {
            m.store(apply(&m.records(), &reply));
            refresh_leases(conn, &m).await?;
        }
    }
}

/// `records` with `reply`'s events applied in order.
pub fn apply(records: &Records, reply: &WatchResponse) -> Records {
    let mut next = records.clone();
    for kv in reply.events.iter().filter_map(|e| Some((e.kind, e.kv.as_ref()?))) {
        match kv {
            (DELETE, kv) => {
                next.remove(String::from_utf8_lossy(&kv.key).as_ref());
            }
            (_, kv) => {
                let (k, v) = entry(&kv.key, &kv.value, kv.lease);
                next.insert(k, v);
            }
        }
    }
    next
}
