//! Following one kind: list it in large pages, then watch from the list's
//! resourceVersion; resume at once when a watch ends, relist at once when
//! the history has moved on (`410 Expired`), and back off only when
//! attempts keep failing ([`super::backoff`]). Every resume and relist is
//! logged once with its reason and counted per kind and reason.
//!
//! ```text
//!   ┌──► list (pages) ──► watch from RV ──► ends cleanly / stalls ──► resume ─┐
//!   │        ▲                 │   ▲                                           │
//!   │        │ error: backoff  │   └───────────────────────────────────────────┘
//!   └─ 410 Expired, resync ◄───┘
//! ```
//!
//! Objects are decoded into the lean types of [`super::lean`], converted
//! at once and dropped; the writer gets compact records.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use kube::api::{ListParams, WatchEvent, WatchParams};
use kube::Client;
use tokio::sync::mpsc;

use super::api::{describe, Change, RateLimited};
use super::backoff::{Backoff, QUICK_END};
use super::convert::Invalid;
use super::lean::{Object, Page};
use crate::metrics::Metrics;
use crate::store::{Kind, ObjectKey, Record};

/// Objects per list page. Larger pages measured no faster here and cost
/// memory: a page's text and decoded objects are held at once, in every
/// kind listing in parallel, and the holes they leave stay in the heap
/// (5,000: 165 MB steady RSS at 100,000 Services × 5 endpoints).
pub const PAGE: u32 = 500;

/// Why a watcher resumed or relisted, in `metrics::RESTART_REASONS` order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    Start = 0,
    WatchEnded = 1,
    Expired = 2,
    Stalled = 3,
    Error = 4,
    Resync = 5,
}

impl Reason {
    fn text(self) -> &'static str {
        crate::metrics::RESTART_REASONS[self as usize]
    }
}

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
    pub client: Client,
    pub tx: mpsc::Sender<Change>,
    pub metrics: Arc<Metrics>,
    pub convert: F,
    /// Server-side length of one watch; silence for this + 5 s is a stall.
    pub watch_timeout: Duration,
    pub resync: Option<Duration>,
}

/// How a watch came to an end.
enum End {
    /// The server closed it (timeout, restart, load balancing).
    Closed,
    /// `410 Expired`: the history has moved past our version.
    Expired,
    /// Nothing arrived for the watch timeout + 5 s.
    Stalled,
    /// Time for the periodic relist.
    Resync,
    Failed(kube::Error),
    /// The writer is gone (shutdown or reload).
    Stopped,
}

fn key(kind: Kind, meta: &super::lean::Meta) -> ObjectKey {
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

/// Follows one kind until the writer goes away.
pub async fn run<T, F>(f: Follower<F>)
where
    T: Object,
    F: Fn(&T) -> Result<Option<Record>, Invalid> + Send + Sync + 'static,
{
    let kind = f.target.kind;
    let mut backoff = Backoff::default();
    let mut log = RateLimited::default();
    let mut version: Option<String> = None;
    let mut reason = Reason::Start;
    let mut listed_at = Instant::now();
    loop {
        let fresh = version.is_none();
        let started = Instant::now();
        if fresh {
            f.metrics.watch.relists[kind as usize].fetch_add(1, Relaxed);
            f.metrics.watch.relists_by[kind as usize][reason as usize].fetch_add(1, Relaxed);
            if reason != Reason::Start {
                tracing::info!(target: "kubernetes", "{}: relisting ({})", kind.name(), reason.text());
            }
            match list::<T, F>(&f, reason == Reason::Resync).await {
                Ok(Some((rv, count))) => {
                    backoff.ok(Instant::now());
                    listed_at = Instant::now();
                    let took = started.elapsed().as_secs_f64();
                    tracing::info!(target: "kubernetes", "{}: listed {count} objects in {took:.2} s", kind.name());
                    version = Some(rv);
                }
                Ok(None) => return,
                Err(e) => {
                    reason = Reason::Error;
                    if wait_after(&f, &mut backoff, &mut log, &e).await {
                        return;
                    }
                    continue;
                }
            }
        } else {
            f.metrics.watch.resumes[kind as usize][reason as usize].fetch_add(1, Relaxed);
            tracing::info!(target: "kubernetes", "{}: resuming the watch ({})", kind.name(), reason.text());
        }
        let resync_at = f.resync.map(|d| listed_at + d);
        let opened = Instant::now();
        let end = watch::<T, F>(&f, &mut version, resync_at, &mut backoff).await;
        let quick = opened.elapsed() < QUICK_END;
        reason = match end {
            End::Stopped => return,
            End::Closed => Reason::WatchEnded,
            End::Stalled => Reason::Stalled,
            End::Expired => Reason::Expired,
            End::Resync => Reason::Resync,
            End::Failed(e) => {
                if wait_after(&f, &mut backoff, &mut log, &e).await {
                    return;
                }
                Reason::Error
            }
        };
        if matches!(reason, Reason::Expired | Reason::Resync) {
            version = None;
        }
        // A watch closed as soon as it opened (or expired right after a
        // fresh list) is a failing server: back off.
        if quick && (reason == Reason::WatchEnded || (reason == Reason::Expired && fresh)) {
            let wait = backoff.failed(Instant::now());
            if sleep_or_stop(&f, wait).await {
                return;
            }
        }
    }
}

/// Counts and logs a failure, then waits as the backoff says; true when
/// the writer went away meanwhile.
async fn wait_after<F>(f: &Follower<F>, backoff: &mut Backoff, log: &mut RateLimited, e: &kube::Error) -> bool {
    let kind = f.target.kind;
    f.metrics.watch.errors[kind as usize].fetch_add(1, Relaxed);
    let wait = backoff.failed(Instant::now());
    log.error(&format!(
        "{} (attempt {}, next in {:.1} s)",
        describe(e, f.target.resource),
        backoff.failures(),
        wait.as_secs_f64()
    ));
    sleep_or_stop(f, wait).await
}

async fn sleep_or_stop<F>(f: &Follower<F>, wait: Duration) -> bool {
    tokio::select! {
        () = tokio::time::sleep(wait) => false,
        () = f.tx.closed() => true,
    }
}

/// Sends one object's change; false when the writer is gone.
async fn send<T: Object, F>(f: &Follower<F>, object: &T, deleted: bool) -> bool
where
    F: Fn(&T) -> Result<Option<Record>, Invalid>,
{
    let kind = f.target.kind;
    let key = key(kind, object.meta());
    let change = if deleted {
        Change::Delete(key)
    } else {
        match (f.convert)(object) {
            Ok(record) => Change::Upsert(key, record),
            Err(bad) => {
                f.metrics.watch.invalid[kind as usize].fetch_add(1, Relaxed);
                tracing::warn!(target: "kubernetes", "skipped malformed object {bad}");
                return true;
            }
        }
    };
    f.tx.send(change).await.is_ok()
}

/// Lists every page (`resync`: count what it corrects); `Ok(None)` when the writer went away. Returns the
/// list's resourceVersion and how many objects it held.
async fn list<T: Object, F>(f: &Follower<F>, resync: bool) -> Result<Option<(String, usize)>, kube::Error>
where
    F: Fn(&T) -> Result<Option<Record>, Invalid>,
{
    let t = &f.target;
    let request = kube::core::Request::new(t.path);
    let mut params = ListParams {
        label_selector: t.labels.clone(),
        field_selector: t.fields.clone(),
        limit: Some(PAGE),
        ..ListParams::default()
    };
    if f.tx.send(Change::RelistStart(t.kind, resync)).await.is_err() {
        return Ok(None);
    }
    let mut count = 0;
    loop {
        let req = if t.metadata_only {
            request.list_metadata(&params)
        } else {
            request.list(&params)
        };
        let body = f.client.request_stream(req.map_err(kube::Error::BuildRequest)?).await?;
        let mut text = Vec::new();
        futures::AsyncReadExt::read_to_end(&mut std::pin::pin!(body), &mut text)
            .await
            .map_err(kube::Error::ReadEvents)?;
        let page: Page<T> = serde_json::from_slice(&text).map_err(kube::Error::SerdeError)?;
        drop(text);
        f.metrics.watch.event(t.kind as usize);
        count += page.items.len();
        for object in &page.items {
            if !send(f, object, false).await {
                return Ok(None);
            }
        }
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => params.continue_token = Some(token),
            None => {
                let rv = page.metadata.resource_version.unwrap_or_default();
                if f.tx.send(Change::RelistDone(t.kind)).await.is_err() {
                    return Ok(None);
                }
                return Ok(Some((rv, count)));
            }
        }
    }
}

