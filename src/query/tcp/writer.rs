//! A TCP (or TLS) connection's writer: a task of its own that writes the
//! replies the reader hands it, batched, each write within `timeouts {
//! write }`, and shuts the connection's sending side when the reader is
//! done. Made at a connection's first query, so an idle one holds no task.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

use super::conns::Conn;
use crate::metrics::TcpClose;
use crate::query::limits::timeouts::TcpLimits;

/// Replies queued for one connection's writer before its reader waits.
const MAX_PENDING: usize = 64;
/// Replies written to the socket in one call, at most (bytes).
const BATCH: usize = 16 * 1024;

/// The connection's writer as a task of its own, fed by the channel
/// returned beside it (`writer` taken: made once per connection).
pub(super) fn writer_task<W: AsyncWrite + Unpin + Send + 'static>(
    writer: &mut Option<W>,
    limits: &TcpLimits,
    conn: &Arc<Conn>,
) -> (mpsc::Sender<Vec<u8>>, tokio::task::JoinHandle<()>) {
    let (tx, rx) = mpsc::channel::<Vec<u8>>(MAX_PENDING);
    let task = match writer.take() {
        Some(w) => tokio::spawn(write(w, rx, limits.write, conn.clone())),
        None => tokio::spawn(async {}), // never: the link is made once
    };
    (tx, task)
}

/// Writes replies as they come, batching those already queued; a batch
/// not taken within `timeout` closes the connection (the reader learns
/// why through `conn`).
async fn write<W: AsyncWrite + Unpin>(
    mut writer: W,
    mut rx: mpsc::Receiver<Vec<u8>>,
    timeout: Duration,
    conn: Arc<Conn>,
) {
    while let Some(mut batch) = rx.recv().await {
        while batch.len() < BATCH {
            match rx.try_recv() {
                Ok(more) => batch.extend_from_slice(&more),
                Err(_) => break,
            }
        }
        // Flushed: a TLS session may hold what the socket did not take.
        let written = async {
            writer.write_all(&batch).await?;
            writer.flush().await
        };
        match tokio::time::timeout(timeout, written).await {
            Ok(Ok(())) => {}
            Ok(Err(_)) => return conn.close(TcpClose::Client),
            Err(_) => return conn.close(TcpClose::Write),
        }
    }
    let _ = writer.shutdown().await;
}
