//! TCP (RFC 7766): 2-byte length framing, many queries per connection,
//! pipelined. Each connection has a reader and a writer. The reader takes
//! whatever the client has sent in one read, answers every whole query in
//! it and hands their replies to the writer together (one write for the
//! lot); the writer sends replies in the order they complete, so a slow
//! (forwarded) answer never holds back a fast one.
//!
//! Clients are held to [`TcpLimits`] (`timeouts`, `limits`): a query must
//! arrive whole within `read` of its first byte (a client sending a byte a
//! second is cut off), replies must be taken within `write`, a connection
//! without queries is closed after `idle`. At most `connections` are open
//! per listener: at the cap the connection idle longest is closed for the
//! new one, and only when none is idle is the new one refused. At most
//! `pipeline` forwarded queries of one connection are in flight; beyond
//! that the connection is not read until one is answered (back-pressure,
//! not an unbounded queue). After `max_queries` (`maxtcpqueries`) queries
//! the connection answers no more, sends what it owes and closes, so that
//! clients behind a connection balancer reconnect and spread out. A
//! connection answers at most [`QUANTUM`] queries before the others run,
//! and at the cap with none idle the client holding the most connections
//! gives one up (per-client fairness, `limits { client_share }`). An idle
//! connection holds no buffers: it makes room for a read once something
//! has come ([`Upgrade::readable`]), and answers are built in the
//! thread's scratch space, not the connection's. DNS
//! over TLS runs this same path: [`serve_with`] first upgrades each
//! accepted connection ([`Upgrade`]: a TLS handshake in `serve::dot`).

use std::borrow::Cow;
use std::cell::RefCell;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use socket2::Type;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

pub mod accept;
pub mod conns;
mod writer;

use super::defer::{push_frame, Pending, Sink};
use super::handler::Handler;
use super::scratch::Scratch;
use super::tsig;
use crate::metrics::{TcpClose, Transport};
use crate::query::limits::timeouts::TcpLimits;
use conns::{Conn, Conns};
use writer::writer_task;

/// Queries of one connection answered before it lets the others run
/// (tokio's scheduler then serves connections in turn: a client pipelining
/// thousands of queries gets a quantum per turn, not the thread).
const QUANTUM: usize = 32;
/// Room made for each read of a connection (bytes)...
pub const READ_CHUNK: usize = 16 * 1024;
/// ...when less than this is left.
pub const READ_ROOM: usize = 2048;

/// Binds a TCP listener (with `SO_REUSEPORT`, so it can share a port with
/// a restarting process) on `addr`.
pub fn bind(addr: SocketAddr) -> io::Result<TcpListener> {
    let socket = super::udp::unshared::socket(addr, Type::STREAM)?;
    socket.set_reuse_address(true)?;
    socket.set_reuse_port(true)?;
    socket.set_tcp_nodelay(true)?;
    socket.bind(&addr.into())?;
    socket.listen(1024)?;
    socket.set_nonblocking(true)?;
    TcpListener::from_std(socket.into())
}

/// How an accepted connection becomes the two halves DNS messages are
/// framed on: itself (plain TCP), or a TLS session over it (`tls://`),
/// whose handshake runs in the connection's task, within `limits.read`.
pub trait Upgrade: Send + Sync + 'static {
    type Read: AsyncRead + Unpin + Send + 'static;
    type Write: AsyncWrite + Unpin + Send + 'static;
    /// Resolves once `read` has something to give (bytes, its end or an
    /// error) without reading it: an idle connection makes room for a
    /// read only then, and holds no buffer while it waits.
    fn readable(read: &Self::Read) -> impl std::future::Future<Output = ()> + Send;
    /// The halves, or `None` when the handshake failed or timed out.
    fn upgrade(
        &self,
        stream: TcpStream,
        limits: &TcpLimits,
    ) -> impl std::future::Future<Output = Option<(Self::Read, Self::Write)>> + Send;
}

