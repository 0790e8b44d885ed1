//! A UDP worker's batch: the buffers, headers and control space for one
//! `recvmmsg` and one `sendmmsg`, reused for every batch. Each received
//! datagram comes, while the worker asks for them ([`Batch::stamps`]; the
//! wall clock is read for them only then), with the kernel's receive stamp
//! (how long it queued) and the socket's count of datagrams dropped at the
//! door (`SO_RXQ_OVFL`), and on a socket bound to the unspecified
//! address, the address it was sent to (`IP_PKTINFO`, `IPV6_RECVPKTINFO`),
//! which its reply is then sent from (else the kernel picks the source by
//! route, and a query to another of the host's addresses gets a reply from
//! an address its client does not expect, and drops). Replies from one
//! address (all of them, but on a multi-homed host) go in one `sendmmsg`.
//!
//! nix's `recvmmsg` does not reset each header's control length between
//! calls, and the kernel leaves there the length it used. Once a slot held
//! a datagram with less control data (a stamp without a drop count), a
//! later one with more comes back cut (`MSG_CTRUNC`) and its drop count is
//! lost, and with it the stamp (nix gives no control data from a cut
//! buffer). So the headers are rebuilt, which restores the full length,
//! whenever a batch was cut and when the worker starts reading drop counts
//! or stamps. A slot whose datagram carried no control data at all (the
//! kernel turns stamps on a moment after a socket asks, so the first
//! datagrams may come unstamped) keeps a control length of 0 and cuts every
//! later stamp: a batch with an unstamped datagram (while stamps are asked
//! for) rebuilds them too, a bounded number of times
//! ([`UNSTAMPED_REBUILDS`]), so a kernel that never stamps costs no rebuild
//! per batch.
//!
//! A `recvmmsg` is offered fewer slots than [`BATCH`] after short batches
//! ([`Batch::slots`]: twice the last batch, at least [`FEW`], rounded up
//! to 4, 8, 16 or 32), since mapping and handing the kernel all 32 cost
//! as much as the work of a batch of one to three. A batch that fills
//! fewer slots than [`BATCH`] is followed at once by a read, not waiting,
//! into the rest, whose datagrams join it: so a batch is full (32) exactly
//! when it would have been with 32 slots offered, when the kernel had at
//! least that many queued, which the overload policy reads as "the queue
//! held more" (`queue.rs`: a queue may stand only while batches come back
//! full, and a full batch turns the stamps on). The extra read costs a
//! system call only when a batch filled its slots and the queue then
//! held nothing more, and the next batch is offered more slots.

use std::io::{IoSlice, IoSliceMut};
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;

use nix::errno::Errno;
use nix::sys::socket::{self, sockopt, MsgFlags};

pub use family::Datagram;
use family::{receiving, send, take, Family};

mod family;

/// Datagrams received and replies sent per system call, at most.
pub const BATCH: usize = 32;
/// The largest query read whole; a longer datagram is dropped.
pub const SIZE: usize = 4096;
/// Rebuilds a worker makes for batches with an unstamped datagram.
pub const UNSTAMPED_REBUILDS: u8 = 64;

/// One reply in [`Batch::out`]: its bytes, the datagram it answers (whose
/// sender it goes to) and the address it goes from (`None`: the socket's).
#[derive(Clone, Copy)]
struct Reply {
    start: usize,
    end: usize,
    of: usize,
    from: Option<IpAddr>,
}

/// Runs of at most this many replies are sent from a small array of slices
/// (filling [`BATCH`] slices for one or two replies costs more than the
/// replies' own bookkeeping).
const FEW: usize = 4;

/// A worker's buffers, reused for every batch.
pub struct Batch {
    pub bufs: Box<[[u8; SIZE]; BATCH]>,
    /// The headers, in the socket's address family.
    family: Family,
    pub got: Vec<Datagram>,
    /// Where each datagram of [`Batch::got`] came from (`None`: not an
    /// address of the socket's family).
    pub peers: Vec<Option<SocketAddr>>,
    /// The socket's drop count, if a datagram of the last batch carried it.
    pub drops: Option<u32>,
    /// The wall clock as the last batch was read, in nanoseconds as the
    /// stamps are (0: not read, stamps were off).
    wall: u64,
    /// The replies back to back.
    out: Vec<u8>,
    replies: Vec<Reply>,
    /// Rebuilds left for unstamped datagrams (see the module comment).
    unstamped: u8,
    /// Whether the socket delivers receive stamps (it does when bound).
    stamps: bool,
    /// Whether it reports drop counts, and destinations (see
    /// [`Batch::reports`]).
    drop_counts: bool,
    destinations: bool,
    /// Slots offered to the next `recvmmsg` (see the module comment).
    slots: usize,
}

