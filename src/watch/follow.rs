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

use kube::api::{ListParams, WatchParams};
use tokio::sync::mpsc;

use super::backoff::{Backoff, QUICK_END};
use super::convert::Invalid;
use super::feed::Change;
use super::lean::{ListMeta, Meta, Object};
use super::report::{describe, RateLimited};
use super::wire::{self, Api, Event, Failure, Frames};
use crate::metrics::Metrics;
use crate::store::{Kind, ObjectKey, Record};

/// Objects per list page. Larger pages measured no faster here and cost
/// memory: a page's text is held whole, in every kind listing in parallel,
/// and the holes it leaves stay in the heap (5,000: 165 MB steady RSS at
/// 100,000 Services × 5 endpoints). 250 against 500, objects read one by
/// one: sync of 100,000 Services × 5 endpoints alike (server CPU 3.5 s
/// both, `loadtest watch-bench`), 10,000 imports × 3 clusters × 5
/// endpoints through the API add about 1 MB less RSS (`mcs-memory.sh`).
pub const PAGE: u32 = 250;

/// How long after a missing CRD (ServiceImport) is found missing it is
/// first looked for again; each later look waits twice as long, up to
/// [`MISSING_CRD_RETRY`], so CRDs installed just after clusterdns starts
/// (a cluster being set up) are served within seconds.
pub const MISSING_CRD_FIRST: Duration = Duration::from_secs(5);
/// How often a missing CRD is looked for at most.
pub const MISSING_CRD_RETRY: Duration = Duration::from_secs(60);

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
    pub api: Arc<Api>,
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
    Failed(Failure),
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
    let mut crd_missing = false;
    let mut crd_wait = MISSING_CRD_FIRST;
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
                    crd_missing = false;
                    crd_wait = MISSING_CRD_FIRST;
                    listed_at = Instant::now();
                    let took = started.elapsed().as_secs_f64();
                    tracing::info!(target: "kubernetes", "{}: listed {count} objects in {took:.2} s", kind.name());
                    version = Some(rv);
                }
                Ok(None) => return,
                Err(e) if e.code() == Some(404) && kind == Kind::ServiceImport => {
                    // The MCS CRD is not installed: served as an empty list
                    // (readiness never waits on it), asked again slowly.
                    if !crd_missing {
                        tracing::warn!(target: "kubernetes", "{}: the API has no {} (the MCS CRDs are not installed); multicluster zones answer no services; checking again in {} s, then at most every {} s", kind.name(), f.target.resource, crd_wait.as_secs(), MISSING_CRD_RETRY.as_secs());
                    }
                    crd_missing = true;
                    if f.tx.send(Change::RelistDone(kind)).await.is_err() || sleep_or_stop(&f, crd_wait).await {
                        return;
                    }
                    crd_wait = (crd_wait * 2).min(MISSING_CRD_RETRY);
                    reason = Reason::Error;
                    continue;
                }
                Err(e) if e.code() == Some(410) => {
                    // A continue token expired: the list starts over
                    // (what it upserted stays; nothing is deleted until
                    // a list completes).
                    reason = Reason::Expired;
                    tracing::info!(target: "kubernetes", "{}: the list's continue token expired ({e}); listing again from the start", kind.name());
                    let wait = backoff.failed_asking(Instant::now(), e.retry_after());
                    if sleep_or_stop(&f, wait).await {
                        return;
                    }
                    continue;
                }
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
async fn wait_after<F>(f: &Follower<F>, backoff: &mut Backoff, log: &mut RateLimited, e: &Failure) -> bool {
    let kind = f.target.kind;
    f.metrics.watch.errors[kind as usize].fetch_add(1, Relaxed);
    let wait = backoff.failed_asking(Instant::now(), e.retry_after());
    log.error(&format!(
        "{} (attempt {}, next in {:.1} s)",
        describe(e, f.target.resource, f.api.token_file.as_deref()),
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

/// Sends one object's upsert; false when the writer is gone.
async fn send<T: Object, F>(f: &Follower<F>, object: &T) -> bool
where
    F: Fn(&T) -> Result<Option<Record>, Invalid>,
{
    deliver(f, convert(f, object)).await
}

/// One object as the change the writer gets, or why it cannot be one.
fn convert<T: Object, F>(f: &Follower<F>, object: &T) -> Result<Change, Invalid>
where
    F: Fn(&T) -> Result<Option<Record>, Invalid>,
{
    let key = key(f.target.kind, object.meta());
    (f.convert)(object).map(|record| Change::Upsert(key, record))
}

/// Sends a converted object to the writer (`false`: it went away); one
/// that could not be converted is counted, logged and skipped.
async fn deliver<F>(f: &Follower<F>, change: Result<Change, Invalid>) -> bool {
    match change {
        Ok(change) => f.tx.send(change).await.is_ok(),
        Err(bad) => {
            f.metrics.watch.invalid[f.target.kind as usize].fetch_add(1, Relaxed);
            tracing::warn!(target: "kubernetes", "skipped malformed object {bad}");
            true
        }
    }
}

/// Counts and logs an object the lean types could not read; it is skipped.
fn malformed<F>(f: &Follower<F>, meta: &Meta, error: &str) {
    let kind = f.target.kind;
    f.metrics.watch.invalid[kind as usize].fetch_add(1, Relaxed);
    let name = |s: &Option<String>| s.clone().unwrap_or_default();
    tracing::warn!(target: "kubernetes", "skipped malformed object {} {}/{}: {error}", kind.name(), name(&meta.namespace), name(&meta.name));
}

/// Decodes one list page into `out` (cleared first), each object
/// converted as it is read ([`super::page`]); when one of them does not
/// fit the lean types, the page is read again item by item, skipping the
/// unreadable ones.
fn page<T: Object, F>(f: &Follower<F>, text: &[u8], out: &mut Vec<Result<Change, Invalid>>) -> Result<ListMeta, Failure>
where
    F: Fn(&T) -> Result<Option<Record>, Invalid>,
{
    out.clear();
    if let Ok(meta) = super::page::read::<T, _>(text, |object| out.push(convert(f, &object))) {
        return Ok(meta);
    }
    out.clear();
    let (meta, items) = wire::lenient_items::<T>(text)?;
    for item in items {
        match item {
            wire::Item::Read(object) => out.push(convert(f, &object)),
            wire::Item::Unreadable { meta, error } => malformed(f, &meta, &error),
        }
    }
    Ok(meta)
}

/// Lists every page (`resync`: count what it corrects); `Ok(None)` when the writer went away. Returns the
/// list's resourceVersion and how many objects it held.
async fn list<T: Object, F>(f: &Follower<F>, resync: bool) -> Result<Option<(String, usize)>, Failure>
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
    // One buffer for every page's text and one for its changes (see `Api::fetch_into`).
    let (mut text, mut changes) = (Vec::new(), Vec::new());
    loop {
        let req = if t.metadata_only {
            request.list_metadata(&params)
        } else {
            request.list(&params)
        };
        f.api.fetch_into(req?, &mut text).await?;
        let meta = page(f, &text, &mut changes)?;
        f.metrics.watch.event(t.kind as usize);
        count += changes.len();
        for change in changes.drain(..) {
            if !deliver(f, change).await {
                return Ok(None);
            }
        }
        match meta.continue_.filter(|c| !c.is_empty()) {
            Some(token) => params.continue_token = Some(token),
            None => {
                let rv = meta.resource_version.unwrap_or_default();
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
    let mut req = match req {
        Ok(r) => r,
        Err(e) => return End::Failed(e.into()),
    };
    // Watch streams are read as they come, never compressed.
    req.headers_mut().insert(
        http::header::ACCEPT_ENCODING,
        http::HeaderValue::from_static("identity"),
    );
    let opened = tokio::time::timeout(wire::PAGE_TIMEOUT, f.api.send(req)).await;
    let mut frames = match opened {
        Ok(Ok(res)) => Frames::new(res.into_body()),
        Ok(Err(e)) if e.code() == Some(410) => return End::Expired,
        Ok(Err(e)) => return End::Failed(e),
        Err(_) => return End::Failed(Failure::Timeout(wire::PAGE_TIMEOUT)),
    };
    backoff.ok(Instant::now());
    let idle = f.watch_timeout + Duration::from_secs(5);
    loop {
        let deadline = resync_at.map_or(idle, |at| at.saturating_duration_since(Instant::now()).min(idle));
        let next = tokio::select! {
            next = tokio::time::timeout(deadline, frames.next()) => next,
            () = f.tx.closed() => return End::Stopped,
        };
        let text = match next {
            Err(_) if resync_at.is_some_and(|at| Instant::now() >= at) => return End::Resync,
            Err(_) => return End::Stalled,
            Ok(None) => return End::Closed,
            Ok(Some(Err(e))) => return End::Failed(e),
            Ok(Some(Ok(text))) => text,
        };
        f.metrics.watch.event(t.kind as usize);
        let event = match wire::decode::<T>(&text) {
            Ok(event) => event,
            Err(e) => return End::Failed(e),
        };
        let (meta_version, sent) = match event {
            Event::Upsert(object) => (object.meta().resource_version.clone(), send(f, &object).await),
            Event::Delete(meta) => {
                let sent = f.tx.send(Change::Delete(key(t.kind, &meta))).await.is_ok();
                (meta.resource_version, sent)
            }
            Event::Bookmark(rv) => (Some(rv), true),
            Event::Malformed { meta, error } => {
                malformed(f, &meta, &error);
                (meta.resource_version, true)
            }
            Event::Error(e) if e.code() == Some(410) => return End::Expired,
            Event::Error(e) => return End::Failed(e),
            Event::Unknown(kind) => {
                tracing::debug!(target: "kubernetes", "{}: skipped a watch event of type {kind}", t.kind.name());
                (None, true)
            }
        };
        if let Some(rv) = meta_version.filter(|rv| !rv.is_empty()) {
            *version = Some(rv);
        }
        if !sent {
            return End::Stopped;
        }
    }
}
