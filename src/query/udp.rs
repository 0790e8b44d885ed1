//! UDP: one `SO_REUSEPORT` socket per worker thread, so the kernel spreads
//! clients across workers. Each worker loops over batches: one `recvmmsg`
//! (`MSG_WAITFORONE`: wait for the first datagram, then take what is
//! queued, up to [`BATCH`]), one clock read, each query answered
//! synchronously in the worker's scratch space, and one `sendmmsg` of the
//! replies, each to the address its query came from. Buffers are the
//! worker's own, reused for every batch.
//!
//! Overload is bounded in time. The kernel stamps each datagram as it
//! arrives (`SO_TIMESTAMPNS`), which tells the worker how long each query
//! queued. A queue that never empties over a [`WINDOW`] (every query in it
//! waited more than [`STANDING`]) is overload, not a burst: the worker then
//! shrinks its receive buffer to a few milliseconds of work
//! ([`TIGHT_BUFFER`]) so that the kernel drops the excess at the door
//! (`clusterdns_udp_kernel_drops`), which costs the worker nothing, and
//! what it answers has not queued long. Once a batch finds the queue empty
//! again the buffer grows back ([`ROOMY_BUFFER`]), so bursts and pauses (a
//! CPU-throttled pod) are absorbed, not dropped. A query that waited longer
//! than a client waits ([`MAX_WAIT`]: the worker was stopped or starved) is
//! dropped unanswered and counted (`clusterdns_udp_late_dropped_total`)
//! rather than answered late. A query younger than that is still wanted
//! (stub resolvers retry after 1 to 5 s), so a starved worker's backlog is
//! answered, not dropped. The same stamp starts the query's duration
//! metric, so it counts the time spent queued.

use std::io::{self, IoSlice, IoSliceMut};
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use nix::errno::Errno;
use nix::sys::socket::{self, sockopt, ControlMessageOwned, MsgFlags, MultiHeaders, SockaddrStorage};
use socket2::{Domain, Protocol, Socket, Type};

use super::defer::Sink;
use super::{Handler, Scratch};
use crate::metrics::Transport;

/// How often an idle worker checks for shutdown.
const POLL: Duration = Duration::from_millis(200);
/// Datagrams received and replies sent per system call, at most.
pub const BATCH: usize = 32;
/// The largest query read whole; a longer datagram is dropped.
const SIZE: usize = 4096;
/// A query older than this when its batch is read is dropped unanswered:
/// the shortest stub-resolver timeout in common use (`options timeout:1`);
/// glibc, musl and Go retry after 2.5 to 5 s.
pub const MAX_WAIT: Duration = Duration::from_secs(1);
/// Receive buffer while the worker keeps up: bursts and pauses queue here.
pub const ROOMY_BUFFER: usize = 4 << 20;
/// Receive buffer under overload. The kernel doubles it and charges about
/// 830 bytes per queued query (measured on loopback), so about 315
/// queries queue: 3 ms of work at 10 µs a query.
pub const TIGHT_BUFFER: usize = 128 << 10;
/// How long the queue is watched before the buffer is resized.
pub const WINDOW: Duration = Duration::from_millis(100);
/// A queue whose every query waited longer than this for a whole window
/// is overload.
pub const STANDING: Duration = Duration::from_millis(5);

/// How long queries queue, per worker: says when to resize the receive
/// buffer (CoDel's idea: a queue that never drains over a window is a
/// standing queue, not a burst).
#[derive(Debug)]
pub struct Queue {
    window_end: Instant,
    least: Duration,
    drained: bool,
    tight: bool,
}

impl Queue {
    pub fn new(now: Instant) -> Queue {
        Queue {
            window_end: now + WINDOW,
            least: Duration::MAX,
            drained: false,
            tight: false,
        }
    }

    /// Notes a batch (the least wait in it; whether it emptied the queue)
    /// and returns the receive buffer to switch to, if any.
    pub fn observe(&mut self, least: Duration, drained: bool, now: Instant) -> Option<usize> {
        self.least = self.least.min(least);
        self.drained |= drained;
        if now < self.window_end {
            return None;
        }
        let standing = self.least > STANDING;
        let drained = self.drained;
        (self.least, self.drained, self.window_end) = (Duration::MAX, false, now + WINDOW);
        if !self.tight && standing {
            self.tight = true;
            return Some(TIGHT_BUFFER);
        }
        if self.tight && drained {
            self.tight = false;
            return Some(ROOMY_BUFFER);
        }
        None
    }
}

