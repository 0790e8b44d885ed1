//! DNS over HTTPS on an HTTP/2 connection over TLS, served by the `h2`
//! crate directly in the connection's own task: no task per stream, and
//! every request already read is answered before the connection is
//! flushed, so answers ready together leave in one write (each still a
//! TLS record of its own: [`RecordPerAnswer`](super::records)).
//!
//! [`Held`] is the stream `h2` writes to: while the connection is polled
//! for the requests already read its flushes are put off, and the one
//! flush after them (when no request is left to take) sends the lot.
//! Bounds as hyper's (`doh::builder`): `limits { pipeline }` streams at
//! once, at most `request::MAX_HEAD` of a request's head (431 past it), a
//! POST body read up to a message's size; closed gracefully when idle
//! for `timeouts { idle }` or when the listener stops.

use std::future::poll_fn;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::stream::{FuturesUnordered, StreamExt as _};
use h2::server::{Connection, SendResponse};
use h2::RecvStream;
use http::{Request, Response};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::request::{self, Ends, MAX_HEAD, MAX_MESSAGE};
use crate::metrics::{DohRefusal, TcpClose};
use crate::query::limits::timeouts::TcpLimits;
use crate::query::tcp::conns::Seat;
use crate::query::Handler;

/// How often the idle and stop checks look.
pub(super) const TICK: Duration = Duration::from_millis(500);

/// A stream whose flushes are put off while `held` is set.
pub struct Held<I> {
    io: I,
    held: Arc<AtomicBool>,
}

impl<I: AsyncRead + Unpin> AsyncRead for Held<I> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_read(cx, buf)
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for Held<I> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.held.load(Ordering::Relaxed) {
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut this.io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

/// What the connection's task wakes for.
enum Event {
    /// The connection ended (the client left, or an HTTP/2 error).
    Closed,
    /// Time to look at the idle and stop checks.
    Tick,
}

/// Serves DoH over HTTP/2 on `io` (TLS, ALPN `h2`) until the client
/// leaves, it idles, or the listener stops.
pub(super) async fn serve<I>(
    io: I,
    ends: Ends,
    handler: &Arc<Handler>,
    (stop, activity): (&AtomicBool, Arc<Activity>),
) -> TcpClose
where
    I: AsyncRead + AsyncWrite + Unpin + Send,
{
    let limits = handler.router.load().tcp;
    let held = Arc::new(AtomicBool::new(false));
    let io = Held { io, held: held.clone() };
    let shake = builder(&limits).handshake::<_, Bytes>(io);
    let mut conn = match tokio::time::timeout(limits.idle, shake).await {
        Ok(Ok(conn)) => conn,
        Ok(Err(_)) => return TcpClose::Client,
        Err(_) => return TcpClose::Idle,
    };
    let mut pending = FuturesUnordered::new();
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + TICK, TICK);
    let mut closing = Closing::default();
    loop {
        let event = poll_fn(|cx| {
            let start = |req, respond| one(req, respond, ends, handler.clone(), activity.clone());
            step(cx, (&mut conn, &mut pending, start), &held, &mut tick)
        })
        .await;
        if let Event::Closed = event {
            return closing.why;
        }
        match closing.turn(&activity, stop, &limits) {
            Turn::Stay => {}
            Turn::Shutdown => conn.graceful_shutdown(),
            Turn::End => return closing.why,
        }
    }
}

/// One turn of the connection: answers ready and requests already read
/// taken with flushes held, then the connection flushed; Pending until
/// the connection ends or the tick.
fn step<I, F, S>(
    cx: &mut Context<'_>,
    (conn, pending, start): (&mut Connection<Held<I>, Bytes>, &mut FuturesUnordered<F>, S),
    held: &AtomicBool,
    tick: &mut tokio::time::Interval,
) -> Poll<Event>
where
    I: AsyncRead + AsyncWrite + Unpin,
    F: std::future::Future<Output = ()>,
    S: Fn(Request<RecvStream>, SendResponse<Bytes>) -> F,
{
    held.store(true, Ordering::Relaxed);
    let mut flushed = false;
    loop {
        while let Poll::Ready(Some(())) = pending.poll_next_unpin(cx) {}
        match conn.poll_accept(cx) {
            Poll::Ready(Some(Ok((req, respond)))) => {
                pending.push(start(req, respond));
                flushed = false;
                held.store(true, Ordering::Relaxed);
                continue;
            }
            Poll::Ready(Some(Err(_)) | None) => {
                held.store(false, Ordering::Relaxed);
                return Poll::Ready(Event::Closed);
            }
            Poll::Pending if !flushed => {
                // nothing left to take: this pass flushes what was written
                held.store(false, Ordering::Relaxed);
                flushed = true;
            }
            Poll::Pending => break,
        }
    }
    tick.poll_tick(cx).map(|_| Event::Tick)
}

/// HTTP/2 as hyper's server had it (`doh::builder`), `limits { pipeline }`
/// streams at once.
fn builder(limits: &TcpLimits) -> h2::server::Builder {
    let mut b = h2::server::Builder::new();
    b.initial_window_size(1024 * 1024)
        .initial_connection_window_size(1024 * 1024)
        .max_send_buffer_size(400 * 1024)
        .max_pending_accept_reset_streams(20)
        .max_header_list_size(MAX_HEAD as u32)
        .max_concurrent_streams(limits.pipeline as u32);
    b
}

