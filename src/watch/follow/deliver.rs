//! Handing objects to the writer: each one converted to its compact
//! record as it is read, sent, or counted and logged when it cannot be
//! read or converted (then skipped, never a failure of the watch).

use std::sync::atomic::Ordering::Relaxed;

use super::follower::Follower;
use crate::store::{Kind, ObjectKey, Record};
use crate::watch::convert::Invalid;
use crate::watch::feed::Change;
use crate::watch::lean::{Meta, Object, Str};

/// One object as the change the writer gets, or why it cannot be one.
pub(super) fn convert<T: Object, F>(f: &Follower<F>, object: &T::Of<'_>) -> Result<Change, Invalid>
where
    F: Fn(&T::Of<'_>) -> Result<Option<Record>, Invalid>,
{
    // The key is made only for an object the filters leave out: an
    // upsert's record holds its own.
    (f.convert)(object).map(|record| match record {
        Some(record) => Change::Upsert(record),
        None => Change::Delete(key(f.target.kind, T::meta(object))),
    })
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
    let name = |s: &Option<Str>| s.as_deref().unwrap_or_default().to_string();
    tracing::warn!(target: "kubernetes", "skipped malformed object {} {}/{}: {error}", kind.name(), name(&meta.namespace), name(&meta.name));
}

/// The writer's key of an object: its kind, namespace and name, lower-cased.
pub(super) fn key(kind: Kind, meta: &Meta) -> ObjectKey {
    let lower = |s: &Option<Str>| s.as_deref().unwrap_or_default().to_ascii_lowercase();
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
