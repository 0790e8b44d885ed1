//! `trace` (CoreDNS's `plugin/trace` with its Zipkin reporter): one query
//! in `every` of a block becomes a Zipkin span, `servedns` of kind
//! SERVER, tagged as CoreDNS tags it (`coredns.io/name`, `/type`,
//! `/proto`, `/remote`, `/rcode`), with a child span named after the
//! plugin that wrote the answer (`kubernetes`, `forward`, ...) where
//! CoreDNS has one span per plugin the query passed. Spans are sent as
//! Zipkin v2 JSON, batched, to the collector's `/api/v2/spans`.
//!
//! Off the query path: the worker (or the forwarding task) that tells of
//! a served query ([`Tracer::served`], from `settle::record`) counts it,
//! and for a sampled one builds the span and offers it to a bounded queue
//! (`zipkin_max_backlog_size`); a full queue drops the span
//! (`clusterdns_trace_spans_dropped_total{reason="backlog"}`). The
//! reporter task ([`zipkin`]) sends a batch when it holds
//! `zipkin_max_batch_size` spans or `zipkin_max_batch_interval` after its
//! first; a batch the collector does not take is dropped and counted
//! (`reason="send"`). A block without `trace` has no tracer: the router
//! holds none for its zones.

pub mod config;
pub mod counters;
pub mod datadog;
pub mod report;
pub mod setup;
pub mod span;
pub mod tracer;
pub mod zipkin;

pub use config::TraceConfig;
pub use counters::{Counters, FAMILIES};
pub use tracer::Tracer;