/// Answers one request on its stream.
async fn one(
    req: Request<RecvStream>,
    mut respond: SendResponse<Bytes>,
    ends: Ends,
    handler: Arc<Handler>,
    activity: Arc<Activity>,
) {
    activity.begin();
    let started = Instant::now();
    let message = match request::head(&req) {
        Ok(Some(message)) => Ok(message),
        Ok(None) => body(req.into_body()).await,
        Err(why) => Err(why),
    };
    let response = request::dns_response(message, ends, &handler, started).await;
    let (mut parts, reply) = response.into_parts();
    let data = reply.into_data();
    // as hyper has it: some clients (BIND's dig) size the body by it
    let len = data.as_ref().map_or(0, Bytes::len);
    parts.headers.insert(http::header::CONTENT_LENGTH, len.into());
    if let Ok(mut stream) = respond.send_response(Response::from_parts(parts, ()), data.is_none()) {
        if let Some(data) = data {
            let _ = stream.send_data(data, true);
        }
    }
    activity.end();
}

/// A POST's body, read up to [`MAX_MESSAGE`] bytes.
async fn body(mut recv: RecvStream) -> Result<Vec<u8>, DohRefusal> {
    let mut out = Vec::new();
    while let Some(chunk) = recv.data().await {
        let chunk = chunk.map_err(|_| DohRefusal::TooLarge)?;
        let _ = recv.flow_control().release_capacity(chunk.len());
        if out.len() + chunk.len() > MAX_MESSAGE {
            return Err(DohRefusal::TooLarge);
        }
        out.extend_from_slice(&chunk);
    }
    Ok(out)
}

/// Why a DoH connection closes, and, once it was shut down gracefully,
/// when it is dropped anyway (a client that never finished its HTTP/2
/// preface ignores a GOAWAY). Asked at every tick of the connection's loop.
pub(super) struct Closing {
    pub(super) why: TcpClose,
    hard: Option<Instant>,
}

/// What a connection's loop does after a tick.
pub(super) enum Turn {
    Stay,
    /// Start closing: shut the connection down gracefully.
    Shutdown,
    /// Drop it: the graceful shutdown took longer than `write`.
    End,
}

impl Default for Closing {
    fn default() -> Self {
        Closing {
            why: TcpClose::Client,
            hard: None,
        }
    }
}

impl Closing {
    pub(super) fn turn(&mut self, activity: &Activity, stop: &AtomicBool, limits: &TcpLimits) -> Turn {
        if self.hard.is_some_and(|at| Instant::now() >= at) {
            return Turn::End;
        }
        if self.why != TcpClose::Client {
            return Turn::Stay;
        }
        match activity.closing(stop, limits.idle) {
            None => Turn::Stay,
            Some(why) => {
                self.why = why;
                self.hard = Some(Instant::now() + limits.write);
                Turn::Shutdown
            }
        }
    }
}

/// Requests of one connection in progress, and when the last one ended;
/// told to the connection's seat (idle ones give way first at the cap;
/// weak: a stream's task outliving the connection does not hold it open).
pub(super) struct Activity {
    epoch: Instant,
    busy: AtomicU64,
    /// Milliseconds since `epoch` of the last request's start or end.
    last: AtomicU64,
    seat: Weak<Seat>,
}

impl Activity {
    /// None in progress yet, for a connection in `seat`.
    pub(super) fn new(seat: &Arc<Seat>) -> Arc<Activity> {
        Arc::new(Activity {
            epoch: Instant::now(),
            busy: AtomicU64::new(0),
            last: AtomicU64::new(0),
            seat: Arc::downgrade(seat),
        })
    }

    pub(super) fn begin(&self) {
        self.busy.fetch_add(1, Ordering::Relaxed);
        if let Some(seat) = self.seat.upgrade() {
            seat.begin();
        }
        self.touch();
    }

    pub(super) fn end(&self) {
        self.busy.fetch_sub(1, Ordering::Relaxed);
        if let Some(seat) = self.seat.upgrade() {
            seat.end();
        }
        self.touch();
    }

    fn touch(&self) {
        self.last
            .store(self.epoch.elapsed().as_millis() as u64, Ordering::Relaxed);
    }

    /// Why an open connection starts to close now: the server stops, or
    /// it has been idle for `idle`; `None`: it stays.
    pub(super) fn closing(&self, stop: &AtomicBool, idle: Duration) -> Option<TcpClose> {
        if stop.load(Ordering::Relaxed) {
            Some(TcpClose::Shutdown)
        } else if self.idle_for() >= idle {
            Some(TcpClose::Idle)
        } else {
            None
        }
    }

    /// How long no request has been in progress (zero while one is).
    pub(super) fn idle_for(&self) -> Duration {
        if self.busy.load(Ordering::Relaxed) > 0 {
            return Duration::ZERO;
        }
        let last = Duration::from_millis(self.last.load(Ordering::Relaxed));
        self.epoch.elapsed().saturating_sub(last)
    }
}
