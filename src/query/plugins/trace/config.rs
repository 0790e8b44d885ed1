//! What a block's `trace` reads, and CoreDNS's defaults.

use std::net::SocketAddr;
use std::time::Duration;

/// Where spans go, and in which format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Zipkin's v2 JSON, POSTed to the collector's URL.
    Zipkin,
    /// A Datadog agent's trace API (`PUT /v0.3/traces`, JSON).
    Datadog,
}

/// What a block's `trace` reads.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceConfig {
    pub kind: Kind,
    /// The collector's URL (`http://HOST:PORT/api/v2/spans`, or the
    /// agent's `http://HOST:PORT/v0.3/traces`).
    pub endpoint: String,
    /// One query in `every` is traced (0: none).
    pub every: u64,
    pub service: String,
    /// `client_server`: accepted and printed; a root span shares no
    /// client's span, so it changes nothing in what is sent.
    pub client_server: bool,
    /// `datadog_analytics_rate` (0 to 1; 0: not set on the spans).
    pub analytics_rate: f64,
    /// Spans waiting to be sent, at most.
    pub backlog: usize,
    pub batch_size: usize,
    pub batch_interval: Duration,
    /// The block's first bound address and port (the spans' local endpoint).
    pub local: Option<SocketAddr>,
    /// The block's plugins after `trace`, in the order a query passes them
    /// (each a span, the child of the one before, as CoreDNS's chain).
    pub passes: Vec<&'static str>,
}

impl Default for TraceConfig {
    fn default() -> Self {
        TraceConfig {
            kind: Kind::Zipkin,
            endpoint: "http://localhost:9411/api/v2/spans".into(),
            every: 1,
            service: "coredns".into(),
            client_server: false,
            analytics_rate: 0.0,
            backlog: 1000,
            batch_size: 100,
            batch_interval: Duration::from_secs(1),
            local: None,
            passes: Vec::new(),
        }
    }
}
