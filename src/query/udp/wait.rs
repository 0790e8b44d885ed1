//! How a UDP worker waits for its next batch. A worker is its own
//! forwarding lane (`forward/lanes.rs`; `run` in `udp/mod.rs`): its loop runs inside a
//! single-threaded runtime of its own, and the misses it reads run there as
//! tasks, on the same thread. While none is alive the loop is the plain
//! blocking `recvmmsg` ([`super::worker`]), the runtime idle beside it, so
//! a cache hit costs what it did before. While misses are in flight the
//! loop waits for the shared socket through the runtime instead
//! ([`Lane::readable`]): the socket is registered with the runtime's
//! reactor, so one `epoll_wait` watches it and the misses' upstream ports
//! together, as unbound's event loop does, and a miss costs two sleeps of
//! one thread (for the query, for the reply) where the hand-off to another
//! thread cost three. The socket is then read without waiting; after a
//! short batch the runtime's view that it is readable is cleared instead
//! of reading once more to meet `EAGAIN` (a datagram arriving meanwhile
//! is a new event the next `epoll_wait` reports), and after a full one the
//! loop yields, so that the misses run between batches.

use std::io;
use std::net::UdpSocket;
use std::os::fd::AsFd;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use nix::poll::{PollFd, PollFlags};
use tokio::io::unix::{AsyncFd, AsyncFdReadyGuard};
use tokio::io::Interest;
use tokio::runtime::RuntimeMetrics;
use tokio::time::{Instant, Sleep};

/// How often an idle worker checks for shutdown.
pub(super) const POLL: Duration = Duration::from_millis(200);

/// How long a stopped worker lets its misses in flight finish (forward's
/// whole budget, 5 s, and a margin).
const DRAIN: Duration = Duration::from_secs(6);

/// A worker's lane as its loop sees it.
pub(super) struct Lane {
    /// The shared socket, registered with the runtime's reactor (readable only).
    fd: AsyncFd<Arc<UdpSocket>>,
    tasks: RuntimeMetrics,
    /// The shutdown poll: a timer held by the loop, not a task (a task
    /// would count as a miss in flight; see `lanes.rs` on timers).
    poll: Pin<Box<Sleep>>,
}

impl Lane {
    /// Must be called inside the worker's runtime.
    pub(super) fn new(socket: &Arc<UdpSocket>) -> io::Result<Lane> {
        // tokio deprecates its safe constructors for types whose descriptor
        // may change or close while registered; the Arc keeps this one open
        // until the registration drops, and it never changes
        #[allow(deprecated)]
        let fd = AsyncFd::with_interest(socket.clone(), Interest::READABLE)?;
        Ok(Lane {
            fd,
            tasks: tokio::runtime::Handle::current().metrics(),
            poll: Box::pin(tokio::time::sleep(POLL)),
        })
    }

    /// Whether misses are in flight (any task alive on the runtime).
    pub(super) fn busy(&self) -> bool {
        self.tasks.num_alive_tasks() > 0
    }

    /// Waits until the shared socket is readable (the guard, to clear
    /// after a short batch) or [`POLL`] passed (`None`).
    pub(super) async fn readable(&mut self) -> Option<AsyncFdReadyGuard<'_, Arc<UdpSocket>>> {
        tokio::select! {
            biased;
            ready = self.fd.readable() => ready.ok(),
            () = self.poll.as_mut() => {
                self.poll.as_mut().reset(Instant::now() + POLL);
                None
            }
        }
    }

    /// Lets the misses in flight finish, for at most [`DRAIN`]: the worker
    /// stopped reading (shutdown, reload, hand-over).
    pub(super) async fn drain(&self) {
        let until = Instant::now() + DRAIN;
        while self.busy() && Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

/// Waits in `poll` (up to `wait`) until `shared` or one of `apart` (the
/// limited clients' queues) is readable: a round's wait (`worker.rs`).
pub(super) fn poll<'a>(shared: &UdpSocket, apart: impl Iterator<Item = &'a UdpSocket>, wait: Duration) {
    let mut fds = vec![PollFd::new(shared.as_fd(), PollFlags::POLLIN)];
    fds.extend(apart.map(|s| PollFd::new(s.as_fd(), PollFlags::POLLIN)));
    let _ = nix::poll::poll(&mut fds, wait.as_millis() as u16);
}