impl Batch {
    /// Buffers for a socket bound to `local` (its address family's; `None`: IPv4).
    pub fn new(local: Option<SocketAddr>) -> Batch {
        Batch {
            bufs: Box::new([[0; SIZE]; BATCH]),
            family: Family::new(local.is_some_and(|a| a.is_ipv6()), BATCH),
            got: Vec::with_capacity(BATCH),
            peers: Vec::with_capacity(BATCH),
            drops: None,
            wall: 0,
            out: Vec::with_capacity(BATCH * 512),
            replies: Vec::with_capacity(BATCH),
            unstamped: UNSTAMPED_REBUILDS,
            stamps: true,
            drop_counts: true,
            destinations: true,
            slots: BATCH,
        }
    }

    /// Asks `socket` for each datagram's receive stamp, or stops asking.
    /// The kernel keeps stamping arrivals once a socket has asked (until
    /// it closes), so datagrams queued while stamps were off carry their
    /// arrival time when read after they are back on.
    pub fn stamps(&mut self, socket: &UdpSocket, on: bool) {
        if on == self.stamps || socket::setsockopt(socket, sockopt::ReceiveTimestampns, &on).is_err() {
            return;
        }
        self.stamps = on;
        if on {
            // while off, every slot's control length shrank to what came
            self.make_room();
        }
    }

    /// Tells whether the socket reports drop counts (`SO_RXQ_OVFL`), and
    /// destinations (`IP_PKTINFO`, a wildcard bind), with each datagram:
    /// while it reports neither and stamps are off, a datagram's control
    /// data is not looked for. Both are assumed until told.
    pub fn reports(&mut self, drop_counts: bool, destinations: bool) {
        (self.drop_counts, self.destinations) = (drop_counts, destinations);
    }

    /// Tells whether the socket reports drop counts (see [`Batch::reports`]).
    pub fn reports_drops(&mut self, on: bool) {
        self.drop_counts = on;
    }

    /// Restores every slot's full control space (see the module comment).
    pub fn make_room(&mut self) {
        match &mut self.family {
            Family::V4(h) => h.received = receiving(BATCH),
            Family::V6(h) => h.received = receiving(BATCH),
        }
    }

    /// Receives up to [`BATCH`] datagrams (waits for the first).
    #[inline(always)]
    pub fn receive(&mut self, socket: &UdpSocket) -> Result<(), Errno> {
        self.receive_with(socket, MsgFlags::MSG_WAITFORONE)
    }

    /// Receives up to [`BATCH`] datagrams already queued (`EAGAIN`: none).
    pub fn receive_now(&mut self, socket: &UdpSocket) -> Result<(), Errno> {
        self.receive_with(socket, MsgFlags::MSG_DONTWAIT)
    }

    #[inline(always)]
    fn receive_with(&mut self, socket: &UdpSocket, flags: MsgFlags) -> Result<(), Errno> {
        self.got.clear();
        self.peers.clear();
        (self.drops, self.wall) = (None, 0);
        let offered = self.slots;
        let (mut cut, mut bare) = match offered {
            FEW => self.receive_into::<FEW, 0>(socket, flags)?,
            8 => self.receive_into::<8, 0>(socket, flags)?,
            16 => self.receive_into::<16, 0>(socket, flags)?,
            _ => self.receive_into::<BATCH, 0>(socket, flags)?,
        };
        if self.got.len() == offered && offered < BATCH {
            // The slots filled: what else is queued joins the batch, so
            // that a full batch keeps meaning the kernel had more.
            let more = match offered {
                FEW => self.receive_into::<{ BATCH - FEW }, FEW>(socket, MsgFlags::MSG_DONTWAIT),
                8 => self.receive_into::<{ BATCH - 8 }, 8>(socket, MsgFlags::MSG_DONTWAIT),
                _ => self.receive_into::<{ BATCH - 16 }, 16>(socket, MsgFlags::MSG_DONTWAIT),
            };
            if let Ok((c, b)) = more {
                (cut, bare) = (cut | c, bare | b);
            }
        }
        self.slots = slots_after(self.got.len());
        if cut {
            self.make_room();
        } else if bare && self.unstamped > 0 {
            self.unstamped -= 1;
            self.make_room();
        }
        Ok(())
    }

