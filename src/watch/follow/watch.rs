//! Watching one kind from a resourceVersion: the stream opened
//! uncompressed, each event decoded and handed on, the version kept
//! current, until the stream ends, stalls, expires or it is time to relist.

use std::time::{Duration, Instant};

use kube::api::WatchParams;

use super::deliver::{convert, deliver, key, malformed};
use super::follower::Follower;
use crate::store::Record;
use crate::watch::backoff::Backoff;
use crate::watch::convert::Invalid;
use crate::watch::feed::Change;
use crate::watch::lean::{Object, Str};
use crate::watch::wire::{self, Event, Failure, Frames};

/// How a watch came to an end.
pub(super) enum End {
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

/// Watches from `version` (kept current) until the watch ends.
pub(super) async fn watch<T: Object, F>(
    f: &Follower<F>,
    version: &mut Option<String>,
    resync_at: Option<Instant>,
    backoff: &mut Backoff,
) -> End
where
    F: Fn(&T::Of<'_>) -> Result<Option<Record>, Invalid>,
{
    let t = &f.target;
    let mut frames = match open(f, version.as_deref()).await {
        Ok(frames) => frames,
        Err(end) => return end,
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
        let (meta_version, change) = match event::<T, F>(f, &text) {
            Ok(read) => read,
            Err(end) => return end,
        };
        let sent = match change {
            Some(change) => deliver(f, change).await,
            None => true,
        };
        if let Some(rv) = meta_version.filter(|rv| !rv.is_empty()) {
            *version = Some(rv);
        }
        if !sent {
            return End::Stopped;
        }
    }
}

/// What one event's text says: its resourceVersion and the change to
/// send, owned (the decoded event borrows the text and is dropped before
/// anything is awaited), or how the watch ends.
#[allow(clippy::type_complexity)]
fn event<T: Object, F>(f: &Follower<F>, text: &[u8]) -> Result<(Option<String>, Option<Result<Change, Invalid>>), End>
where
    F: Fn(&T::Of<'_>) -> Result<Option<Record>, Invalid>,
{
    let kind = f.target.kind;
    let owned = |v: &Option<Str>| v.as_deref().map(str::to_string);
    Ok(match wire::decode::<T::Of<'_>>(text).map_err(End::Failed)? {
        Event::Upsert(object) => (
            owned(&T::meta(&object).resource_version),
            Some(convert::<T, F>(f, &object)),
        ),
        Event::Delete(meta) => (
            owned(&meta.resource_version),
            Some(Ok(Change::Delete(key(kind, &meta)))),
        ),
        Event::Bookmark(rv) => (Some(rv), None),
        Event::Malformed { meta, error } => {
            malformed(f, &meta, &error);
            (owned(&meta.resource_version), None)
        }
        Event::Error(e) if e.code() == Some(410) => return Err(End::Expired),
        Event::Error(e) => return Err(End::Failed(e)),
        Event::Unknown(what) => {
            tracing::debug!(target: "kubernetes", "{}: skipped a watch event of type {what}", kind.name());
            (None, None)
        }
    })
}

/// Opens the watch stream from `version`: uncompressed, with bookmarks,
/// ending on the server's side after the watch timeout.
async fn open<F>(f: &Follower<F>, version: Option<&str>) -> Result<Frames, End> {
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
    let rv = version.unwrap_or_default();
    let req = if t.metadata_only {
        request.watch_metadata(&params, rv)
    } else {
        request.watch(&params, rv)
    };
    let mut req = match req {
        Ok(r) => r,
        Err(e) => return Err(End::Failed(e.into())),
    };
    // Watch streams are read as they come, never compressed.
    req.headers_mut().insert(
        http::header::ACCEPT_ENCODING,
        http::HeaderValue::from_static("identity"),
    );
    let opened = tokio::time::timeout(wire::PAGE_TIMEOUT, f.api.send(req)).await;
    match opened {
        Ok(Ok(res)) => Ok(Frames::new(res.into_body())),
        Ok(Err(e)) if e.code() == Some(410) => Err(End::Expired),
        Ok(Err(e)) => Err(End::Failed(e)),
        Err(_) => Err(End::Failed(Failure::Timeout(wire::PAGE_TIMEOUT))),
    }
}
