//! The Kubernetes API source: one kube watcher per kind (always with a
//! backoff), converting each object the moment it arrives and sending the
//! compact record to the single writer task, which applies and publishes.
//!
//! ```text
//!  watcher(Namespace, metadata only) ─┐
//!  watcher(Service)                   ├─► mpsc ─► writer task: apply a batch ─► publish
//!  watcher(EndpointSlice)             │           (Init → relist_start, InitDone → relist_done)
//!  watcher(Pod) [pods verified]      ─┘
//! ```
//!
//! Nothing here keeps an API object: no reflector stores. When the API is
//! unreachable the watchers retry with backoff and the store keeps serving
//! its last state; errors are logged at most once per [`LOG_EVERY`] per kind.

use std::fmt::Debug;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::{Stream, StreamExt};
use k8s_openapi::api::core::v1::{Namespace, Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::core::PartialObjectMeta;
use kube::runtime::watcher::{self, Event};
use kube::runtime::{watcher as watch_stream, WatchStreamExt};
use kube::{Api, Client, Resource};
use serde::de::DeserializeOwned;
use tokio::sync::mpsc;

use super::convert::{self, Invalid};
use super::snapshot::unix_now;
use crate::config::{KubernetesConfig, PodMode, Source};
use crate::metrics::Metrics;
use crate::store::{Kind, ObjectKey, Record, Store, Writer};

/// The least time between two logged errors of one kind.
pub const LOG_EVERY: Duration = Duration::from_secs(10);
/// Changes applied before the writer publishes, at most.
const BATCH: usize = 10_000;

/// Why the API client could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("in-cluster configuration: {0}")]
    InCluster(#[from] kube::config::InClusterError),
    #[error("kubeconfig: {0}")]
    Kubeconfig(#[from] kube::config::KubeconfigError),
    #[error("endpoint '{0}' is not a URL")]
    Endpoint(String),
    #[error("client: {0}")]
    Client(#[from] kube::Error),
}

/// One message from a watcher to the writer.
#[derive(Debug)]
enum Change {
    /// An object was added or changed; `None`: the filters now leave it out.
    Upsert(ObjectKey, Option<Record>),
    Delete(ObjectKey),
    RelistStart(Kind),
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
    kinds
}

/// Builds the client the directive asks for: `kubeconfig`, `endpoint`
/// (with `tls`), or the in-cluster service account.
pub async fn client(cfg: &KubernetesConfig) -> Result<Client, ClientError> {
    let Source::Api {
        endpoint,
        kubeconfig,
        tls,
    } = &cfg.source
    else {
        return Err(ClientError::Endpoint("(snapshot source)".into()));
    };
    let mut config = match (kubeconfig, endpoint) {
        (Some((path, context)), _) => {
            let file = kube::config::Kubeconfig::read_from(path)?;
            let options = kube::config::KubeConfigOptions {
                context: context.clone(),
                ..Default::default()
            };
            kube::Config::from_custom_kubeconfig(file, &options).await?
        }
        (None, Some(url)) => kube::Config::new(url.parse().map_err(|_| ClientError::Endpoint(url.clone()))?),
        (None, None) => kube::Config::incluster()?,
    };
    if let Some([cert, key, ca]) = tls {
        config.root_cert_file = Some(ca.clone());
        config.auth_info.client_certificate = Some(cert.display().to_string());
        config.auth_info.client_key = Some(key.display().to_string());
    }
    config.connect_timeout = Some(Duration::from_secs(5));
    Ok(Client::try_from(config)?)
}

/// Runs the API source for one directive until the process exits.
pub async fn run(cfg: Arc<KubernetesConfig>, store: Arc<Store>, metrics: Arc<Metrics>) {
    let client = loop {
        match client(&cfg).await {
            Ok(c) => break c,
            Err(e) => {
                tracing::error!(target: "kubernetes", "cannot build the API client: {e}; retrying in 5s");
                tokio::time::sleep(Duration::from_secs(5)).await;
            }
        }
    };
    let kinds = watched_kinds(&cfg);
    let (tx, rx) = mpsc::channel(4096);
    let feed = |kind: Kind, resource| Feed {
        kind,
        resource,
        tx: tx.clone(),
        metrics: metrics.clone(),
    };
    let timeout = u32::try_from(cfg.watch_timeout.as_secs()).unwrap_or(290);
    let all = || watcher::Config::default().timeout(timeout);
    for kind in &kinds {
        let (c, kind) = (cfg.clone(), *kind);
        match kind {
            Kind::Namespace => {
                let stream = watch_stream(Api::<PartialObjectMeta<Namespace>>::all(client.clone()), all());
                let convert = move |o: &PartialObjectMeta<Namespace>| convert::namespace_meta(&c, &o.metadata);
                tokio::spawn(forward(stream, feed(kind, "namespaces"), convert));
            }
            Kind::Service => {
                let selected = match cfg.labels_text.as_deref() {
                    Some(labels) => all().labels(labels),
                    None => all(),
                };
                let stream = watch_stream(Api::<Service>::all(client.clone()), selected);
                tokio::spawn(forward(stream, feed(kind, "services"), move |o| {
                    convert::service(&c, o)
                }));
            }
            Kind::EndpointSlice => {
                let stream = watch_stream(Api::<EndpointSlice>::all(client.clone()), all());
                let convert = move |o: &EndpointSlice| convert::endpoint_slice(&c, o);
                tokio::spawn(forward(stream, feed(kind, "endpointslices.discovery.k8s.io"), convert));
            }
            Kind::Pod => {
                let running = all().fields("status.phase!=Succeeded,status.phase!=Failed,status.phase!=Unknown");
                let stream = watch_stream(Api::<Pod>::all(client.clone()), running);
                tokio::spawn(forward(stream, feed(kind, "pods"), move |o| convert::pod(&c, o)));
            }
        }
    }
    drop(tx);
    write(rx, Writer::new(&kinds), &store, &metrics).await;
}

/// The single writer: applies every queued change, then publishes once and
/// records what was published.
async fn write(mut rx: mpsc::Receiver<Change>, mut writer: Writer, store: &Store, metrics: &Metrics) {
    while let Some(first) = rx.recv().await {
        let mut next = Some(first);
        let mut applied = 0;
        while let Some(change) = next.take() {
            match change {
                Change::Upsert(_, Some(record)) => writer.apply(record),
                Change::Upsert(key, None) | Change::Delete(key) => writer.delete(&key),
                Change::RelistStart(kind) => writer.relist_start(kind),
                Change::RelistDone(kind) => {
                    writer.relist_done(kind);
                    tracing::info!(target: "kubernetes", "{}: listed", kind.name());
                }
            }
            applied += 1;
            next = if applied < BATCH { rx.try_recv().ok() } else { None };
        }
        let was_synced = store.synced();
        writer.publish(store, unix_now());
        super::record(&mut writer, metrics);
        if !was_synced && store.synced() {
            tracing::info!(target: "kubernetes", "synced: every watched kind listed; serving {} services", store.load().service_count());
        }
    }
}

fn key(kind: Kind, meta: &ObjectMeta) -> ObjectKey {
    let lower = |s: &Option<String>| s.as_deref().unwrap_or_default().to_ascii_lowercase();
    let namespace = if kind == Kind::Namespace {
        String::new()
    } else {
        lower(&meta.namespace)
    };
    ObjectKey {
        kind,
        namespace,
        name: lower(&meta.name),
    }
}

/// Where one watcher's changes go, and what it counts.
struct Feed {
    kind: Kind,
    resource: &'static str,
    tx: mpsc::Sender<Change>,
    metrics: Arc<Metrics>,
}

/// Converts one kind's watch events into changes for the writer.
async fn forward<K, S, F>(stream: S, feed: Feed, convert: F)
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + 'static,
    S: Stream<Item = Result<Event<K>, watcher::Error>> + Send + 'static,
    F: Fn(&K) -> Result<Option<Record>, Invalid> + Send + 'static,
{
    let Feed {
        kind,
        resource,
        tx,
        metrics,
    } = feed;
    let counters = &metrics.watch;
    let at = kind as usize;
    let mut stream = std::pin::pin!(stream.default_backoff());
    let mut log = RateLimited::default();
    while let Some(event) = stream.next().await {
        if event.is_ok() {
            counters.event(at);
        }
        let change = match event {
            Ok(Event::Init) => {
                counters.relists[at].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                Change::RelistStart(kind)
            }
            Ok(Event::InitDone) => Change::RelistDone(kind),
            Ok(Event::Apply(obj) | Event::InitApply(obj)) => match convert(&obj) {
                Ok(record) => Change::Upsert(key(kind, obj.meta()), record),
                Err(bad) => {
                    counters.invalid[at].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    tracing::warn!(target: "kubernetes", "skipped malformed object {bad}");
                    continue;
                }
            },
            Ok(Event::Delete(obj)) => Change::Delete(key(kind, obj.meta())),
            Err(e) => {
                counters.errors[at].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                log.error(&describe(&e, resource));
                continue;
            }
        };
        if tx.send(change).await.is_err() {
            return;
        }
    }
}

/// An operator-facing description of a watch error.
fn describe(e: &watcher::Error, resource: &str) -> String {
    let text = e.to_string();
    let forbidden = text.contains("403") || text.to_ascii_lowercase().contains("forbidden");
    if forbidden {
        format!("watching {resource}: {text}; RBAC must allow the verbs list and watch on {resource} for this service account")
    } else {
        format!("watching {resource}: {text}; retrying with backoff, serving the last known state")
    }
}

/// Logs an error at most once per [`LOG_EVERY`], counting the rest.
#[derive(Default)]
struct RateLimited {
    last: Option<Instant>,
    suppressed: u64,
}

impl RateLimited {
    fn error(&mut self, message: &str) {
        if self.last.is_some_and(|t| t.elapsed() < LOG_EVERY) {
            self.suppressed += 1;
            return;
        }
        let more = std::mem::take(&mut self.suppressed);
        if more > 0 {
            tracing::error!(target: "kubernetes", "{message} ({more} more since the last report)");
        } else {
            tracing::error!(target: "kubernetes", "{message}");
        }
        self.last = Some(Instant::now());
    }
}
