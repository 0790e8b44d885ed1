//! DNS over TLS to one upstream (RFC 7858): one TLS connection kept open
//! and shared by every query, pipelined (RFC 7766: queries written as they
//! come, answers matched by ID in any order), closed when idle for
//! `expire` or older than `max_age`, and opened again on the next query.
//!
//! ```text
//!  exchange ─► slot (open connection, or connect + handshake) ─► ask
//!  ask: free ID on this connection ─► frame ─► channel ─┐
//!  connection task: write frames ◄──────────────────────┘
//!                   read frames ─► pending[ID] ─► the asker
//! ```
//!
//! The server certificate is always verified (the CA of `tls`, else the
//! system roots) against the upstream's server name; a failed handshake is
//! an exchange error like a timeout (the query goes to the next upstream or
//! gets SERVFAIL), counted, and logged once until a handshake succeeds
//! again. There is no fallback to plain DNS.

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hickory_proto::op::{Message, Query};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot};
use tokio_rustls::TlsConnector;

use super::exchange::{matching, ExchangeError, Handshake};
use crate::query::forward::setup::ForwardConfig;

/// Waiters by the ID their query carries on the connection.
type Pending = Arc<Mutex<HashMap<u16, oneshot::Sender<Vec<u8>>>>>;

/// The TLS side of one upstream.
pub struct Dot {
    pub tls: Handshake,
    slot: tokio::sync::Mutex<Option<Arc<Conn>>>,
}

/// One open TLS connection and its queries in flight.
struct Conn {
    frames: mpsc::UnboundedSender<Vec<u8>>,
    pending: Pending,
    closed: Arc<AtomicBool>,
    opened: Instant,
    used: Mutex<Instant>,
    task: tokio::task::AbortHandle,
}

impl Drop for Conn {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Dot {
    /// `None` when `name` is not a valid DNS name or IP address (the
    /// config checked it: never on a valid config).
    pub fn new(addr: SocketAddr, name: &str, config: Arc<rustls::ClientConfig>) -> Option<Dot> {
        let label = format!("tls://{addr} (server name {name:?})");
        Some(Dot {
            tls: Handshake::new(addr, name, TlsConnector::from(config), label)?,
            slot: tokio::sync::Mutex::new(None),
        })
    }

    /// Asks `request` (ID `id`) on the shared connection; once more on a
    /// new one when a reused connection turns out closed.
    pub async fn exchange(
        &self,
        request: &[u8],
        id: u16,
        query: &Query,
        cfg: &ForwardConfig,
    ) -> Result<Message, ExchangeError> {
        super::exchange::once_more(
            |renew| self.conn(cfg, renew),
            |c| async move { c.ask(request, id, query).await },
        )
        .await
    }

    /// The open connection (and whether it was just opened); a new one
    /// when there is none, it closed, it idled past `expire` or aged past
    /// `max_age`, or `renew` asks for one.
    async fn conn(&self, cfg: &ForwardConfig, renew: bool) -> Result<(Arc<Conn>, bool), ExchangeError> {
        let mut slot = self.slot.lock().await;
        if let Some(c) = slot.as_ref().filter(|c| !renew && c.usable(cfg)) {
            return Ok((c.clone(), false));
        }
        *slot = None;
        let stream = self.tls.open(cfg).await?;
        let conn = Arc::new(Conn::start(stream, cfg.expire));
        *slot = Some(conn.clone());
        Ok((conn, true))
    }
}

impl Conn {
    fn start(stream: tokio_rustls::client::TlsStream<TcpStream>, expire: Duration) -> Conn {
        let (frames, rx) = mpsc::unbounded_channel();
        let pending: Pending = Arc::default();
        let closed = Arc::new(AtomicBool::new(false));
        let task = tokio::spawn(serve(stream, rx, pending.clone(), closed.clone(), expire));
        Conn {
            frames,
            pending,
            closed,
            opened: Instant::now(),
            used: Mutex::new(Instant::now()),
            task: task.abort_handle(),
        }
    }

    fn usable(&self, cfg: &ForwardConfig) -> bool {
        let idle = self.used.lock().map(|u| u.elapsed()).unwrap_or(Duration::MAX);
        !self.closed.load(Ordering::Relaxed)
            && idle < cfg.expire
            && (cfg.max_age.is_zero() || self.opened.elapsed() < cfg.max_age)
    }