/// Watches from `version` (kept current) until the watch ends.
async fn watch<T: Object, F>(
    f: &Follower<F>,
    version: &mut Option<String>,
    resync_at: Option<Instant>,
    backoff: &mut Backoff,
) -> End
where
    F: Fn(&T) -> Result<Option<Record>, Invalid>,
{
    let t = &f.target;
    let timeout = u32::try_from(f.watch_timeout.as_secs()).unwrap_or(290);
    let params = WatchParams {
        label_selector: t.labels.clone(),
        field_selector: t.fields.clone(),
        timeout: Some(timeout),
        bookmarks: true,
        ..WatchParams::default()
    };
    let request = kube::core::Request::new(t.path);
    let rv = version.clone().unwrap_or_default();
    let req = if t.metadata_only {
        request.watch_metadata(&params, &rv)
    } else {
        request.watch(&params, &rv)
    };
    let req = match req {
        Ok(r) => r,
        Err(e) => return End::Failed(kube::Error::BuildRequest(e)),
    };
    let stream = match f.client.request_events::<T>(req).await {
        Ok(s) => s,
        Err(e) => return End::Failed(e),
    };
    backoff.ok(Instant::now());
    let mut stream = std::pin::pin!(stream);
    let idle = f.watch_timeout + Duration::from_secs(5);
    loop {
        let deadline = resync_at.map_or(idle, |at| at.saturating_duration_since(Instant::now()).min(idle));
        let next = tokio::select! {
            next = tokio::time::timeout(deadline, stream.next()) => next,
            () = f.tx.closed() => return End::Stopped,
        };
        let event = match next {
            Err(_) if resync_at.is_some_and(|at| Instant::now() >= at) => return End::Resync,
            Err(_) => return End::Stalled,
            Ok(None) => return End::Closed,
            Ok(Some(Err(kube::Error::Api(status)))) if status.code == 410 => return End::Expired,
            Ok(Some(Err(e))) => return End::Failed(e),
            Ok(Some(Ok(event))) => event,
        };
        f.metrics.watch.event(t.kind as usize);
        let (object, deleted) = match event {
            WatchEvent::Added(o) | WatchEvent::Modified(o) => (o, false),
            WatchEvent::Deleted(o) => (o, true),
            WatchEvent::Bookmark(b) => {
                *version = Some(b.metadata.resource_version);
                continue;
            }
            WatchEvent::Error(status) if status.code == 410 => return End::Expired,
            WatchEvent::Error(status) => return End::Failed(kube::Error::Api(status)),
        };
        if let Some(rv) = &object.meta().resource_version {
            *version = Some(rv.clone());
        }
        if !send(f, &object, deleted).await {
            return End::Stopped;
        }
    }
}
