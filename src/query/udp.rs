//! UDP: one `SO_REUSEPORT` socket per worker thread, so the kernel spreads
//! clients across workers. Each worker loops over batches: one `recvmmsg`
//! (`MSG_WAITFORONE`: wait for the first datagram, then take what is
//! queued, up to [`BATCH`]), one clock read, each query answered
//! synchronously in the worker's scratch space, and one `sendmmsg` of the
//! replies, each to the address its query came from. Buffers are the
//! worker's own, reused for every batch.
//!
//! Overload is bounded in time, twice. The receive buffer holds a few
//! milliseconds of work ([`RECV_BUFFER`]), so under a flood the kernel
//! drops the excess at the door (`clusterdns_udp_kernel_drops`) and what
//! is answered has not queued long. And the kernel stamps each datagram as
//! it arrives (`SO_TIMESTAMPNS`): a query that waited longer than
//! [`MAX_WAIT`] (the worker was stopped or starved) is dropped unanswered
//! and counted (`clusterdns_udp_late_dropped_total`) rather than answered
//! after its client gave up, which would only make the queries behind it
//! late too. The same stamp starts the query's duration metric, so it
//! counts the time spent queued.

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
/// Requested receive buffer. The kernel doubles it and charges about
/// 830 bytes per queued query (measured on loopback), so about 315
/// queries queue: 3 ms of work at 10 µs a query.
pub const RECV_BUFFER: usize = 128 << 10;

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
    let _ = socket.set_recv_buffer_size(RECV_BUFFER);
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
                    ControlMessageOwned::ScmTimestampns(t) => {
                        Some(Duration::new(t.tv_sec() as u64, t.tv_nsec() as u32))
                    }
                    _ => None,
                })
            });
            let waited = stamp
                .and_then(|at| wall.duration_since(SystemTime::UNIX_EPOCH + at).ok())
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
