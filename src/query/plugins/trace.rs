//! `trace` (CoreDNS's `plugin/trace` with its Zipkin and Datadog
//! reporters): one query in `every` of a block becomes a trace, a root
//! span `servedns` tagged as CoreDNS tags it (`coredns.io/name`, `/type`,
//! `/proto`, `/remote`, `/rcode`; `coredns.io@name`... for Datadog), and
//! a span for each plugin of the block after `trace` up to the one that
//! wrote the answer, each the child of the one before, as CoreDNS's
//! chain makes them (read off the block's plugin order when the span is
//! built: nothing is recorded per plugin while the query runs; each
//! carries the whole query's times). Spans are sent as Zipkin v2 JSON to the collector's
//! `/api/v2/spans` ([`zipkin`]), or as a Datadog agent's v0.3 JSON to its
//! `/v0.3/traces` ([`datadog`]). The trace's id is the metadata label
//! `trace/traceid` of the query's `log` line.
//!
//! Off the query path: the worker (or the forwarding task) that tells of
//! a served query (`settle::record`) counts it ([`Tracer::sample`]), and
//! for a sampled one builds the spans ([`span`]) and offers them to a
//! bounded queue (`zipkin_max_backlog_size`); a full queue drops the span
//! (`clusterdns_trace_spans_dropped_total{reason="backlog"}`). The
//! reporter task ([`report`]) sends a batch when it holds
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
