//! The UDP ports one upstream's queries leave from, kept open between
//! queries instead of a socket opened, bound, connected and closed for
//! each (the idea of unbound's `outgoing-range`, in our own terms). Each
//! forwarding lane (`lanes.rs`: the shared ones and each UDP worker's) has
//! a pool of its own, so a port is only ever read on the thread whose
//! runtime watches it:
//!
//! ```text
//!  query ─► take: a random one of the longest-idle quarter of the open
//!           ports once PORTS are idle, else a new socket (connected to
//!           the upstream; the kernel picks its port at random)
//!        ─► drain what was queued on it (counted, never read as a reply)
//!        ─► send, read until the reply with our ID and question
//!        ─► give back: closed after its random 1..=MAX_USES queries or
//!           MAX_AGE, else idle again at the back
//! ```
//!
//! A port carries one query at a time, so a reply is matched by the port
//! it came to, its ID (random, from a CSPRNG) and its question; anything
//! else is dropped and counted in `clusterdns_forward_stray_replies_total`
//! by reason. The sockets are connected, so the kernel itself drops a
//! datagram from any other address or port (and an off-path prober cannot
//! tell an open port from its own address); the `source` reason counts
//! what would slip past it. A port whose query timed out is closed, never
//! reused. Since a reused port is not taken again until three quarters of
//! the idle ones have been, 1,000 consecutive queries leave from about
//! 1,000 distinct ports once the pool is full, as from fresh sockets
//! (`loadtest/bench/forward-miss.sh` counts them), while only about one
//! query in eight pays for opening a socket.
//!
//! A port is watched for reading only: registered for writing too (as
//! tokio's `UdpSocket` is), the kernel's signal that the query's buffer
//! was freed woke the lane once more per miss for nothing. The drain also
//! clears the runtime's stale view that the port is readable (left by the
//! last reply, read without meeting `EAGAIN`), which else cost a read that
//! finds nothing before the wait for the reply.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::io;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures::FutureExt;
use hickory_proto::op::{Message, Query};
use rand::RngExt;
use socket2::{Domain, Protocol, Socket, Type};
use tokio::io::unix::AsyncFd;
use tokio::io::Interest;

use super::exchange::{classify, mismatched, ExchangeError, Stray};
use super::lanes::PerLane;

/// Idle ports kept per upstream and lane before one is reused.
pub const PORTS: usize = 1024;
/// A reused port is drawn from the longest-idle 1/CHOICE of the idle ones.
const CHOICE: usize = 4;
/// Most queries one port carries (each port draws its own number in 1..=this).
pub const MAX_USES: u16 = 16;
/// A port open longer than this is closed instead of reused.
pub const MAX_AGE: Duration = Duration::from_secs(10);

/// A random query ID from the thread's CSPRNG (ChaCha, seeded by the OS).
pub fn random_id() -> u16 {
    rand::rng().random()
}

/// One open port: a connected, non-blocking UDP socket.
#[derive(Debug)]
struct Port {
    socket: AsyncFd<UdpSocket>,
    local: Option<SocketAddr>,
    /// Queries it may still carry.
    left: u16,
    opened: Instant,
}

/// The pools of one upstream's ports (one per forwarding lane, so a port
/// is read by the runtime it is registered with, and one for any other
/// thread), and what arrived on them unasked.
#[derive(Debug)]
pub struct Outgoing {
    idle: PerLane<VecDeque<Port>>,
    /// Ports open now, idle or carrying a query.
    open: AtomicUsize,
    /// Replies dropped, by [`Stray`] reason.
    strays: [AtomicU64; Stray::ALL.len()],
}

impl Default for Outgoing {
    fn default() -> Outgoing {
        Outgoing {
            idle: Default::default(),
            open: AtomicUsize::new(0),
            strays: Default::default(),
        }
    }
}

