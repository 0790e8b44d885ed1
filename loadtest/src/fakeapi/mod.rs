//! A faithful fake of the Kubernetes API server's read side, served over
//! loopback HTTP so that kube's real client (and `kubectl --server`) run
//! against it end to end.
//!
//! ```text
//! GET /api/v1/{services,namespaces,pods}             list (limit, continue, labelSelector,
//! GET /apis/discovery.k8s.io/v1/endpointslices        fieldSelector, resourceVersion)
//! GET /apis/multicluster.x-k8s.io/v1alpha1/serviceimports   (404 while the MCS CRD is "not installed")
//! GET /api/v1/namespaces/{ns}/{services,pods}          the same, one namespace
//! GET ...?watch=true&resourceVersion=RV                 newline-delimited JSON events: ADDED,
//!                                                       MODIFIED, DELETED, BOOKMARK; ERROR 410
//!                                                       Expired when RV is older than the history
//! Accept: ...;as=PartialObjectMetadataList;...         metadata-only lists and watches
//! GET /api, /api/v1, /apis, /apis/discovery.k8s.io/v1, /version   discovery for kubectl
//! ```
//!
//! Tests drive it through [`FakeApi`]: put and delete objects, compact the
//! history, cut every watch stream, change objects behind the watches'
//! backs, and inject outages or error statuses.

mod http;
mod select;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::{json, Value};
use tokio::sync::broadcast;

/// The resources the fake serves: `(plural, apiVersion, kind, namespaced)`.
pub const RESOURCES: [(&str, &str, &str, bool); 5] = [
    ("namespaces", "v1", "Namespace", false),
    ("services", "v1", "Service", true),
    ("endpointslices", "discovery.k8s.io/v1", "EndpointSlice", true),
    ("pods", "v1", "Pod", true),
    (
        "serviceimports",
        "multicluster.x-k8s.io/v1alpha1",
        "ServiceImport",
        true,
    ),
];

/// One change, as watch streams report it.
#[derive(Debug, Clone)]
pub struct Event {
    pub resource: &'static str,
    pub kind: &'static str,
    pub object: Value,
    pub rv: u64,
}

/// A fault to inject into every request from now on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Fault {
    #[default]
    None,
    /// Answer every request with this HTTP status (403, 429, 500, 503...).
    Status(u16),
    /// Accept connections and close them at once (an API server outage).
    Outage,
    /// Delay every list response by this many milliseconds.
    SlowList(u64),
    /// Watches stall: open ones and new ones send nothing (no event, no
    /// bookmark) and ignore `timeoutSeconds`, like a connection to a hung
    /// API server; lists still work. Once healed, a stalled watch is
    /// closed, so its client resumes from its last resourceVersion.
    Silent,
}

#[derive(Default)]
pub(crate) struct State {
    /// `resource` → `namespace/name` → object.
    objects: BTreeMap<&'static str, BTreeMap<String, Value>>,
    /// The same objects serialized once, for plain lists (serializing every
    /// page again was most of the fake's own cost in a large sync).
    texts: BTreeMap<&'static str, BTreeMap<String, Arc<str>>>,
    rv: u64,
    /// Events after the compaction point, oldest first.
    history: Vec<Event>,
    /// Watches may start at this resourceVersion or later.
    compacted: u64,
    fault: Fault,
    /// ServiceImports answer 404, as when the MCS CRDs are not installed.
    pub(crate) mcs_crd_missing: bool,
    /// Bumped to end every open watch stream.
    stream_epoch: u64,
    /// Requests served: lists and watches.
    lists: u64,
    watches: u64,
    /// Every request received, faults included.
    requests: u64,
}

/// The handle tests hold; cheap to clone.
#[derive(Clone)]
pub struct FakeApi {
    state: Arc<Mutex<State>>,
    events: broadcast::Sender<Event>,
    pub addr: SocketAddr,
}

fn key_of(object: &Value) -> String {
    let meta = &object["metadata"];
    format!(
        "{}/{}",
        meta["namespace"].as_str().unwrap_or(""),
        meta["name"].as_str().unwrap_or("")
    )
}

pub(crate) fn resource(plural: &str) -> Option<(&'static str, &'static str, &'static str, bool)> {
    RESOURCES.iter().copied().find(|r| r.0 == plural)
}

impl FakeApi {
    /// Starts serving on `127.0.0.1:0` on the current tokio runtime.
    pub async fn start() -> std::io::Result<FakeApi> {
        Self::start_on("127.0.0.1:0").await
    }

    /// Starts serving on `addr` (keep it on loopback).
    pub async fn start_on(addr: &str) -> std::io::Result<FakeApi> {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let (events, _) = broadcast::channel(65_536);
        let api = FakeApi {
            state: Arc::default(),
            events,
            addr: listener.local_addr()?,
        };
        tokio::spawn(http::serve(listener, api.clone()));
        Ok(api)
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub(crate) fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub(crate) fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.events.subscribe()
    }

