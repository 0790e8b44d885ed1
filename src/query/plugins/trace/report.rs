//! The reporter task: spans taken from the tracer's queue, sent in
//! batches, each over a plain HTTP/1.1 connection of its own, written in
//! the collector's format (Zipkin's v2 JSON POSTed, or a Datadog agent's
//! v0.3 JSON PUT).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

use super::config::{Kind, TraceConfig};
use super::counters::Counters;
use super::span::Recorded;
use super::{datadog, zipkin};

/// How long sending one batch may take before it counts as failed.
const SEND_TIMEOUT: Duration = Duration::from_secs(5);

/// The reporter: batches from `queue` sent to the collector until the
/// queue closes (the block's tracer dropped by a reload), then what is
/// left.
pub async fn report(mut queue: mpsc::Receiver<Recorded>, cfg: Arc<TraceConfig>, counters: Arc<Counters>) {
    let mut batch: Vec<Recorded> = Vec::with_capacity(cfg.batch_size);
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
        match send(&cfg, &batch).await {
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

/// Sends `spans` to the collector in its format; any 2xx status is success.
pub async fn send(cfg: &TraceConfig, spans: &[Recorded]) -> Result<(), String> {
    let (method, body, extra) = match cfg.kind {
        Kind::Zipkin => ("POST", zipkin::encode(cfg, spans), String::new()),
        Kind::Datadog => {
            let extra = format!(
                "Datadog-Meta-Lang: rust\r\nDatadog-Meta-Tracer-Version: clusterdns/{}\r\nX-Datadog-Trace-Count: {}\r\n",
                env!("CARGO_PKG_VERSION"),
                datadog::traces(spans)
            );
            ("PUT", datadog::encode(cfg, spans), extra)
        }
    };
    let body = body.map_err(|e| e.to_string())?;
    let uri: http::Uri = cfg.endpoint.parse().map_err(|e| format!("{e}"))?;
    let host = uri
        .host()
        .ok_or("no host")?
        .trim_start_matches('[')
        .trim_end_matches(']');
    let port = uri.port_u16().unwrap_or(80);
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n",
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
