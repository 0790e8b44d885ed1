//! `trace datadog AGENT`: the same spans sent to a Datadog agent's trace
//! intake (`PUT /v0.3/traces`, which takes JSON: an array of traces, each
//! an array of spans), as CoreDNS's dd-trace-go tracer sends them: IDs as
//! 64-bit numbers, times in nanoseconds, the span type `dns`, tags named
//! `coredns.io@name` (Datadog reads `/` as a path), and
//! `datadog_analytics_rate` as the `_dd1.sr.eausr` metric of each span.

use std::collections::BTreeMap;

use serde::Serialize;

use super::config::TraceConfig;
use super::zipkin::Span;

/// The agent's address when the Corefile names none (CoreDNS's default).
pub const AGENT: &str = "localhost:8126";
/// The agent's trace intake.
const PATH: &str = "/v0.3/traces";

/// One span as the agent's v0.3 JSON intake reads it.
#[derive(Debug, Serialize, PartialEq)]
pub struct DdSpan {
    pub trace_id: u64,
    pub span_id: u64,
    pub parent_id: u64,
    pub name: String,
    pub resource: String,
    pub service: String,
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// Start, in nanoseconds since 1970.
    pub start: u64,
    /// In nanoseconds.
    pub duration: u64,
    pub error: i32,
    pub meta: BTreeMap<String, String>,
    pub metrics: BTreeMap<&'static str, f64>,
}

/// The agent's intake URL for `ep` as a Corefile writes it (`HOST`,
/// `HOST:PORT` or `http://HOST:PORT`): the port is 8126 when not given.
/// `None` for another scheme than http.
pub fn endpoint(ep: &str) -> Option<String> {
    let rest = match ep.split_once("://") {
        Some(("http", rest)) => rest,
        Some(_) => return None,
        None => ep,
    };
    let agent = rest.split('/').next().unwrap_or(rest);
    let has_port = match agent.rsplit_once(':') {
        Some((host, port)) => (!host.contains(':') || host.ends_with(']')) && port.parse::<u16>().is_ok(),
        None => false,
    };
    match has_port {
        true => Some(format!("http://{agent}{PATH}")),
        false => Some(format!("http://{agent}:8126{PATH}")),
    }
}

/// The agent's `HOST:PORT` in an intake URL `endpoint` made.
pub fn agent(url: &str) -> &str {
    url.trim_start_matches("http://").trim_end_matches(PATH)
}

/// `spans` (roots and their children, in order) as the agent's JSON body:
/// one trace per root (a [`super::zipkin::Encode`]).
pub fn body(spans: &[Span], cfg: &TraceConfig) -> serde_json::Result<Vec<u8>> {
    let rate = cfg.analytics_rate;
    let mut traces: Vec<Vec<DdSpan>> = Vec::new();
    for s in spans {
        let span = convert(s, rate);
        match traces.last_mut() {
            Some(t) if t.first().is_some_and(|r| r.trace_id == span.trace_id) => t.push(span),
            _ => traces.push(vec![span]),
        }
    }
    serde_json::to_vec(&traces)
}

fn convert(s: &Span, rate: Option<f64>) -> DdSpan {
    let id = |hex: &str| u64::from_str_radix(hex, 16).unwrap_or(0);
    let mut metrics = BTreeMap::from([("_sampling_priority_v1", 1.0)]);
    if s.parent_id.is_none() {
        metrics.insert("_top_level", 1.0);
    }
    if let Some(rate) = rate {
        metrics.insert("_dd1.sr.eausr", rate);
    }
    DdSpan {
        trace_id: id(&s.trace_id),
        span_id: id(&s.id),
        parent_id: s.parent_id.as_deref().map_or(0, id),
        name: s.name.clone(),
        resource: s.name.clone(),
        service: s.local_endpoint.service_name.clone(),
        kind: "dns",
        start: s.timestamp.saturating_mul(1000),
        duration: s.duration.saturating_mul(1000),
        error: 0,
        meta: s.tags.iter().map(|(k, v)| (k.replace('/', "@"), v.clone())).collect(),
        metrics,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_addresses_as_corefiles_write_them() {
        let rows = [
            ("localhost", Some("http://localhost:8126/v0.3/traces")),
            ("localhost:8126", Some("http://localhost:8126/v0.3/traces")),
            ("http://localhost:8127", Some("http://localhost:8127/v0.3/traces")),
            ("[::1]:9000", Some("http://[::1]:9000/v0.3/traces")),
            ("[::1]", Some("http://[::1]:8126/v0.3/traces")),
            ("https://agent:8126", None),
        ];
        for (ep, want) in rows {
            let got = endpoint(ep);
            assert_eq!(got.as_deref(), want, "{ep}");
            if let Some(url) = got {
                assert_eq!(endpoint(agent(&url)), Some(url.clone()), "{ep}: printed and read again");
            }
        }
    }
}
