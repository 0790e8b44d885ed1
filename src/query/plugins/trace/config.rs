//! What a block's `trace` reads, and CoreDNS's defaults.

use std::net::SocketAddr;
use std::time::Duration;

/// What a block's `trace` reads.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceConfig {
    /// The collector's URL (`http://HOST:PORT/api/v2/spans`, or a Datadog
    /// agent's `http://HOST:PORT/v0.3/traces`).
    pub endpoint: String,
    /// `trace datadog`: spans go to a Datadog agent.
    pub datadog: bool,
    /// `datadog_analytics_rate`, 0 to 1.
    pub analytics_rate: Option<f64>,
    /// One query in `every` is traced (0: none).
    pub every: u64,
    pub service: String,
    /// `client_server`: accepted and printed; a root span shares no
    /// client's span, so it changes nothing in what is sent.
    pub client_server: bool,
    /// Spans waiting to be sent, at most.
    pub backlog: usize,
    pub batch_size: usize,
    pub batch_interval: Duration,
    /// The block's first bound address and port (the spans' local endpoint).
    pub local: Option<SocketAddr>,
}

impl Default for TraceConfig {
    fn default() -> Self {
        TraceConfig {
            endpoint: "http://localhost:9411/api/v2/spans".into(),
            datadog: false,
            analytics_rate: None,
            every: 1,
            service: "coredns".into(),
            client_server: false,
            backlog: 1000,
            batch_size: 100,
            batch_interval: Duration::from_secs(1),
            local: None,
        }
    }
}
