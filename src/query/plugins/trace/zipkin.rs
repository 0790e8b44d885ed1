//! Zipkin's v2 JSON (`POST /api/v2/spans`, a JSON array of spans) and
//! the reporter task: spans taken from the queue, sent in batches over a
//! plain HTTP/1.1 connection per batch.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

use super::config::TraceConfig;
use super::counters::Counters;

/// The root span's name, as CoreDNS names it.
pub const ROOT: &str = "servedns";

/// How long sending one batch may take before it counts as failed.
const SEND_TIMEOUT: Duration = Duration::from_secs(5);

/// One span as Zipkin's v2 API reads it.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Span {
    pub trace_id: String,
    pub id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    pub name: String,
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

impl Span {
    /// The root span of a query that began at `begun` and took `took`,
    /// with `tags`, and its child named after the plugin that answered.
    pub fn pair(
        cfg: &TraceConfig,
        (begun, took): (SystemTime, Duration),
        tags: [(&'static str, String); 5],
        plugin: Option<&str>,
    ) -> Vec<Span> {
        let trace_id = format!("{:016x}", fastrand::u64(1..));
        let endpoint = Endpoint {
            service_name: cfg.service.clone(),
            ipv4: cfg.local.filter(|a| a.is_ipv4()).map(|a| a.ip().to_string()),
            ipv6: cfg.local.filter(|a| a.is_ipv6()).map(|a| a.ip().to_string()),
            port: cfg.local.map(|a| a.port()).filter(|p| *p != 0),
        };
        let root = Span {
            trace_id: trace_id.clone(),
            id: trace_id,
            parent_id: None,
            name: ROOT.into(),
            kind: Some("SERVER"),
            timestamp: begun.duration_since(UNIX_EPOCH).unwrap_or_default().as_micros() as u64,
            duration: (took.as_micros() as u64).max(1),
            local_endpoint: endpoint,
            tags: tags.into_iter().collect(),
        };
        let child = plugin.map(|p| Span {
            id: format!("{:016x}", fastrand::u64(1..)),
            parent_id: Some(root.id.clone()),
            name: p.to_string(),
            kind: None,
            tags: BTreeMap::new(),
            ..root.clone()
        });
        std::iter::once(root).chain(child).collect()
    }
}

/// How a batch is written: Zipkin's JSON array, or another collector's.
pub type Encode = fn(&[Span], &TraceConfig) -> serde_json::Result<Vec<u8>>;

/// Zipkin's v2 JSON: the spans as one array.
pub fn json(spans: &[Span], _: &TraceConfig) -> serde_json::Result<Vec<u8>> {
    serde_json::to_vec(spans)
}

/// The reporter: batches from `queue` written by `encode` and sent to the
/// collector until the queue closes (the block's tracer dropped by a
/// reload), then what is left.
pub async fn report(mut queue: mpsc::Receiver<Span>, cfg: Arc<TraceConfig>, counters: Arc<Counters>, encode: Encode) {
    let mut batch: Vec<Span> = Vec::with_capacity(cfg.batch_size);
    loop {
        let Some(first) = queue.recv().await else { return };
        batch.push(first);
        let due = tokio::time::sleep(cfg.batch_interval);
        tokio::pin!(due);
        let mut open = true;
        while open && batch.len() < cfg.batch_size {
            tokio::select! {
                got = queue.recv() => match got {
                    Some(span) => batch.push(span),
                    None => open = false,
                },
                () = &mut due => break,
            }
        }
        let n = batch.len() as u64;
        let sent = match encode(&batch, &cfg) {
            Ok(body) => send(&cfg.endpoint, body, cfg.datadog).await,
            Err(e) => Err(e.to_string()),
        };
        match sent {
            Ok(()) => counters.sent.fetch_add(n, Ordering::Relaxed),
            Err(e) => {
                tracing::debug!(target: "trace", "{n} spans to {} not sent: {e}", cfg.endpoint);
                counters.dropped_send.fetch_add(n, Ordering::Relaxed)
            }
        };
        batch.clear();
        if !open {
            return;
        }
    }
}

/// POSTs (a Datadog agent: PUTs) the JSON `body` to `endpoint`
/// (`http://HOST[:PORT]/PATH`); any 2xx status is success.
pub async fn send(endpoint: &str, body: Vec<u8>, put: bool) -> Result<(), String> {
    let uri: http::Uri = endpoint.parse().map_err(|e| format!("{e}"))?;
    let host = uri
        .host()
        .ok_or("no host")?
        .trim_start_matches('[')
        .trim_end_matches(']');
    let port = uri.port_u16().unwrap_or(80);
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    let head = format!(
        "{} {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        if put { "PUT" } else { "POST" },
        uri.authority().map_or(host, |a| a.as_str()),
        body.len()
    );
    let exchange = async {
        let mut conn = tokio::net::TcpStream::connect((host, port)).await?;
        conn.write_all(head.as_bytes()).await?;
        conn.write_all(&body).await?;
        let mut status = [0u8; 12];
        conn.read_exact(&mut status).await?;
        Ok::<_, std::io::Error>(status)
    };
    let status = tokio::time::timeout(SEND_TIMEOUT, exchange)
        .await
        .map_err(|_| "timed out".to_string())?
        .map_err(|e| e.to_string())?;
    match &status[..10] {
        [b'H', b'T', b'T', b'P', b'/', _, _, _, b' ', b'2'] => Ok(()),
        _ => Err(format!("collector answered {:?}", String::from_utf8_lossy(&status))),
    }
}
