//! Zipkin's v2 JSON (`POST /api/v2/spans`, a JSON array of spans).

use std::collections::BTreeMap;

use serde::Serialize;

use super::config::TraceConfig;
use super::span::Recorded;

/// One span as Zipkin's v2 API reads it.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Span {
    pub trace_id: String,
    pub id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    pub name: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<&'static str>,
    /// Start, in microseconds since 1970.
    pub timestamp: u64,
    /// In microseconds (at least 1).
    pub duration: u64,
    pub local_endpoint: Endpoint,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub tags: BTreeMap<&'static str, String>,
}

/// A span's local endpoint: the service, and the block's address when
/// it binds one.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Endpoint {
    pub service_name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ipv4: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ipv6: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
}

/// `spans` as the JSON array a Zipkin collector takes.
pub fn encode(cfg: &TraceConfig, spans: &[Recorded]) -> serde_json::Result<Vec<u8>> {
    let endpoint = Endpoint {
        service_name: cfg.service.clone(),
        ipv4: cfg.local.filter(|a| a.is_ipv4()).map(|a| a.ip().to_string()),
        ipv6: cfg.local.filter(|a| a.is_ipv6()).map(|a| a.ip().to_string()),
        port: cfg.local.map(|a| a.port()).filter(|p| *p != 0),
    };
    let spans: Vec<Span> = spans.iter().map(|s| span(s, &endpoint)).collect();
    serde_json::to_vec(&spans)
}

fn span(s: &Recorded, endpoint: &Endpoint) -> Span {
    let tags = s.tags.as_deref().map_or_else(BTreeMap::new, |t| {
        BTreeMap::from([
            ("coredns.io/name", t.name.clone()),
            ("coredns.io/type", t.qtype.clone()),
            ("coredns.io/proto", if t.tcp { "tcp" } else { "udp" }.to_string()),
            ("coredns.io/remote", t.remote.to_string()),
            ("coredns.io/rcode", t.rcode.clone()),
        ])
    });
    Span {
        trace_id: format!("{:016x}", s.trace_id),
        id: format!("{:016x}", s.id),
        parent_id: s.parent.map(|p| format!("{p:016x}")),
        name: s.name,
        kind: s.parent.is_none().then_some("SERVER"),
        timestamp: s.start_ns / 1000,
        duration: (s.duration_ns / 1000).max(1),
        local_endpoint: endpoint.clone(),
        tags,
    }
}
