//! TCP (RFC 7766): 2-byte length framing, many queries per connection,
//! pipelined. Each connection has a reader that answers each query as it
//! arrives and a writer that sends replies in the order they complete, so
//! a slow answer never holds back a fast one. Idle connections are closed
//! after [`IDLE_TIMEOUT`], a message that stalls half-read after
//! [`READ_TIMEOUT`], and at most `max_connections` are open at once.

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use socket2::{Domain, Protocol, Socket, Type};
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufWriter};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, Semaphore};

use super::defer::Sink;
use super::{Handler, Scratch};
use crate::metrics::Transport;

/// A connection with no query for this long is closed.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(10);
/// A message must arrive whole within this time once it has started.
pub const READ_TIMEOUT: Duration = Duration::from_secs(2);
/// Replies queued for one connection's writer before its reader waits.
const MAX_PENDING: usize = 64;
/// Default cap on open connections per listener.
pub const MAX_CONNECTIONS: usize = 1024;

/// Binds a TCP listener (with `SO_REUSEPORT`, so it can share a port with
/// a restarting process) on `addr`.
pub fn bind(addr: SocketAddr) -> io::Result<TcpListener> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    if addr.is_ipv6() {
        socket.set_only_v6(true)?;
    }
    socket.set_reuse_address(true)?;
    socket.set_reuse_port(true)?;
    socket.set_tcp_nodelay(true)?;
    socket.bind(&addr.into())?;
    socket.listen(1024)?;
    socket.set_nonblocking(true)?;
    TcpListener::from_std(socket.into())
}

/// Accepts connections until `stop` is set.
pub async fn serve(listener: TcpListener, handler: Arc<Handler>, max_connections: usize, stop: Arc<AtomicBool>) {
    let slots = Arc::new(Semaphore::new(max_connections));
    while !stop.load(Ordering::Relaxed) {
        let accepted = tokio::time::timeout(Duration::from_millis(200), listener.accept()).await;
        let (stream, peer) = match accepted {
            Err(_) => continue,
            Ok(Ok(c)) => c,
            Ok(Err(e)) => {
                tracing::warn!(target: "tcp", "accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let Ok(permit) = slots.clone().try_acquire_owned() else {
            handler.metrics.tcp_rejected();
            drop(stream);
            continue;
        };
        let handler = handler.clone();
        tokio::spawn(async move {
            if let Err(e) = connection(stream, peer, &handler).await {
                tracing::debug!(target: "tcp", "{peer}: {e}");
            }
            drop(permit);
        });
    }
}

async fn connection(stream: TcpStream, peer: SocketAddr, handler: &Handler) -> io::Result<()> {
    let _ = stream.set_nodelay(true);
    let (mut reader, writer) = stream.into_split();
    let (tx, mut rx) = mpsc::channel::<Vec<u8>>(MAX_PENDING);
    let writing = tokio::spawn(async move {
        let mut writer = BufWriter::new(writer);
        while let Some(reply) = rx.recv().await {
            writer.write_all(&reply).await?;
            if rx.is_empty() {
                writer.flush().await?;
            }
        }
        writer.shutdown().await
    });
    let mut scratch = Scratch::default();
    let mut buf = Vec::new();
    loop {
        let mut len = [0u8; 2];
        match tokio::time::timeout(IDLE_TIMEOUT, reader.read_exact(&mut len)).await {
            Err(_) => break,
            Ok(Err(e)) if e.kind() == io::ErrorKind::UnexpectedEof => break,
            Ok(r) => r?,
        };
        buf.resize(usize::from(u16::from_be_bytes(len)), 0);
        match tokio::time::timeout(READ_TIMEOUT, reader.read_exact(&mut buf)).await {
            Err(_) => break,
            Ok(r) => r?,
        };
        let sink = || Sink::Tcp(tx.clone());
        if !handler.handle_guarded(&buf, peer, Transport::Tcp, &mut scratch, &sink) {
            continue;
        }
        let mut frame = Vec::with_capacity(scratch.out.len() + 2);
        frame.extend_from_slice(&u16::try_from(scratch.out.len()).unwrap_or(u16::MAX).to_be_bytes());
        frame.extend_from_slice(&scratch.out);
        if tx.send(frame).await.is_err() {
            break;
        }
    }
    drop(tx);
    writing.await.map_err(io::Error::other)?
}
