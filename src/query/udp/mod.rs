//! UDP: one `SO_REUSEPORT` socket per worker thread, so the kernel spreads
//! clients across workers. Each worker loops over batches: one `recvmmsg`
//! (`MSG_WAITFORONE`: wait for the first datagram, then take what is
//! queued, up to [`BATCH`]) between two clock reads, each query answered
//! synchronously in the worker's scratch space, and one `sendmmsg` of the
//! replies, each to the address its query came from. Buffers are the
//! worker's own, reused for every batch ([`batch`]). A forwarded cache
//! miss is the one query not answered in the call: each worker is its own
//! forwarding lane, a single-threaded runtime its loop runs in, and the
//! miss becomes a task there, on the same thread; while misses are in
//! flight the worker waits for its socket through that runtime, which
//! watches their upstream ports in the same `epoll_wait` ([`wait`]).
//!
//! Overload is bounded in time ([`queue`] has the policy and its reasons).
//! The kernel stamps each datagram as it arrives (`SO_TIMESTAMPNS`), which
//! tells the worker how long each query queued. Delivering the stamps costs
//! about half a microsecond a query (the zero-work echo with and without
//! them), so a worker asks for them only while its queue may stand: from a
//! batch that came back full (the queue held more) until an [`INTERVAL`]
//! without one, while overloaded, and after it was away from its socket (a
//! stop, which ends a waiting `recvmmsg` with `EINTR`; a clock read before
//! each wait for the socket, or read that does not wait, more than
//! [`STANDING`] after the last batch's, as when stopped or preempted while
//! answering; a wait that ended more than [`STANDING`] past its bound, or
//! a batch read more than [`MAX_WAIT`] after the last clock read, woken
//! and then starved: that batch itself is answered unjudged). The stamps
//! are asked for before the wait, and a wait that times out is observed
//! as an empty queue, so time spent waiting never counts as time away. Once a socket has asked, the kernel
//! stamps every arrival until the socket closes, so what queued while
//! delivery was off tells its wait when read after it is back on. Without
//! stamps, the batch before emptied the queue, so a query waited at most
//! that batch's work (under [`STANDING`]) and the worker's wake-up. While
//! the worker keeps up,
//! the receive buffer is roomy ([`ROOMY_BUFFER`]), so bursts and pauses
//! queue rather than drop. When the queue stays non-empty (full batches)
//! with its least wait over [`STANDING`] for [`INTERVAL`] (a standing
//! queue: overload, not a burst), the worker
//! shrinks the buffer to a few milliseconds of work ([`TIGHT_BUFFER`]) so
//! that the kernel drops the excess at the door
//! (`clusterdns_udp_kernel_drops`), which costs the worker nothing, and it
//! drops unanswered the backlog queued before that moment
//! (`clusterdns_udp_late_dropped_total`), so what it answers has not queued
//! long. It then reads the socket's drop count (`SO_RXQ_OVFL`) and keeps
//! the buffer tight until, over a window of [`CALM`], the kernel dropped at
//! most a tenth of the arrivals ([`SHED`]): a
//! CPU-throttled worker empties its short queue in every slice of CPU it
//! gets while still shedding, so an empty queue alone does not mean the
//! overload is over. A query that waited longer than a client waits
//! ([`MAX_WAIT`]: the worker was stopped or starved) is dropped unanswered
//! and counted too; a younger one is still wanted (stub resolvers retry
//! after 1 to 5 s), so a starved worker's backlog is answered outside
//! overload. The same stamp starts the query's duration metric, which then
//! counts the time spent queued. Without stamps the duration starts at
//! the batch's clock read, after `recvmmsg`: it leaves out the wait of a
//! query that arrived while the previous batch was answered (at most that
//! batch's work), and that of a batch read late by a worker that was away.
//!
//! That policy protects the server, not its clients: the kernel drops at
//! a full receive buffer whatever the source, so one client sending more
//! than the server can answer would take everyone's share. Fairness starts
//! at that door. While the queue stands, a worker counts the sources of
//! its batches ([`fair`], fixed space, nothing counted while it keeps up);
//! a client that sent more than `limits { client_share }` percent of an
//! overloaded window's queries gets a receive queue of its own ([`boxes`]:
//! a socket in the group connected to its address, which the kernel
//! prefers for its datagrams), read in turn with the shared one
//! ([`worker`]). Its excess is then dropped at its own door, the shared
//! queue stays short for everyone else, and the limited client still gets
//! whatever the others leave, at least a batch per round. Start reading at
//! [`worker`] for the loop, [`fair`] for who is limited and released.

mod batch;
mod boxes;
mod door;
mod fair;
mod queue;
pub mod unshared;
mod wait;
mod worker;

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::thread::JoinHandle;

use nix::sys::socket::{self, sockopt};
use socket2::Type;

use super::forward::lanes;
use super::handler::Handler;
pub use batch::BATCH;
pub use queue::{Change, Queue, CALM, INTERVAL, MAX_WAIT, ROOMY_BUFFER, SHED, STANDING, TIGHT_BUFFER};

use wait::{Lane, POLL};

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
            .spawn(move || run(&Arc::new(socket), &handler, &stop))?;
        threads.push(thread);
    }
    Ok(threads)
}

/// Runs the worker on `socket`: as a lane of its own when it can have one
/// (at most `lanes::WORKER_LANES`), else handing its misses to the shared lanes.
fn run(socket: &Arc<UdpSocket>, handler: &Handler, stop: &AtomicBool) {
    let Some(lane) = lanes::Worker::claim() else {
        return futures::executor::block_on(worker::serve(socket, handler, stop, None));
    };
    lane.enter(async {
        let own = match Lane::new(socket) {
            Ok(own) => Some(own),
            Err(e) => {
                tracing::warn!(target: "udp", "worker's misses go to the shared lanes: {e}");
                lanes::set_local(false);
                None
            }
        };
        worker::serve(socket, handler, stop, own).await;
    });
}

/// Takes `socket` out of its `SO_REUSEPORT` group's choice without
/// closing it, for a hand-over: connected to a peer that never sends
/// (its own address, port 9), it is skipped by the kernel's choice of a
/// socket for new datagrams (Linux 5.4+, and stable kernels with
/// "udp: correct reuseport selection with connected sockets"), while the
/// datagrams already queued on it stay to be read and answered. A peer
/// given to `sendmmsg` still overrides the connected one.
pub fn leave_group(socket: &UdpSocket) -> io::Result<()> {
    let local = socket.local_addr()?;
    socket.connect(SocketAddr::new(local.ip(), 9))
}

/// Whether a datagram is queued on `socket` (a peek that does not wait).
pub fn queued(socket: &UdpSocket) -> bool {
    use std::os::fd::AsRawFd;
    let flags = socket::MsgFlags::MSG_PEEK | socket::MsgFlags::MSG_DONTWAIT | socket::MsgFlags::MSG_TRUNC;
    let mut byte = [0u8; 1];
    socket::recv(socket.as_raw_fd(), &mut byte, flags).is_ok()
}

fn bind(addr: SocketAddr) -> io::Result<UdpSocket> {
    let socket = unshared::socket(addr, Type::DGRAM)?;
    socket.set_reuse_port(true)?;
    let _ = socket.set_recv_buffer_size(ROOMY_BUFFER);
    socket.bind(&addr.into())?;
    socket.set_read_timeout(Some(POLL))?;
    socket::setsockopt(&socket, sockopt::ReceiveTimestampns, &true).map_err(io::Error::from)?;
    boxes::packet_info(&socket, addr)?;
    Ok(socket.into())
}
