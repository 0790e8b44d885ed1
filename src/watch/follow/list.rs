//! Listing one kind: every page fetched into one reused buffer, its
//! objects converted as they are decoded and sent between the writer's
//! `RelistStart` and `RelistDone`.

use kube::api::ListParams;

use super::deliver::{convert, deliver, malformed};
use super::follower::Follower;
use crate::store::Record;
use crate::watch::convert::Invalid;
use crate::watch::feed::Change;
use crate::watch::lean::{ListMeta, Object};
use crate::watch::wire::{self, Failure};

/// Objects per list page. Larger pages measured no faster here and cost
/// memory: a page's text is held whole, in every kind listing in parallel,
/// and the holes it leaves stay in the heap (5,000: 165 MB steady RSS at
/// 100,000 Services × 5 endpoints). 250 against 500, objects read one by
/// one: sync of 100,000 Services × 5 endpoints alike (server CPU 3.5 s
/// both, `loadtest watch-bench`), 10,000 imports × 3 clusters × 5
/// endpoints through the API add about 1 MB less RSS (`mcs-memory.sh`).
pub const PAGE: u32 = 250;

/// Decodes one list page into `out` (cleared first), each object
/// converted as it is read ([`crate::watch::page`]); when one of them does not
/// fit the lean types, the page is read again item by item, skipping the
/// unreadable ones. Returns the page's metadata, owned (the text is
/// reused for the next page).
pub(super) fn page<T: Object, F>(
    f: &Follower<F>,
    text: &[u8],
    out: &mut Vec<Result<Change, Invalid>>,
) -> Result<ListMeta<'static>, Failure>
where
    F: Fn(&T::Of<'_>) -> Result<Option<Record>, Invalid>,
{
    out.clear();
    let read = crate::watch::page::read::<T::Of<'_>, _>(text, |object| out.push(convert::<T, F>(f, &object)));
    if let Ok(meta) = read {
        return Ok(meta.into_owned());
    }
    out.clear();
    let (meta, items) = wire::lenient_items::<T::Of<'_>>(text)?;
    for item in items {
        match item {
            wire::Item::Read(object) => out.push(convert::<T, F>(f, &object)),
            wire::Item::Unreadable { meta, error } => malformed(f, &meta, &error),
        }
    }
    Ok(meta)
}

/// Lists every page (`resync`: count what it corrects); `Ok(None)` when the writer went away. Returns the
/// list's resourceVersion and how many objects it held.
pub(super) async fn list<T: Object, F>(f: &Follower<F>, resync: bool) -> Result<Option<(String, usize)>, Failure>
where
    F: Fn(&T::Of<'_>) -> Result<Option<Record>, Invalid>,
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
        let meta = page::<T, F>(f, &text, &mut changes)?;
        f.metrics.watch.event(t.kind as usize);
        count += changes.len();
        for change in changes.drain(..) {
            if !deliver(f, change).await {
                return Ok(None);
            }
        }
        match meta.continue_.filter(|c| !c.is_empty()) {
            Some(token) => params.continue_token = Some(token.owned()),
            None => {
                // Freed before the writer hears the list is done (and
                // trims the heap).
                drop((text, changes));
                let rv = meta.resource_version.map(|rv| rv.owned()).unwrap_or_default();
                if f.tx.send(Change::RelistDone(t.kind)).await.is_err() {
                    return Ok(None);
                }
                return Ok(Some((rv, count)));
            }
        }
    }
}