    /// Creates or replaces an object of `plural` (ADDED or MODIFIED); its
    /// `kind`, `apiVersion` and `metadata.resourceVersion` are filled in.
    /// Returns the new resourceVersion.
    pub fn put(&self, plural: &str, object: Value) -> u64 {
        self.write(plural, Some(object), None, true)
    }

    /// Creates or replaces an object without telling any watch: no event,
    /// no history (a watch cache that missed a change). Only a list sees it.
    pub fn put_unannounced(&self, plural: &str, object: Value) {
        self.write(plural, Some(object), None, false);
    }

    /// Deletes an object (a DELETED event); false if it did not exist.
    pub fn delete(&self, plural: &str, namespace: &str, name: &str) -> bool {
        self.write(plural, None, Some(format!("{namespace}/{name}")), true) != 0
    }

    /// Deletes an object without telling any watch (see
    /// [`FakeApi::put_unannounced`]); false if it did not exist.
    pub fn delete_unannounced(&self, plural: &str, namespace: &str, name: &str) -> bool {
        self.write(plural, None, Some(format!("{namespace}/{name}")), false) != 0
    }

    /// Puts `object`, or deletes the object at `key`; records and sends the
    /// event when `announce`. Returns the new resourceVersion (0: nothing
    /// to delete, or an unknown resource).
    fn write(&self, plural: &str, object: Option<Value>, key: Option<String>, announce: bool) -> u64 {
        let Some((plural, api_version, kind, _)) = resource(plural) else {
            return 0;
        };
        let mut s = self.state();
        let objects = s.objects.entry(plural).or_default();
        let (mut object, kind_of_event) = match (object, key) {
            (Some(mut object), _) => {
                object["apiVersion"] = json!(api_version);
                object["kind"] = json!(kind);
                let existed = objects.contains_key(&key_of(&object));
                (object, if existed { "MODIFIED" } else { "ADDED" })
            }
            (None, Some(key)) => match objects.remove(&key) {
                Some(object) => {
                    s.texts.entry(plural).or_default().remove(&key);
                    (object, "DELETED")
                }
                None => return 0,
            },
            (None, None) => return 0,
        };
        s.rv += 1;
        let rv = s.rv;
        object["metadata"]["resourceVersion"] = json!(rv.to_string());
        if kind_of_event != "DELETED" {
            if object["metadata"]["uid"].is_null() {
                object["metadata"]["uid"] = json!(format!("uid-{rv}"));
            }
            let text: Arc<str> = Arc::from(object.to_string());
            s.texts.entry(plural).or_default().insert(key_of(&object), text);
            let objects = s.objects.entry(plural).or_default();
            objects.insert(key_of(&object), object.clone());
        }
        if announce {
            let event = Event {
                resource: plural,
                kind: kind_of_event,
                object,
                rv,
            };
            s.history.push(event.clone());
            drop(s);
            let _ = self.events.send(event);
        }
        rv
    }

    /// An API server restart after its history was compacted: every watch
    /// stream ends, and every client's resourceVersion is now too old, so
    /// resuming gets ERROR 410 Expired and must relist.
    pub fn restart(&self) {
        let mut s = self.state();
        s.rv += 1;
        s.compacted = s.rv;
        s.history.clear();
        s.stream_epoch += 1;
    }

    /// Forgets the event history: watches from an older resourceVersion
    /// get ERROR 410 Expired and must relist.
    pub fn compact(&self) {
        let mut s = self.state();
        s.compacted = s.rv;
        s.history.clear();
    }

    /// Ends every open watch stream (clients reconnect from their last
    /// resourceVersion).
    pub fn drop_streams(&self) {
        self.state().stream_epoch += 1;
    }

    /// Whether the MCS CRDs are installed (they are at start): without
    /// them `serviceimports` is an unknown resource (404).
    pub fn set_mcs_crd(&self, installed: bool) {
        self.state().mcs_crd_missing = !installed;
    }

    /// Injects `fault` into every following request (`Fault::None` heals).
    pub fn set_fault(&self, fault: Fault) {
        let mut s = self.state();
        s.fault = fault;
        if fault != Fault::None {
            s.stream_epoch += 1;
        }
    }

    /// How many requests arrived, failed ones included (for assertions
    /// about retry rates).
    pub fn requests(&self) -> u64 {
        self.state().requests
    }

    /// How many lists and watches were served (for assertions about
    /// relists).
    pub fn counts(&self) -> (u64, u64) {
        let s = self.state();
        (s.lists, s.watches)
    }
}