    /// One `recvmmsg` into the `N` buffers from `AT`, its datagrams added
    /// to the batch; returns whether one's control data was cut and whether
    /// one came unstamped while stamps are asked for.
    fn receive_into<const N: usize, const AT: usize>(
        &mut self,
        socket: &UdpSocket,
        flags: MsgFlags,
    ) -> Result<(bool, bool), Errno> {
        let Some(bufs) = self.bufs[AT..].first_chunk_mut::<N>() else {
            return Ok((false, false));
        };
        let mut iovs = bufs.each_mut().map(|b| [IoSliceMut::new(b)]);
        let fd = socket.as_raw_fd();
        let stamps = (self.stamps, self.stamps || self.drop_counts || self.destinations);
        let into = (&mut self.got, &mut self.peers, &mut self.drops, &mut self.wall);
        Ok(match &mut self.family {
            Family::V4(h) => take(
                socket::recvmmsg(fd, &mut h.received, iovs.iter_mut(), flags, None)?,
                stamps,
                into,
            ),
            Family::V6(h) => take(
                socket::recvmmsg(fd, &mut h.received, iovs.iter_mut(), flags, None)?,
                stamps,
                into,
            ),
        })
    }

    /// Queues `reply` to the sender of datagram `of`, from `from` (`None`:
    /// the socket's own address).
    #[inline(always)]
    pub fn reply(&mut self, of: usize, reply: &[u8], from: Option<IpAddr>) {
        let start = self.out.len();
        self.out.extend_from_slice(reply);
        self.replies.push(Reply {
            start,
            end: self.out.len(),
            of,
            from,
        });
    }

    /// Sends the replies queued, those from one address at a time; a reply
    /// the kernel refuses is skipped.
    #[inline(always)]
    pub fn send(&mut self, socket: &UdpSocket) {
        let mut at = 0;
        while at < self.replies.len() {
            let from = self.replies[at].from;
            let run = self.replies[at..].iter().take_while(|r| r.from == from).count();
            let sent = if run <= FEW {
                self.send_run::<FEW>(socket, at, run)
            } else {
                self.send_run::<BATCH>(socket, at, run)
            };
            match sent {
                Ok(sent) => at += sent.max(1),
                Err(Errno::EINTR) => {}
                Err(e) => {
                    tracing::debug!(target: "udp", "send failed: {e}");
                    at += 1;
                }
            }
        }
        self.out.clear();
        self.replies.clear();
    }

    /// One `sendmmsg` of the `run` replies from `at` (at most `N`), all from
    /// the first one's address; returns how many the kernel took.
    fn send_run<const N: usize>(&mut self, socket: &UdpSocket, at: usize, run: usize) -> Result<usize, Errno> {
        let replies = &self.replies[at..at + run.min(N)];
        let out = &self.out;
        let slices: [[IoSlice<'_>; 1]; N] =
            std::array::from_fn(|k| [IoSlice::new(replies.get(k).map_or(&[][..], |r| &out[r.start..r.end]))]);
        let slices = &slices[..replies.len()];
        let peers = &self.peers;
        let to = replies.iter().map(|r| peers.get(r.of).copied().flatten());
        let (fd, from) = (socket.as_raw_fd(), replies.first().and_then(|r| r.from));
        match &mut self.family {
            Family::V4(h) => send(fd, h, slices, to, from),
            Family::V6(h) => send(fd, h, slices, to, from),
        }
    }
}

/// Slots to offer after a batch of `got` (see the module comment): twice
/// that, at least [`FEW`], rounded up to a power of two, at most [`BATCH`].
fn slots_after(got: usize) -> usize {
    (2 * got).clamp(FEW, BATCH).next_power_of_two().min(BATCH)
}

#[cfg(test)]
mod tests;
