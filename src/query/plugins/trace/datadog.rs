//! A Datadog agent's trace API, version 0.3 in JSON (`PUT /v0.3/traces`,
//! `Content-Type: application/json`): an array of traces, each an array
//! of spans with 64-bit ids, nanosecond times and string tags (`meta`),
//! as the agent's receiver decodes them. Tags are named as CoreDNS names
//! them for Datadog (`coredns.io@name`, ...); a span's resource is its
//! name (`servedns` for the root), as CoreDNS's dd-trace-go leaves it: the
//! question is in the tags, and one resource per query name would be a
//! resource per name in Datadog (its cardinality, and its bill).

use std::collections::BTreeMap;

use serde::Serialize;

use super::config::TraceConfig;
use super::span::Recorded;

/// The agent's trace endpoint under its address.
pub const PATH: &str = "/v0.3/traces";

/// The agent's default address (CoreDNS's `localhost:8126`).
pub const DEFAULT: &str = "localhost:8126";

/// One span as the agent's v0.3 API reads it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Span {
    pub trace_id: u64,
    pub span_id: u64,
    /// 0 for the root.
    pub parent_id: u64,
    pub name: &'static str,
    pub resource: String,
    pub service: String,
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// Nanoseconds since 1970.
    pub start: u64,
    pub duration: u64,
    pub error: i32,
    pub meta: BTreeMap<&'static str, String>,
    pub metrics: BTreeMap<&'static str, f64>,
}

/// The agent's URL for `ep` (`HOST[:PORT]` or `http://HOST[:PORT]`, as
/// CoreDNS's tracer takes it; no port: the agent's 8126).
pub fn url(ep: &str) -> String {
    let host = ep.strip_prefix("http://").unwrap_or(ep).trim_end_matches('/');
    let has_port = match host.rsplit_once(':') {
        Some((h, p)) => p.parse::<u16>().is_ok() && (!h.contains(':') || h.ends_with(']')),
        None => false,
    };
    match has_port {
        true => format!("http://{host}{PATH}"),
        false => format!("http://{host}:8126{PATH}"),
    }
}

/// `spans` as the agent's JSON: grouped by trace, in the order they came.
pub fn encode(cfg: &TraceConfig, spans: &[Recorded]) -> serde_json::Result<Vec<u8>> {
    let mut traces: Vec<Vec<Span>> = Vec::new();
    for s in spans {
        let span = span(cfg, s);
        match traces.iter_mut().find(|t| t[0].trace_id == s.trace_id) {
            Some(t) => t.push(span),
            None => traces.push(vec![span]),
        }
    }
    serde_json::to_vec(&traces)
}

/// How many traces `spans` hold (the agent's `X-Datadog-Trace-Count`).
pub fn traces(spans: &[Recorded]) -> usize {
    spans.iter().filter(|s| s.parent.is_none()).count()
}

fn span(cfg: &TraceConfig, s: &Recorded) -> Span {
    let (mut meta, mut metrics) = (BTreeMap::new(), BTreeMap::new());
    let resource = s.name.to_string();
    let mut error = 0;
    if let Some(t) = s.tags.as_deref() {
        meta.insert("coredns.io@name", t.name.clone());
        meta.insert("coredns.io@type", t.qtype.clone());
        meta.insert("coredns.io@proto", if t.tcp { "tcp" } else { "udp" }.to_string());
        meta.insert("coredns.io@remote", t.remote.to_string());
        meta.insert("coredns.io@rcode", t.rcode.clone());
        if t.rcode == "SERVFAIL" {
            error = 1;
            meta.insert("error.type", "dns_error".to_string());
        }
        // kept by the agent's sampler: the tracer decided (`every`)
        metrics.insert("_sampling_priority_v1", 1.0);
        if cfg.analytics_rate > 0.0 {
            metrics.insert("_dd1.sr.eausr", cfg.analytics_rate);
        }
    }
    Span {
        trace_id: s.trace_id,
        span_id: s.id,
        parent_id: s.parent.unwrap_or(0),
        name: s.name,
        resource,
        service: cfg.service.clone(),
        kind: "dns",
        start: s.start_ns,
        duration: s.duration_ns,
        error,
        meta,
        metrics,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn agent_urls_as_coredns_endpoints_name_it() {
        for (ep, want) in [
            ("localhost", "http://localhost:8126/v0.3/traces"),
            ("localhost:8126", "http://localhost:8126/v0.3/traces"),
            ("http://localhost:8127", "http://localhost:8127/v0.3/traces"),
            ("[::1]:9000", "http://[::1]:9000/v0.3/traces"),
            ("[::1]", "http://[::1]:8126/v0.3/traces"),
        ] {
            assert_eq!(super::url(ep), want, "{ep}");
        }
    }
}
