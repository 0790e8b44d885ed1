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
use std::time::{Duration, Instant};

use super::backoff::{Backoff, QUICK_END};
use super::convert::Invalid;
use super::feed::Change;
use super::lean::Object;
use super::report::{describe, RateLimited};
use super::wire::Failure;
use crate::store::{Kind, Record};
pub use follower::{Follower, Target};
use list::list;
pub use list::PAGE;
use watch::{watch, End};

mod deliver;
mod follower;
mod list;
mod watch;

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

/// Where one kind's follower stands between its lists and watches.
struct Progress {
    backoff: Backoff,
    log: RateLimited,
    /// The resourceVersion to watch from; `None`: list first.
    version: Option<String>,
    /// Why the next list or watch starts.
    reason: Reason,
    listed_at: Instant,
    /// The ServiceImport CRD was missing at the last list, and how long
    /// until it is looked for again.
    crd_missing: bool,
    crd_wait: Duration,
}

/// What a follower does after a list attempt.
enum Next {
    /// Watch from the list's resourceVersion.
    Watch,
    /// List again (after the wait the failure asked for).
    Again,
    /// The writer went away.
    Stop,
}

/// Follows one kind until the writer goes away.
pub async fn run<T, F>(f: Follower<F>)
where
    T: Object,
    F: Fn(&T::Of<'_>) -> Result<Option<Record>, Invalid> + Send + Sync + 'static,
{
    let kind = f.target.kind;
    let mut at = Progress {
        backoff: Backoff::default(),
        log: RateLimited::default(),
        version: None,
        reason: Reason::Start,
        listed_at: Instant::now(),
        crd_missing: false,
        crd_wait: MISSING_CRD_FIRST,
    };
    loop {
        let fresh = at.version.is_none();
        if fresh {
            match relist::<T, F>(&f, &mut at).await {
                Next::Watch => {}
                Next::Again => continue,
                Next::Stop => return,
            }
        } else {
            f.metrics.watch.resumes[kind as usize][at.reason as usize].fetch_add(1, Relaxed);
            tracing::info!(target: "kubernetes", "{}: resuming the watch ({})", kind.name(), at.reason.text());
        }
        let resync_at = f.resync.map(|d| at.listed_at + d);
        let opened = Instant::now();
        let end = watch::<T, F>(&f, &mut at.version, resync_at, &mut at.backoff).await;
        let quick = opened.elapsed() < QUICK_END;
        at.reason = match end {
            End::Stopped => return,
            End::Closed => Reason::WatchEnded,
            End::Stalled => Reason::Stalled,
            End::Expired => Reason::Expired,
            End::Resync => Reason::Resync,
            End::Failed(e) => {
                if wait_after(&f, &mut at.backoff, &mut at.log, &e).await {
                    return;
                }
                Reason::Error
            }
        };
        if matches!(at.reason, Reason::Expired | Reason::Resync) {
            at.version = None;
        }
        // A watch closed as soon as it opened (or expired right after a
        // fresh list) is a failing server: back off.
        if quick && (at.reason == Reason::WatchEnded || (at.reason == Reason::Expired && fresh)) {
            let wait = at.backoff.failed(Instant::now());
            if sleep_or_stop(&f, wait).await {
                return;
            }
        }
    }
}

/// Lists the kind once (counted and logged with its reason), and handles
/// how the list failed: a missing MCS CRD is an empty list looked for
/// again slowly, an expired continue token starts over, any other failure
/// backs off.
async fn relist<T, F>(f: &Follower<F>, at: &mut Progress) -> Next
where
    T: Object,
    F: Fn(&T::Of<'_>) -> Result<Option<Record>, Invalid> + Send + Sync + 'static,
{
    let kind = f.target.kind;
    let started = Instant::now();
    f.metrics.watch.relists[kind as usize].fetch_add(1, Relaxed);
    f.metrics.watch.relists_by[kind as usize][at.reason as usize].fetch_add(1, Relaxed);
    if at.reason != Reason::Start {
        tracing::info!(target: "kubernetes", "{}: relisting ({})", kind.name(), at.reason.text());
    }
    match list::<T, F>(f, at.reason == Reason::Resync).await {
        Ok(Some((rv, count))) => {
            at.backoff.ok(Instant::now());
            at.crd_missing = false;
            at.crd_wait = MISSING_CRD_FIRST;
            at.listed_at = Instant::now();
            let took = started.elapsed().as_secs_f64();
            tracing::info!(target: "kubernetes", "{}: listed {count} objects in {took:.2} s", kind.name());
            at.version = Some(rv);
            Next::Watch
        }
        Ok(None) => Next::Stop,
        Err(e) if e.code() == Some(404) && kind == Kind::ServiceImport => {
            // The MCS CRD is not installed: served as an empty list
            // (readiness never waits on it), asked again slowly.
            if !at.crd_missing {
                tracing::warn!(target: "kubernetes", "{}: the API has no {} (the MCS CRDs are not installed); multicluster zones answer no services; checking again in {} s, then at most every {} s", kind.name(), f.target.resource, at.crd_wait.as_secs(), MISSING_CRD_RETRY.as_secs());
            }
            at.crd_missing = true;
            if f.tx.send(Change::RelistDone(kind)).await.is_err() || sleep_or_stop(f, at.crd_wait).await {
                return Next::Stop;
            }
            at.crd_wait = (at.crd_wait * 2).min(MISSING_CRD_RETRY);
            at.reason = Reason::Error;
            Next::Again
        }
        Err(e) if e.code() == Some(410) => {
            // A continue token expired: the list starts over
            // (what it upserted stays; nothing is deleted until
            // a list completes).
            at.reason = Reason::Expired;
            tracing::info!(target: "kubernetes", "{}: the list's continue token expired ({e}); listing again from the start", kind.name());
            let wait = at.backoff.failed_asking(Instant::now(), e.retry_after());
            if sleep_or_stop(f, wait).await {
                return Next::Stop;
            }
            Next::Again
        }
        Err(e) => {
            at.reason = Reason::Error;
            if wait_after(f, &mut at.backoff, &mut at.log, &e).await {
                return Next::Stop;
            }
            Next::Again
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