/// A port lent to one query: closed when dropped (the query failed or
/// timed out) unless given back.
struct Lease<'a> {
    pool: &'a Outgoing,
    port: Option<Port>,
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        if self.port.take().is_some() {
            self.pool.open.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

thread_local! {
    /// Where replies are read: one buffer per thread, never per query.
    static BUF: RefCell<Box<[u8]>> = RefCell::new(vec![0u8; 65535].into_boxed_slice());
}

impl Outgoing {
    /// Ports open now.
    pub fn open(&self) -> usize {
        self.open.load(Ordering::Relaxed)
    }

    /// Replies dropped for `why`.
    pub fn strays(&self, why: Stray) -> u64 {
        self.strays[why as usize].load(Ordering::Relaxed)
    }

    fn stray(&self, why: Stray) {
        self.strays[why as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// Sends `request` (ID `id`) to `addr` from one of the pool's ports and
    /// reads until its reply; also says which local address it left from
    /// and sets `wrong` when a reply with our ID was not to our question.
    #[allow(clippy::too_many_arguments)]
    pub async fn exchange(
        &self,
        addr: SocketAddr,
        source: Option<IpAddr>,
        request: &[u8],
        id: u16,
        query: &Query,
        local: &mut Option<SocketAddr>,
        wrong: &mut bool,
    ) -> Result<Message, ExchangeError> {
        let (mut lease, reused) = self.lease(addr, source)?;
        let Some(port) = lease.port.as_ref() else {
            return Err(ExchangeError::Io(io::Error::other("no port")));
        };
        *local = port.local;
        if reused {
            self.drain(port);
        }
        // one datagram on a socket of its own: never waits for room
        port.socket.get_ref().send(request)?;
        loop {
            let mut ready = port.socket.readable().await?;
            match self.receive(port, addr, (id, query), wrong)? {
                Some(m) => {
                    drop(ready);
                    self.give_back(&mut lease);
                    return Ok(m);
                }
                None => ready.clear_ready(),
            }
        }
    }

    /// A port for one query, and whether it carried one before.
    fn lease(&self, addr: SocketAddr, source: Option<IpAddr>) -> io::Result<(Lease<'_>, bool)> {
        let (port, reused) = match self.take() {
            Some(port) => (port, true),
            None => {
                let port = open(addr, source)?;
                self.open.fetch_add(1, Ordering::Relaxed);
                (port, false)
            }
        };
        let lease = Lease {
            pool: self,
            port: Some(port),
        };
        Ok((lease, reused))
    }

    /// A random one of the longest-idle quarter, once [`PORTS`] are idle.
    fn take(&self) -> Option<Port> {
        self.idle
            .with(
                |left| self.closed(left.len()),
                |idle| {
                    // the longest idle are the first to grow too old
                    while idle.front().is_some_and(|p| p.opened.elapsed() >= MAX_AGE) {
                        idle.pop_front();
                        self.closed(1);
                    }
                    if idle.len() < PORTS {
                        return None;
                    }
                    let i = rand::rng().random_range(0..idle.len() / CHOICE);
                    idle.swap(0, i);
                    idle.pop_front()
                },
            )
            .flatten()
    }

    /// Back to the idle ports, or closed when its uses or age are spent.
    fn give_back(&self, lease: &mut Lease<'_>) {
        let Some(mut port) = lease.port.take() else { return };
        port.left = port.left.saturating_sub(1);
        if port.left == 0 || port.opened.elapsed() >= MAX_AGE {
            self.closed(1);
            return;
        }
        let kept = self
            .idle
            .with(|left| self.closed(left.len()), |idle| idle.push_back(port));
        if kept.is_none() {
            self.closed(1);
        }
    }

    fn closed(&self, ports: usize) {
        self.open.fetch_sub(ports, Ordering::Relaxed);
    }

    /// Reads and drops what arrived on an idle port since its last reply
    /// (a late duplicate, or a reply planted ahead of the next query).
    /// Asks the socket itself, not the runtime's view of its readiness,
    /// which may not have seen the newest arrivals yet; then, the socket
    /// empty, clears that view (see the module comment).
    fn drain(&self, port: &Port) {
        BUF.with(|buf| {
            let Ok(mut buf) = buf.try_borrow_mut() else { return };
            while port.socket.get_ref().recv(&mut buf).is_ok() {
                self.stray(Stray::Late);
            }
        });
        if let Some(Ok(mut ready)) = port.socket.readable().now_or_never() {
            ready.clear_ready();
        }
    }

    /// The reply to `id` and `query` if one is queued on `port`; the rest
    /// of what is queued before it is dropped and counted (`wrong` set
    /// when one had our ID: see [`mismatched`]).
    fn receive(
        &self,
        port: &Port,
        addr: SocketAddr,
        (id, query): (u16, &Query),
        wrong: &mut bool,
    ) -> io::Result<Option<Message>> {
        BUF.with(|buf| {
            let mut buf = buf.try_borrow_mut().map_err(io::Error::other)?;
            loop {
                let (n, from) = match port.socket.get_ref().recv_from(&mut buf) {
                    Ok(got) => got,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
                    Err(e) => return Err(e),
                };
                if from != addr {
                    self.stray(Stray::Source);
                    continue;
                }
                match classify(&buf[..n], id, query) {
                    Ok(m) => return Ok(Some(m)),
                    Err(why) => {
                        *wrong |= mismatched(&buf[..n], id, why);
                        self.stray(why)
                    }
                }
            }
        })
    }
}

/// A new port: a non-blocking UDP socket connected to `addr`, bound to
/// `source` when set (the kernel picks a random free port either way).
fn open(addr: SocketAddr, source: Option<IpAddr>) -> io::Result<Port> {
    let socket = Socket::new(
        Domain::for_address(addr),
        Type::DGRAM.nonblocking(),
        Some(Protocol::UDP),
    )?;
    if let Some(ip) = source {
        socket.bind(&SocketAddr::new(ip, 0).into())?;
    }
    socket.connect(&addr.into())?;
    let local = socket.local_addr().ok().and_then(|a| a.as_socket());
    // tokio deprecates its safe constructors for types whose descriptor
    // may change or close while registered; this socket is owned by the
    // registration and closed only when it drops, after deregistering
    #[allow(deprecated)]
    let socket = AsyncFd::with_interest(UdpSocket::from(socket), Interest::READABLE)?;
    Ok(Port {
        socket,
        local,
        left: rand::rng().random_range(1..=MAX_USES),
        opened: Instant::now(),
    })
}
