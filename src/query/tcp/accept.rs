//! The accept loop's one step, shared by every stream listener (DNS over
//! TCP and TLS here, DNS over HTTPS in `serve`; the QUIC listeners wait
//! on [`stopping`] too): the next connection,
//! looking at the stop flag when [`look_at_stop_flags`] asks (a reload or a
//! shutdown set some) and every 200 ms; a failed accept (out of file
//! descriptors) is logged and retried after a pause. Once stopped, a
//! listener first takes what the kernel already queued for it: those
//! clients connected before it closed, and are served (a reload that binds
//! the address anew would otherwise reset them mid-handshake).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;

/// Wakes the accept loops to look at their stop flags.
static STOPPING: Notify = Notify::const_new();

/// Has every accept loop look at its stop flag now, not at its next
/// 200 ms look: a stopped listener closes at once, and the kernel hands
/// new connections to the other sockets of its `SO_REUSEPORT` group only.
pub fn look_at_stop_flags() {
    STOPPING.notify_waiters();
}

/// What [`look_at_stop_flags`] wakes: make it before looking at the flag
/// (a call between the two still wakes it).
pub fn stopping() -> tokio::sync::futures::Notified<'static> {
    STOPPING.notified()
}

/// The next connection on `listener`; `None` once `stop` is set and no
/// connection is queued.
pub async fn next(listener: &TcpListener, stop: &AtomicBool, kind: &str) -> Option<(TcpStream, SocketAddr)> {
    loop {
        let woken = stopping();
        if stop.load(Ordering::Relaxed) {
            return queued(listener);
        }
        let got = tokio::select! {
            biased;
            got = tokio::time::timeout(Duration::from_millis(200), listener.accept()) => got,
            _ = woken => continue,
        };
        match got {
            Err(_) => continue,
            Ok(Ok(c)) => return Some(c),
            Ok(Err(e)) => {
                tracing::warn!(target: "tcp", "{kind}: accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

/// A connection already queued on `listener`, taken without waiting (the
/// accept system call itself: the runtime may not have seen it arrive).
fn queued(listener: &TcpListener) -> Option<(TcpStream, SocketAddr)> {
    let (socket, peer) = socket2::SockRef::from(listener).accept().ok()?;
    socket.set_nonblocking(true).ok()?;
    let stream = TcpStream::from_std(socket.into()).ok()?;
    Some((stream, peer.as_socket()?))
}
