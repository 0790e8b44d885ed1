//! Decoding what the API server sends: one watch event at a time (typed
//! first, then leniently to find what did not fit) and, for a list page
//! the typed reading rejected, each item on its own.

use serde::Deserialize;

use super::failure::Failure;
use super::failure::StatusBody;
use crate::watch::lean::{ListMeta, Meta, Str};

/// One decoded watch event (its strings borrowed from the text, `'t`).
#[derive(Debug)]
pub enum Event<'t, T> {
    Upsert(T),
    /// A deletion needs only the last state's metadata.
    Delete(Meta<'t>),
    /// Every change up to this resourceVersion has been sent.
    Bookmark(String),
    /// An `ERROR` event (or a bare Status): `410` means expired.
    Error(Failure),
    /// An object the lean types could not read: skipped.
    Malformed {
        meta: Meta<'t>,
        error: String,
    },
    /// An event type this client does not know: skipped.
    Unknown(String),
}

/// The typed reading of one event (the fast path).
#[derive(Deserialize)]
#[serde(tag = "type", content = "object", rename_all = "UPPERCASE")]
#[serde(bound = "T: Deserialize<'de>")]
enum Typed<'a, T> {
    Added(T),
    Modified(T),
    #[serde(borrow)]
    Deleted(Skeleton<'a>),
    #[serde(borrow)]
    Bookmark(Skeleton<'a>),
    Error(StatusBody),
}

/// An object's metadata alone.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Skeleton<'a> {
    #[serde(borrow)]
    pub metadata: Meta<'a>,
}

/// Decodes one event's text.
pub fn decode<'t, T: Deserialize<'t>>(text: &'t [u8]) -> Result<Event<'t, T>, Failure> {
    if let Ok(typed) = serde_json::from_slice::<Typed<T>>(text) {
        return Ok(match typed {
            Typed::Added(o) | Typed::Modified(o) => Event::Upsert(o),
            Typed::Deleted(s) => Event::Delete(s.metadata),
            Typed::Bookmark(s) => Event::Bookmark(s.metadata.resource_version.map(|v| v.owned()).unwrap_or_default()),
            Typed::Error(s) => Event::Error(s.failure(500, None)),
        });
    }
    // The slow path: find out what did not fit.
    let value: serde_json::Value = serde_json::from_slice(text)?;
    let kind = value.get("type").and_then(|t| t.as_str()).map(str::to_string);
    let Some(kind) = kind else {
        let status = StatusBody::deserialize(&value).unwrap_or_default();
        if status.kind.as_deref() == Some("Status") {
            return Ok(Event::Error(status.failure(500, None)));
        }
        return Ok(Event::Unknown("(an object without a type)".into()));
    };
    let object = value.get("object").unwrap_or(&serde_json::Value::Null);
    match kind.as_str() {
        "ADDED" | "MODIFIED" => {
            // (from a copy: the value is this function's, the object the text's)
            let error = T::deserialize(object.clone())
                .err()
                .map_or_else(String::new, |e| e.to_string());
            Ok(Event::Malformed {
                meta: skeleton(object),
                error,
            })
        }
        "DELETED" => Ok(Event::Delete(skeleton(object))),
        "BOOKMARK" => Ok(Event::Bookmark(
            skeleton(object).resource_version.map(|v| v.owned()).unwrap_or_default(),
        )),
        "ERROR" => Ok(Event::Error(
            StatusBody::deserialize(object).unwrap_or_default().failure(500, None),
        )),
        _ => Ok(Event::Unknown(kind)),
    }
}

/// The metadata of an object, as far as it can be read: its names and
/// resourceVersion, copied.
fn skeleton(object: &serde_json::Value) -> Meta<'static> {
    let field = |name: &str| object["metadata"][name].as_str().map(Str::copied);
    Meta {
        name: field("name"),
        namespace: field("namespace"),
        resource_version: field("resourceVersion"),
        ..Meta::default()
    }
}

