//! Watching one kind from a resourceVersion: the stream opened
//! uncompressed, each event decoded and handed on, the version kept
//! current, until the stream ends, stalls, expires or it is time to relist.

use std::time::{Duration, Instant};

use kube::api::WatchParams;

use super::deliver::{key, malformed, send};
use super::follower::Follower;
use crate::store::Record;
use crate::watch::backoff::Backoff;
use crate::watch::convert::Invalid;
use crate::watch::feed::Change;
use crate::watch::lean::Object;
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
    F: Fn(&T) -> Result<Option<Record>, Invalid>,
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