/// Plain TCP: the stream's own halves.
pub struct Plain;

impl Upgrade for Plain {
    type Read = tokio::net::tcp::OwnedReadHalf;
    type Write = tokio::net::tcp::OwnedWriteHalf;
    async fn readable(read: &Self::Read) {
        // An error is the read's to report.
        let _ = read.readable().await;
    }
    async fn upgrade(&self, stream: TcpStream, _: &TcpLimits) -> Option<(Self::Read, Self::Write)> {
        Some(stream.into_split())
    }
}

/// Accepts connections until `stop` is set, then stops accepting and
/// closes each connection once its queries are answered.
pub async fn serve(listener: TcpListener, handler: Arc<Handler>, stop: Arc<AtomicBool>) {
    serve_with(listener, handler, stop, Arc::new(Plain)).await
}

/// [`serve`], each accepted connection first upgraded by `upgrade`.
pub async fn serve_with<U: Upgrade>(
    listener: TcpListener,
    handler: Arc<Handler>,
    stop: Arc<AtomicBool>,
    upgrade: Arc<U>,
) {
    let conns = Conns::new();
    while let Some((stream, peer)) = accept::next(&listener, &stop, "tcp").await {
        let limits = handler.router.load().tcp;
        let Some((id, conn)) = conns.admit(&limits, peer.ip(), stream.local_addr().ok()) else {
            handler.metrics.tcp.rejected();
            drop(stream);
            continue;
        };
        let (handler, conns, upgrade) = (handler.clone(), conns.clone(), upgrade.clone());
        handler.metrics.tcp.open.fetch_add(1, Ordering::Relaxed);
        tokio::spawn(async move {
            let _ = stream.set_nodelay(true);
            let upgraded = tokio::select! {
                biased;
                _ = conn.close.notified() => Err(conn.reason()),
                up = opened(&handler, stream, peer, &*upgrade, &limits) => up.ok_or(TcpClose::Handshake),
            };
            let why = match upgraded {
                Ok((halves, client)) => connection::<U>(halves, client, &handler, &conn, &limits, &conns).await,
                Err(why) => why,
            };
            conns.remove(id);
            handler.metrics.tcp.closed(why);
            handler.metrics.tcp.open.fetch_sub(1, Ordering::Relaxed);
        });
    }
    // The listener closes here: new connections go to the other sockets
    // of its `SO_REUSEPORT` group (another instance's, in a hand-over).
    drop(listener);
    Conns::drain(&conns).await;
}

/// A connection's PROXY header read (`proxyproto`: the client it names),
/// then its upgrade; `None` when either failed.
async fn opened<U: Upgrade>(
    handler: &Handler,
    stream: TcpStream,
    peer: SocketAddr,
    upgrade: &U,
    limits: &TcpLimits,
) -> Option<((U::Read, U::Write), SocketAddr)> {
    let client = match handler.router.load().proxy.clone() {
        None => peer,
        Some(p) => match crate::query::proxyproto::stream(&p, &stream, peer, limits.read).await {
            Ok(client) => client,
            Err(why) => {
                crate::query::proxyproto::refused(&handler.metrics, Transport::Tcp, peer, why);
                return None;
            }
        },
    };
    Some((upgrade.upgrade(stream, limits).await?, client))
}

thread_local! {
    /// Scratch space per handler for the TCP connections this thread runs.
    static SCRATCH: RefCell<Vec<(u64, Scratch)>> = const { RefCell::new(Vec::new()) };
}