/// One item of a page read on its own.
pub enum Item<T> {
    Read(T),
    Unreadable { meta: Meta<'static>, error: String },
}

/// One list page's items, each read on its own (their strings copied):
/// the slow path for a page the typed reading rejected.
pub fn lenient_items<'t, T: Deserialize<'t>>(text: &[u8]) -> Result<(ListMeta<'static>, Vec<Item<T>>), Failure> {
    let mut value: serde_json::Value = serde_json::from_slice(text)?;
    let meta = ListMeta::deserialize(value["metadata"].take()).unwrap_or_default();
    let items = match value.get_mut("items").map(serde_json::Value::take) {
        Some(serde_json::Value::Array(items)) => items,
        _ => Vec::new(),
    };
    let items = items
        .into_iter()
        .map(|item| match T::deserialize(item.clone()) {
            Ok(object) => Item::Read(object),
            Err(e) => Item::Unreadable {
                meta: skeleton(&item),
                error: e.to_string(),
            },
        })
        .collect();
    Ok((meta, items))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::watch::lean::Service;

    fn event(text: &str) -> Event<'_, Service<'_>> {
        decode::<Service>(text.as_bytes()).expect("decodes")
    }

    #[test]
    fn events_of_every_type_and_the_unreadable_ones() {
        let ok = r#"{"type":"ADDED","object":{"kind":"Service","apiVersion":"v1","metadata":{"name":"a","namespace":"n","resourceVersion":"5"},"spec":{"clusterIP":"10.0.0.1"}}}"#;
        assert!(matches!(event(ok), Event::Upsert(s) if s.metadata.resource_version.as_deref() == Some("5")));
        let bad = r#"{"type":"MODIFIED","object":{"metadata":{"name":"a","namespace":"n","resourceVersion":"6"},"spec":{"ports":[{"port":"eighty"}]}}}"#;
        assert!(matches!(event(bad), Event::Malformed { meta, .. } if meta.resource_version.as_deref() == Some("6")));
        let deleted = r#"{"type":"DELETED","object":{"metadata":{"name":"a","namespace":"n","resourceVersion":"7"},"spec":{"ports":"odd"}}}"#;
        assert!(matches!(event(deleted), Event::Delete(m) if m.name.as_deref() == Some("a")));
        let bookmark = r#"{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"99"}}}"#;
        assert!(matches!(event(bookmark), Event::Bookmark(rv) if rv == "99"));
        let error = r#"{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 1 (5)","reason":"Expired","code":410}}"#;
        assert!(matches!(event(error), Event::Error(f) if f.code() == Some(410)));
        let bare = r#"{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Gone","code":410}"#;
        assert!(matches!(event(bare), Event::Error(f) if f.code() == Some(410)));
        assert!(matches!(event(r#"{"type":"FUTURE","object":{}}"#), Event::Unknown(t) if t == "FUTURE"));
        let busy = r#"{"type":"ERROR","object":{"kind":"Status","reason":"TooManyRequests","code":429,"details":{"retryAfterSeconds":3}}}"#;
        assert!(matches!(event(busy), Event::Error(f) if f.retry_after() == Some(Duration::from_secs(3))));
    }

    #[test]
    fn a_page_with_one_unreadable_item_keeps_the_others() {
        let page = br#"{"metadata":{"resourceVersion":"9","continue":"c"},"items":[
            {"metadata":{"name":"a","namespace":"n"},"spec":{"clusterIP":"10.0.0.1"}},
            {"metadata":{"name":"b","namespace":"n"},"spec":{"clusterIP":["not","a","string"]}},
            {"metadata":{"name":"c","namespace":"n"},"spec":null}]}"#;
        let (meta, items) = lenient_items::<Service>(page).expect("page");
        assert_eq!(meta.continue_.as_deref(), Some("c"));
        assert_eq!(items.len(), 3);
        assert!(matches!(items[0], Item::Read(_)) && matches!(items[2], Item::Read(_)));
        assert!(matches!(&items[1], Item::Unreadable { meta, .. } if meta.name.as_deref() == Some("b")));
    }
}