/// Binds `workers` sockets on `addr` (port 0: a free port shared by all).
/// Returns the bound address.
pub fn bind_all(addr: SocketAddr, workers: usize) -> io::Result<(SocketAddr, Vec<UdpSocket>)> {
    let first = bind(addr)?;
    let bound = first.local_addr()?;
    let mut sockets = vec![first];
    for _ in 1..workers.max(1) {
        sockets.push(bind(bound)?);
    }
    Ok((bound, sockets))
}

/// Starts one worker thread per socket.
pub fn start(
    sockets: Vec<UdpSocket>,
    handler: &Arc<Handler>,
    stop: &Arc<AtomicBool>,
) -> io::Result<Vec<JoinHandle<()>>> {
    let mut threads = Vec::new();
    for (i, socket) in sockets.into_iter().enumerate() {
        let (handler, stop) = (handler.clone(), stop.clone());
        let thread = std::thread::Builder::new()
            .name(format!("udp-{i}"))
            .spawn(move || serve(&Arc::new(socket), &handler, &stop))?;
        threads.push(thread);
    }
    Ok(threads)
}

fn bind(addr: SocketAddr) -> io::Result<UdpSocket> {
    let socket = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
    if addr.is_ipv6() {
        socket.set_only_v6(true)?;
    }
    socket.set_reuse_port(true)?;
    let _ = socket.set_recv_buffer_size(ROOMY_BUFFER);
    socket.bind(&addr.into())?;
    socket.set_read_timeout(Some(POLL))?;
    socket::setsockopt(&socket, sockopt::ReceiveTimestampns, &true).map_err(io::Error::from)?;
    Ok(socket.into())
}

/// One received datagram, as the batch loop sees it.
#[derive(Clone, Copy)]
struct Datagram {
    len: usize,
    from: Option<SockaddrStorage>,
    /// Time spent in the receive queue before the batch was read.
    waited: Duration,
    truncated: bool,
}

/// A worker's buffers, reused for every batch.
struct Batch {
    bufs: Box<[[u8; SIZE]; BATCH]>,
    received: MultiHeaders<SockaddrStorage>,
    sending: MultiHeaders<SockaddrStorage>,
    got: Vec<Datagram>,
    /// The replies back to back, and where each goes.
    out: Vec<u8>,
    replies: Vec<(usize, usize)>,
    to: Vec<Option<SockaddrStorage>>,
}

impl Batch {
    fn new() -> Batch {
        Batch {
            bufs: Box::new([[0; SIZE]; BATCH]),
            received: MultiHeaders::preallocate(BATCH, Some(nix::cmsg_space!(nix::sys::time::TimeSpec))),
            sending: MultiHeaders::preallocate(BATCH, None),
            got: Vec::with_capacity(BATCH),
            out: Vec::with_capacity(BATCH * 512),
            replies: Vec::with_capacity(BATCH),
            to: Vec::with_capacity(BATCH),
        }
    }

    /// Receives up to [`BATCH`] datagrams (waits for the first).
    fn receive(&mut self, socket: &UdpSocket) -> Result<(), Errno> {
        self.got.clear();
        let mut iovs = self.bufs.each_mut().map(|b| [IoSliceMut::new(b)]);
        let results = socket::recvmmsg(
            socket.as_raw_fd(),
            &mut self.received,
            iovs.iter_mut(),
            MsgFlags::MSG_WAITFORONE,
            None,
        )?;
        let wall = SystemTime::now();
        for msg in results {
            let stamp = msg.cmsgs().ok().and_then(|mut c| {
                c.find_map(|m| match m {
                    ControlMessageOwned::ScmTimestampns(t) => u64::try_from(t.tv_sec()).ok().and_then(|secs| {
                        Duration::from_secs(secs).checked_add(Duration::from_nanos(t.tv_nsec().unsigned_abs()))
                    }),
                    _ => None,
                })
            });
            // A stamp from a clock set back, or far off, counts as no wait.
            let waited = stamp
                .and_then(|at| SystemTime::UNIX_EPOCH.checked_add(at))
                .and_then(|at| wall.duration_since(at).ok())
                .filter(|w| *w < Duration::from_secs(10))
                .unwrap_or_default();
            self.got.push(Datagram {
                len: msg.bytes,
                from: msg.address,
                waited,
                truncated: msg.flags.contains(MsgFlags::MSG_TRUNC),
            });
        }
        Ok(())
    }