/// Answers `query` with this thread's scratch space for `handler` and
/// appends the framed reply to `out` (nothing when no reply is sent now).
pub fn answer(
    handler: &Handler,
    query: &[u8],
    (peer, local): (SocketAddr, Option<SocketAddr>),
    sink: &dyn Fn() -> Sink,
    started: Instant,
    out: &mut Vec<u8>,
) {
    SCRATCH.with(|cell| {
        let mut all = cell.borrow_mut();
        let at = match all.iter().position(|(id, _)| *id == handler.id) {
            Some(at) => at,
            None => {
                // Handlers of stopped listeners leave; keep a few.
                if all.len() >= 8 {
                    all.remove(0);
                }
                all.push((handler.id, Scratch::default()));
                all.len() - 1
            }
        };
        let scratch = &mut all[at].1;
        scratch.local = local; // one scratch serves the handler's every listener on this thread
        let router = handler.router.load(); // per query: a connection outlives a reload
        if handler.handle_guarded(&router, query, (peer, Transport::Tcp), scratch, sink, started) {
            push_frame(out, &scratch.out);
        }
    })
}

/// The length of the first frame in `bytes` when it is all there.
fn whole_frame(bytes: &[u8]) -> Option<usize> {
    let len = usize::from(u16::from_be_bytes([*bytes.first()?, *bytes.get(1)?]));
    (bytes.len() >= 2 + len).then_some(len)
}

/// Reads, answers and writes one connection until it ends; why it ended.
/// Each read takes whatever the client has sent; every whole query in it
/// is answered before the replies go to the writer, together.
async fn connection<U: Upgrade>(
    (mut reader, writer): (U::Read, U::Write),
    peer: SocketAddr,
    handler: &Handler,
    conn: &Arc<Conn>,
    limits: &TcpLimits,
    conns: &Conns,
) -> TcpClose {
    // The writer's task and channel, made at the first query (none while idle).
    let mut writer = Some(writer);
    let mut link: Option<(mpsc::Sender<Vec<u8>>, tokio::task::JoinHandle<()>)> = None;
    let mut inbox = Vec::new();
    // While part of a query is in: when all of it must be.
    let mut deadline: Option<tokio::time::Instant> = None;
    // Queries this connection may still answer (`maxtcpqueries`).
    let mut left = Some(limits.max_queries).filter(|n| *n != 0).unwrap_or(usize::MAX);
    let why = loop {
        if deadline.is_none() {
            conn.idle_since.store(conns.now(), Ordering::Relaxed);
        }
        let wait = deadline.unwrap_or_else(|| tokio::time::Instant::now() + limits.idle);
        let got = tokio::select! {
            biased;
            _ = conn.close.notified() => break conn.reason(),
            got = tokio::time::timeout_at(wait, read_some::<U>(&mut reader, &mut inbox)) => got,
        };
        match got {
            Err(_) if deadline.is_some() => break TcpClose::Read,
            Err(_) => break TcpClose::Idle,
            Ok(Ok(0)) | Ok(Err(_)) => break TcpClose::Client,
            Ok(Ok(_)) => {}
        }
        conn.busy();
        let arrived = tokio::time::Instant::now();
        let (tx, _) = link.get_or_insert_with(|| writer_task(&mut writer, limits, conn));
        let answered = match answer_all(&inbox, peer, handler, conn, tx, arrived.into_std(), &mut left).await {
            Ok(n) => n,
            Err(why) => break why,
        };
        if left == 0 {
            break TcpClose::MaxQueries;
        }
        inbox.drain(..answered);
        if inbox.is_empty() {
            deadline = None;
            // An idle connection holds no buffer.
            inbox = Vec::new();
        } else if answered > 0 || deadline.is_none() {
            deadline = Some(arrived + limits.read);
        }
    };
    let (tx, writing) = link.unwrap_or_else(|| writer_task(&mut writer, limits, conn));
    drop(tx);
    let _ = writing.await;
    why
}

/// Reads what the client has sent into `inbox`; an idle connection
/// (`inbox` empty) makes room only once something has come.
async fn read_some<U: Upgrade>(reader: &mut U::Read, inbox: &mut Vec<u8>) -> io::Result<usize> {
    if inbox.is_empty() {
        U::readable(reader).await;
    }
    if inbox.capacity() - inbox.len() < READ_ROOM {
        inbox.reserve(READ_CHUNK);
    }
    reader.read_buf(inbox).await
}

