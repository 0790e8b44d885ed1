//! The accept loop's one step, shared by every stream listener (DNS over
//! TCP and TLS here, DNS over HTTPS in `serve`): the next connection,
//! looking at the stop flag every 200 ms; a failed accept (out of file
//! descriptors) is logged and retried after a pause.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};

/// The next connection on `listener`; `None` once `stop` is set.
pub async fn next(listener: &TcpListener, stop: &AtomicBool, kind: &str) -> Option<(TcpStream, SocketAddr)> {
    while !stop.load(Ordering::Relaxed) {
        match tokio::time::timeout(Duration::from_millis(200), listener.accept()).await {
            Err(_) => continue,
            Ok(Ok(c)) => return Some(c),
            Ok(Err(e)) => {
                tracing::warn!(target: "tcp", "{kind}: accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
    None
}
