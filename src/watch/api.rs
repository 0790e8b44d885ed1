//! The Kubernetes API source: one follower per kind ([`super::follow`]:
//! list, then watch, resume at once, back off only on repeated failures)
//! converting each object the moment it arrives and sending the compact
//! record to the single writer task, which applies, publishes and (with
//! `persist`) saves the state to disk ([`super::persist`]).
//!
//! ```text
//!  follow(Namespace, metadata only) ─┐   (its labels read only under namespace_labels)
//!  follow(Service)                   ├─► mpsc ─► writer: apply a batch ─► publish ─► persist (coalesced)
//!  follow(EndpointSlice)             │           (RelistStart → relist_start, RelistDone → relist_done)
//!  follow(Pod) [pods verified]      │
//!  follow(ServiceImport) [multicluster] ┘ (a missing CRD: an empty list, retried slowly)
//! ```
//!
//! Nothing here keeps an API object. When the API is unreachable the
//! followers retry with backoff and the store keeps serving its last
//! state (at start, the persisted one); errors are logged at most once per
//! [`super::report::LOG_EVERY`] per kind.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use kube::Client;
use tokio::sync::mpsc;

use super::feed::{watched_kinds, Change};
use super::follow::{self, Follower, Target};
use super::lean;
use super::persist::{self, Saver};
use super::snapshot::unix_now;
use super::wire::Api;
use crate::kubernetes::{KubernetesConfig, Source};
use crate::metrics::Metrics;
use crate::store::{Kind, Store, Writer};

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

/// Builds the client the directive asks for: `kubeconfig`, `endpoint`
/// (with `tls`), or the in-cluster service account. A token file (the
/// service account's, or a kubeconfig's `tokenFile`) is read by
/// [`Api::send`] for each request, and kube's own retries are off: the
/// followers retry, log and count.
pub async fn client(cfg: &KubernetesConfig, metrics: Option<Arc<Metrics>>) -> Result<Api, ClientError> {
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
    config.default_retry = false;
    let token_file = match config.auth_info.token {
        Some(_) => None,
        None => config.auth_info.token_file.take().map(std::path::PathBuf::from),
    };
    Ok(Api {
        client: Client::try_from(config)?,
        token_file,
        throttle: super::throttle::Throttle::new(&cfg.client, metrics),
    })
}

/// Runs the API source for one directive until the process exits.
pub async fn run(cfg: Arc<KubernetesConfig>, store: Arc<Store>, metrics: Arc<Metrics>) {
    let kinds = watched_kinds(&cfg);
    let mut writer = super::feed::writer(&cfg);
    let saver = match &cfg.persist {
        Some(p) => Some(persist::restore(p, &cfg, &mut writer, &store, &metrics).await),
        None => None,
    };
    let api = connect(&cfg, &metrics).await;
    let (tx, rx) = mpsc::channel(4096);
    spawn_followers(&cfg, &api, &tx, &metrics, &kinds);
    drop(tx);
    write(rx, writer, &store, &metrics, saver).await;
}

/// The API client, built again every 5 s until it can be.
async fn connect(cfg: &KubernetesConfig, metrics: &Arc<Metrics>) -> Arc<Api> {
    loop {
        match client(cfg, Some(metrics.clone())).await {
            Ok(c) => return Arc::new(c),
            Err(e) => {
                tracing::error!(target: "kubernetes", "cannot build the API client: {e}; retrying in 5s");
                tokio::time::sleep(Duration::from_secs(5)).await;
            }
        }
    }
}