/// Answers every whole query at the start of `inbox` and hands the
/// replies to the writer at once; how many bytes were answered.
async fn answer_all(
    inbox: &[u8],
    peer: SocketAddr,
    handler: &Handler,
    conn: &Arc<Conn>,
    tx: &mpsc::Sender<Vec<u8>>,
    started: Instant,
    left: &mut usize,
) -> Result<usize, TcpClose> {
    let mut at = 0;
    let mut out = Vec::new();
    let mut turn = 0;
    while let Some(len) = whole_frame(&inbox[at..]).filter(|_| *left > 0) {
        *left -= 1;
        turn += 1;
        if turn > QUANTUM {
            turn = 1;
            if !out.is_empty() && tx.send(std::mem::take(&mut out)).await.is_err() {
                return Err(conn.reason());
            }
            tokio::task::yield_now().await;
        }
        let frame = &inbox[at + 2..at + 2 + len];
        if super::transfer::asks(frame) {
            match transfer(frame, peer, handler, conn, tx, &mut out).await {
                None => return Err(conn.reason()),
                Some(true) => {
                    at += 2 + len;
                    continue;
                }
                Some(false) => {}
            }
        }
        // Back-pressure: with the pipeline full, read no more until a
        // forwarded query of this connection is answered.
        if conn.slots.available_permits() == 0 {
            if !out.is_empty() && tx.send(std::mem::take(&mut out)).await.is_err() {
                return Err(conn.reason());
            }
            tokio::select! {
                biased;
                _ = conn.close.notified() => return Err(conn.reason()),
                _ = conn.slots.acquire() => {}
            }
        }
        let sink = || {
            Sink::Tcp(Arc::new(Pending::new(
                tx.clone(),
                conn.slots.clone().try_acquire_owned().ok(),
            )))
        };
        answer(handler, frame, (peer, conn.local), &sink, started, &mut out);
        at += 2 + len;
    }
    if !out.is_empty() && tx.send(out).await.is_err() {
        return Err(conn.reason());
    }
    Ok(at)
}

/// A transfer request as the listener's `tsig` admits it: as it came
/// (unsigned, not required to be), or verified (its TSIG record taken
/// off) with the signer of its messages; `None` when it is refused.
fn transfer_admitted<'a>(frame: &'a [u8], handler: &Handler) -> Option<(Cow<'a, [u8]>, Option<tsig::Signer>)> {
    let mut refusal = Vec::new();
    match tsig::admit(handler.router.load().tsig.as_deref(), frame, &mut refusal) {
        tsig::Admit::Plain => Some((Cow::Borrowed(frame), None)),
        tsig::Admit::Signed(s) => Some((Cow::Owned(s.request), Some(s.signer))),
        tsig::Admit::Answered => None,
    }
}

/// A zone transfer asked for in `frame` (`query/transfer/`), after the
/// replies already in `out`: `Some(true)` when it was served, `Some(false)`
/// when the frame goes the usual way (also a transfer `tsig` refuses: the
/// usual way answers its error), `None` when the connection closes.
/// Boxed, so an idle connection's task stays small (tests/hostile.rs).
async fn transfer(
    frame: &[u8],
    peer: SocketAddr,
    handler: &Handler,
    conn: &Arc<Conn>,
    tx: &mpsc::Sender<Vec<u8>>,
    out: &mut Vec<u8>,
) -> Option<bool> {
    let Some((frame, signer)) = transfer_admitted(frame, handler) else {
        return Some(false);
    };
    let router = handler.router.load_full();
    let find = |zone: &_, qtype| router.transfer(zone, qtype, peer.ip());
    let before = std::mem::take(out);
    Box::pin(super::transfer::on_connection(
        (&frame, signer),
        peer,
        tx,
        before,
        find,
        conn.close.notified(),
    ))
    .await
}
