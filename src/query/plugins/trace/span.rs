//! A traced query's spans as the tracer records them, before a reporter
//! writes them in its collector's format ([`super::zipkin`],
//! [`super::datadog`]).

use std::net::IpAddr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The root span's name, as CoreDNS names it.
pub const ROOT: &str = "servedns";

/// What CoreDNS tags a traced query's root span with.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryTags {
    /// The question's name, as written (`a.example.org.`).
    pub name: String,
    /// The question's type (`A`).
    pub qtype: String,
    pub tcp: bool,
    pub remote: IpAddr,
    /// The reply's rcode (`NOERROR`).
    pub rcode: String,
}

/// One span: the root (`servedns`, with the query's tags) or the child
/// of a plugin the query passed.
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    pub trace_id: u64,
    pub id: u64,
    /// The root's id, for a child.
    pub parent: Option<u64>,
    pub name: &'static str,
    /// Start, in nanoseconds since 1970.
    pub start_ns: u64,
    /// In nanoseconds (at least 1).
    pub duration_ns: u64,
    /// The root's tags (none for a child).
    pub tags: Option<Box<QueryTags>>,
}

/// A span or trace id: random, never 0 (0 is "no parent" to Datadog).
pub fn new_id() -> u64 {
    fastrand::u64(1..)
}

/// The root span of trace `trace_id`, a query that began at `begun` and
/// took `took`, tagged with `tags`, and a span for each plugin of
/// `plugins`, each the child of the one before (the first the root's), as
/// CoreDNS's chain nests them; with the root's times (the plugins' own
/// are not measured).
pub fn family(
    trace_id: u64,
    (begun, took): (SystemTime, Duration),
    tags: QueryTags,
    plugins: impl Iterator<Item = &'static str>,
) -> impl Iterator<Item = Recorded> {
    let start_ns = begun.duration_since(UNIX_EPOCH).unwrap_or_default().as_nanos() as u64;
    let duration_ns = (took.as_nanos() as u64).max(1);
    let root = Recorded {
        trace_id,
        id: trace_id,
        parent: None,
        name: ROOT,
        start_ns,
        duration_ns,
        tags: Some(Box::new(tags)),
    };
    let mut parent = trace_id;
    let children = plugins.map(move |name| {
        let id = new_id();
        let span = Recorded {
            trace_id,
            id,
            parent: Some(parent),
            name,
            start_ns,
            duration_ns,
            tags: None,
        };
        parent = id;
        span
    });
    std::iter::once(root).chain(children)
}