    /// Sends `request` under an ID free on this connection and waits for
    /// its answer, given back under `id`.
    async fn ask(&self, request: &[u8], id: u16, query: &Query) -> Result<Message, ExchangeError> {
        let closed = || ExchangeError::Io(io::Error::new(io::ErrorKind::ConnectionReset, "TLS connection closed"));
        if request.len() < 12 || self.closed.load(Ordering::Relaxed) {
            return Err(closed());
        }
        let len = u16::try_from(request.len()).map_err(|_| io::Error::other("request too long"))?;
        let (tx, rx) = oneshot::channel();
        let wire = claim(&self.pending, id, tx).ok_or_else(|| io::Error::other("no free query ID"))?;
        let _release = Release(&self.pending, wire);
        let mut frame = Vec::with_capacity(request.len() + 2);
        frame.extend_from_slice(&len.to_be_bytes());
        frame.extend_from_slice(&wire.to_be_bytes());
        frame.extend_from_slice(&request[2..]);
        if let Ok(mut used) = self.used.lock() {
            *used = Instant::now();
        }
        self.frames.send(frame).map_err(|_| closed())?;
        let mut reply = rx.await.map_err(|_| closed())?;
        reply[..2].copy_from_slice(&id.to_be_bytes());
        matching(&reply, id, query).ok_or_else(|| ExchangeError::Io(io::Error::other("answer to another question")))
    }
}

/// `id`, or another ID when a query in flight holds it, registered for `tx`.
fn claim(pending: &Pending, id: u16, tx: oneshot::Sender<Vec<u8>>) -> Option<u16> {
    let mut pending = pending.lock().ok()?;
    let wire = std::iter::once(id)
        .chain(std::iter::repeat_with(|| fastrand::u16(..)).take(64))
        .find(|w| !pending.contains_key(w))?;
    pending.insert(wire, tx);
    Some(wire)
}

/// Forgets a query's ID when its asker stops waiting (answer, timeout).
struct Release<'a>(&'a Pending, u16);

impl Drop for Release<'_> {
    fn drop(&mut self) {
        if let Ok(mut p) = self.0.lock() {
            p.remove(&self.1);
        }
    }
}

/// The connection's one task: writes the frames asked for and hands each
/// answer to its waiter, until the server closes, an error, or `expire`
/// with nothing in flight. The waiters left then see the connection closed.
async fn serve(
    stream: tokio_rustls::client::TlsStream<TcpStream>,
    mut frames: mpsc::UnboundedReceiver<Vec<u8>>,
    pending: Pending,
    closed: Arc<AtomicBool>,
    expire: Duration,
) {
    let (read, mut write) = tokio::io::split(stream);
    let mut read = BufReader::new(read);
    let idle = expire.max(Duration::from_millis(100));
    loop {
        tokio::select! {
            frame = frames.recv() => {
                let Some(mut batch) = frame else { break };
                while let Ok(more) = frames.try_recv() {
                    batch.extend_from_slice(&more);
                }
                if write.write_all(&batch).await.is_err() || write.flush().await.is_err() {
                    break;
                }
            }
            ready = tokio::time::timeout(idle, read.fill_buf()) => match ready {
                Err(_) if pending.lock().map(|p| p.is_empty()).unwrap_or(true) => break,
                Err(_) => {}
                Ok(Ok([])) => break,
                Ok(Err(_)) => break,
                Ok(Ok(_)) => {
                    if answer(&mut read, &pending).await.is_err() {
                        break;
                    }
                }
            },
        }
    }
    closed.store(true, Ordering::Relaxed);
    if let Ok(mut p) = pending.lock() {
        p.clear();
    }
    let _ = write.shutdown().await;
}

/// Reads one framed answer and hands it to the query with its ID (an
/// answer nobody waits for is dropped).
async fn answer<R: tokio::io::AsyncRead + Unpin>(read: &mut R, pending: &Pending) -> io::Result<()> {
    let mut len = [0u8; 2];
    read.read_exact(&mut len).await?;
    let mut buf = vec![0u8; usize::from(u16::from_be_bytes(len))];
    read.read_exact(&mut buf).await?;
    if buf.len() < 12 {
        return Ok(());
    }
    let id = u16::from_be_bytes([buf[0], buf[1]]);
    let waiter = pending.lock().ok().and_then(|mut p| p.remove(&id));
    if let Some(tx) = waiter {
        let _ = tx.send(buf);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn answers_find_their_askers_by_id_in_any_order() {
        let pending: Pending = Arc::default();
        let (tx1, rx1) = oneshot::channel();
        let (tx2, rx2) = oneshot::channel();
        assert_eq!(claim(&pending, 7, tx1), Some(7));
        let other = claim(&pending, 7, tx2).expect("a free id");
        assert_ne!(other, 7, "an ID in flight is not reused on the connection");
        // the second answer arrives first
        let frames: Vec<u8> = [other, 7]
            .iter()
            .flat_map(|id| {
                let mut m = vec![0u8; 12];
                m[..2].copy_from_slice(&id.to_be_bytes());
                let mut f = 12u16.to_be_bytes().to_vec();
                f.extend(m);
                f
            })
            .collect();
        let mut read = &frames[..];
        answer(&mut read, &pending).await.expect("first frame");
        answer(&mut read, &pending).await.expect("second frame");
        assert_eq!(rx2.await.expect("second asker")[..2], other.to_be_bytes());
        assert_eq!(rx1.await.expect("first asker")[..2], 7u16.to_be_bytes());
        assert!(pending.lock().expect("lock").is_empty());
    }
}