    /// Sends the replies gathered; a reply the kernel refuses is skipped.
    fn send(&mut self, socket: &UdpSocket) {
        let mut at = 0;
        while at < self.replies.len() {
            let (out, replies) = (&self.out, &self.replies[at..]);
            let slices: [[IoSlice<'_>; 1]; BATCH] =
                std::array::from_fn(|k| [IoSlice::new(replies.get(k).map_or(&[][..], |&(s, e)| &out[s..e]))]);
            let none: [socket::ControlMessage<'_>; 0] = [];
            match socket::sendmmsg(
                socket.as_raw_fd(),
                &mut self.sending,
                slices[..replies.len()].iter(),
                &self.to[at..],
                none,
                MsgFlags::empty(),
            ) {
                Ok(sent) => at += sent.count().max(1),
                Err(Errno::EINTR) => {}
                Err(e) => {
                    tracing::debug!(target: "udp", "send failed: {e}");
                    at += 1;
                }
            }
        }
        self.out.clear();
        self.replies.clear();
        self.to.clear();
    }
}

fn peer(from: &SockaddrStorage) -> Option<SocketAddr> {
    if let Some(v4) = from.as_sockaddr_in() {
        return Some(SocketAddr::from(*v4));
    }
    from.as_sockaddr_in6().map(|v6| SocketAddr::from(*v6))
}

fn serve(socket: &Arc<UdpSocket>, handler: &Handler, stop: &AtomicBool) {
    let sink = || Sink::Udp(socket.clone());
    let mut batch = Batch::new();
    let mut scratch = Scratch::default();
    let mut queue = Queue::new(Instant::now());
    while !stop.load(Ordering::Relaxed) {
        match batch.receive(socket) {
            Ok(()) => {}
            Err(Errno::EAGAIN | Errno::EINTR) => continue,
            Err(e) => {
                tracing::warn!(target: "udp", "receive failed: {e}");
                continue;
            }
        }
        let now = Instant::now();
        let least = batch.got.iter().map(|d| d.waited).min().unwrap_or_default();
        if let Some(size) = queue.observe(least, batch.got.len() < BATCH, now) {
            tracing::debug!(target: "udp", "receive buffer now {size} bytes");
            let _ = socket2::SockRef::from(&**socket).set_recv_buffer_size(size);
        }
        let mut late = 0;
        for i in 0..batch.got.len() {
            let d = batch.got[i];
            let Some(peer) = d.from.as_ref().and_then(peer) else {
                continue;
            };
            if d.truncated {
                handler.metrics.dropped(Transport::Udp);
                continue;
            }
            if d.waited > MAX_WAIT {
                late += 1;
                continue;
            }
            let started = now.checked_sub(d.waited).unwrap_or(now);
            let query = &batch.bufs[i][..d.len];
            if handler.handle_guarded(query, peer, Transport::Udp, &mut scratch, &sink, started) {
                let start = batch.out.len();
                batch.out.extend_from_slice(&scratch.out);
                batch.replies.push((start, batch.out.len()));
                batch.to.push(d.from);
            }
        }
        if late > 0 {
            handler.metrics.udp_late_dropped.fetch_add(late, Ordering::Relaxed);
        }
        batch.send(socket);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn a_standing_queue_tightens_the_buffer_and_an_emptied_one_loosens_it() {
        let t0 = Instant::now();
        let mut q = Queue::new(t0);
        // A pause: one window's queries waited long, but a batch emptied
        // the queue within the window, and the least wait was short.
        assert_eq!(q.observe(40 * MS, false, t0 + 10 * MS), None);
        assert_eq!(q.observe(Duration::ZERO, true, t0 + 50 * MS), None);
        assert_eq!(q.observe(Duration::ZERO, true, t0 + 101 * MS), None);
        // Overload: every query of a whole window waited over 5 ms.
        assert_eq!(q.observe(8 * MS, false, t0 + 150 * MS), None);
        assert_eq!(q.observe(6 * MS, false, t0 + 202 * MS), Some(TIGHT_BUFFER));
        // Still full batches: stays tight, however short the waits.
        assert_eq!(q.observe(MS, false, t0 + 303 * MS), None);
        // The queue emptied: roomy again at the end of the window.
        assert_eq!(q.observe(Duration::ZERO, true, t0 + 350 * MS), None);
        assert_eq!(q.observe(Duration::ZERO, true, t0 + 404 * MS), Some(ROOMY_BUFFER));
        assert_eq!(q.observe(Duration::ZERO, true, t0 + 505 * MS), None);
    }
}