/// One follower task per watched kind, each with its request and its
/// conversion, all sending to `tx`.
fn spawn_followers(
    cfg: &Arc<KubernetesConfig>,
    api: &Arc<Api>,
    tx: &mpsc::Sender<Change>,
    metrics: &Arc<Metrics>,
    kinds: &[Kind],
) {
    for kind in kinds {
        let c = cfg.clone();
        let target = |resource, path, metadata_only, labels: Option<&String>, fields: Option<&str>| Target {
            kind: *kind,
            resource,
            path,
            metadata_only,
            labels: labels.cloned(),
            fields: fields.map(str::to_string),
        };
        match kind {
            // The labels are read only when namespace_labels selects by them.
            Kind::Namespace if cfg.namespace_labels.is_some() => {
                let t = target("namespaces", "/api/v1/namespaces", true, None, None);
                let convert = move |o: &lean::Namespace<'_>| super::convert::namespace(&c, o);
                let f = follower(cfg, api, tx, metrics, t, convert);
                tokio::spawn(follow::run::<lean::Namespace, _>(f));
            }
            Kind::Namespace => {
                let t = target("namespaces", "/api/v1/namespaces", true, None, None);
                let convert = move |o: &lean::NamespaceName<'_>| super::convert::namespace_meta(&c, &o.metadata);
                let f = follower(cfg, api, tx, metrics, t, convert);
                tokio::spawn(follow::run::<lean::NamespaceName, _>(f));
            }
            Kind::Service => {
                let t = target("services", "/api/v1/services", false, cfg.labels_text.as_ref(), None);
                let convert = move |o: &lean::Service<'_>| super::convert::service(&c, o);
                let f = follower(cfg, api, tx, metrics, t, convert);
                tokio::spawn(follow::run::<lean::Service, _>(f));
            }
            Kind::EndpointSlice => {
                let path = "/apis/discovery.k8s.io/v1/endpointslices";
                let t = target("endpointslices.discovery.k8s.io", path, false, None, None);
                let convert = move |o: &lean::EndpointSlice<'_>| super::convert::endpoint_slice(&c, o);
                let f = follower(cfg, api, tx, metrics, t, convert);
                tokio::spawn(follow::run::<lean::EndpointSlice, _>(f));
            }
            Kind::ServiceImport => {
                let path = "/apis/multicluster.x-k8s.io/v1alpha1/serviceimports";
                let t = target("serviceimports.multicluster.x-k8s.io", path, false, None, None);
                let convert = move |o: &lean::ServiceImport<'_>| super::convert::service_import(&c, o);
                let f = follower(cfg, api, tx, metrics, t, convert);
                tokio::spawn(follow::run::<lean::ServiceImport, _>(f));
            }
            Kind::Pod => {
                let running = "status.phase!=Succeeded,status.phase!=Failed,status.phase!=Unknown";
                let t = target("pods", "/api/v1/pods", false, None, Some(running));
                let convert = move |o: &lean::Pod<'_>| super::convert::pod(&c, o);
                tokio::spawn(follow::run::<lean::Pod, _>(follower(cfg, api, tx, metrics, t, convert)));
            }
        }
    }
}

fn follower<F>(
    cfg: &KubernetesConfig,
    api: &Arc<Api>,
    tx: &mpsc::Sender<Change>,
    metrics: &Arc<Metrics>,
    target: Target,
    convert: F,
) -> Follower<F> {
    Follower {
        target,
        api: api.clone(),
        tx: tx.clone(),
        metrics: metrics.clone(),
        convert,
        watch_timeout: cfg.watch_timeout,
        resync: cfg.resync,
    }
}

/// The single writer: applies every queued change, then publishes once and
/// records what was published; saves the state when the saver says so.
/// Once synced, a completed list hands the memory it freed back to the
/// system ([`super::trim`]).
async fn write(
    mut rx: mpsc::Receiver<Change>,
    mut writer: Writer,
    store: &Store,
    metrics: &Metrics,
    mut saver: Option<Saver>,
) {
    let mut resyncing = [false; Kind::COUNT];
    loop {
        let due = saver.as_ref().and_then(Saver::due);
        let first = match due {
            Some(at) => tokio::select! {
                change = rx.recv() => change,
                () = tokio::time::sleep_until(at.into()) => {
                    if let Some(s) = saver.as_mut() {
                        s.save(&writer);
                    }
                    continue;
                }
            },
            None => rx.recv().await,
        };
        let Some(first) = first else { return };
        let mut next = Some(first);
        let (mut applied, mut listed) = (0, false);
        while let Some(change) = next.take() {
            listed |= apply(&mut writer, change, &mut resyncing, metrics);
            applied += 1;
            next = if applied < BATCH { rx.try_recv().ok() } else { None };
        }
        let was_synced = store.synced();
        let published = writer.publish(store, unix_now());
        super::feed::record(&mut writer, metrics);
        if !was_synced && store.synced() {
            tracing::info!(target: "kubernetes", "synced: every watched kind listed; serving {} services", store.load().service_count());
        }
        if listed && store.synced() {
            super::trim::after("a list");
        }
        if published && writer.confirmed() {
            if metrics.watch.unconfirmed_written_ms.swap(0, Relaxed) != 0 {
                tracing::info!(target: "kubernetes", "every watched kind listed: the state restored from disk is reconciled with the API");
            }
            if let Some(s) = saver.as_mut() {
                s.changed();
            }
        }
    }
}

/// Applies one change; whether it completed a list.
fn apply(writer: &mut Writer, change: Change, resyncing: &mut [bool; Kind::COUNT], metrics: &Metrics) -> bool {
    match change {
        Change::Upsert(record) => {
            writer.apply(record);
        }
        Change::Delete(key) => writer.delete(&key),
        Change::RelistStart(kind, resync) => {
            resyncing[kind as usize] = resync;
            writer.relist_start(kind);
        }
        Change::RelistDone(kind) => {
            let corrected = writer.relist_done(kind);
            if std::mem::take(&mut resyncing[kind as usize]) && corrected > 0 {
                metrics.watch.resync_corrections[kind as usize].fetch_add(corrected as u64, Relaxed);
                tracing::warn!(target: "kubernetes", "{}: resync corrected {corrected} objects the watch had missed", kind.name());
            }
            return true;
        }
    }
    false
}
