//! Handing objects to the writer: each one converted to its compact
//! record as it is read, sent, or counted and logged when it cannot be
//! read or converted (then skipped, never a failure of the watch).

use std::sync::atomic::Ordering::Relaxed;

use super::follower::Follower;
use crate::store::{Kind, ObjectKey, Record};
use crate::watch::convert::Invalid;
use crate::watch::feed::Change;
use crate::watch::lean::{Meta, Object};

/// Sends one object's upsert; false when the writer is gone.
pub(super) async fn send<T: Object, F>(f: &Follower<F>, object: &T) -> bool
where
    F: Fn(&T) -> Result<Option<Record>, Invalid>,
{
    deliver(f, convert(f, object)).await
}

/// One object as the change the writer gets, or why it cannot be one.
pub(super) fn convert<T: Object, F>(f: &Follower<F>, object: &T) -> Result<Change, Invalid>
where
    F: Fn(&T) -> Result<Option<Record>, Invalid>,
{
    let key = key(f.target.kind, object.meta());
    (f.convert)(object).map(|record| Change::Upsert(key, record))
}

/// Sends a converted object to the writer (`false`: it went away); one
/// that could not be converted is counted, logged and skipped.
pub(super) async fn deliver<F>(f: &Follower<F>, change: Result<Change, Invalid>) -> bool {
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
pub(super) fn malformed<F>(f: &Follower<F>, meta: &Meta, error: &str) {
    let kind = f.target.kind;
    f.metrics.watch.invalid[kind as usize].fetch_add(1, Relaxed);
    let name = |s: &Option<String>| s.clone().unwrap_or_default();
    tracing::warn!(target: "kubernetes", "skipped malformed object {} {}/{}: {error}", kind.name(), name(&meta.namespace), name(&meta.name));
}

/// The writer's key of an object: its kind, namespace and name, lower-cased.
pub(super) fn key(kind: Kind, meta: &Meta) -> ObjectKey {
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
