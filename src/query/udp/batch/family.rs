//! A batch's headers in its socket's address family. The kernel writes a
//! sender's address (and reads a reply's) in the family's own size, 16 or
//! 28 bytes: a `SockaddrStorage` is 128, copied out of the headers for each
//! datagram received and sent. Each address is made a `SocketAddr` once,
//! as it is read. Here too the reads and writes in a family's headers,
//! and what a read gives the batch ([`Datagram`]).

use std::io::IoSlice;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::os::fd::RawFd;
use std::time::{Duration, SystemTime};

use nix::errno::Errno;
use nix::sys::socket::{
    self, AddressFamily, ControlMessage, ControlMessageOwned, MsgFlags, MultiHeaders, MultiResults,
};
use nix::sys::socket::{SockaddrIn, SockaddrIn6, SockaddrLike};

use nix::sys::time::TimeSpec;

/// One received datagram, as the batch loop sees it (its sender's address
/// is in the batch's `peers`, at the same index).
#[derive(Clone, Copy)]
pub struct Datagram {
    pub len: usize,
    /// Time spent in the receive queue before the batch was read (`None`:
    /// the kernel's stamp was missing).
    pub waited: Option<Duration>,
    pub truncated: bool,
    /// The address it was sent to, on a socket bound to the unspecified
    /// address (`None` on one bound to an address: that address).
    pub to: Option<IpAddr>,
}

/// A stamp older than this counts as none (a clock set far off).
const STAMP_LIMIT: u64 = 10_000_000_000;

/// A socket address of one family, as the kernel reads and writes it.
pub trait Address: SockaddrLike + Copy {
    /// The address (`None`: the kernel wrote one of another family).
    fn get(&self) -> Option<SocketAddr>;
    /// `addr` in this family (`None`: it is of the other).
    fn of(addr: SocketAddr) -> Option<Self>;
}

impl Address for SockaddrIn {
    fn get(&self) -> Option<SocketAddr> {
        (self.family() == Some(AddressFamily::Inet)).then(|| SocketAddr::V4(SocketAddrV4::from(*self)))
    }

    fn of(addr: SocketAddr) -> Option<Self> {
        match addr {
            SocketAddr::V4(a) => Some(a.into()),
            SocketAddr::V6(_) => None,
        }
    }
}

impl Address for SockaddrIn6 {
    fn get(&self) -> Option<SocketAddr> {
        (self.family() == Some(AddressFamily::Inet6)).then(|| SocketAddr::V6(SocketAddrV6::from(*self)))
    }

    fn of(addr: SocketAddr) -> Option<Self> {
        match addr {
            SocketAddr::V6(a) => Some(a.into()),
            SocketAddr::V4(_) => None,
        }
    }
}

/// One family's headers for a `recvmmsg` and for `sendmmsg`s.
pub struct Heads<A> {
    pub received: MultiHeaders<A>,
    pub sending: MultiHeaders<A>,
    /// For replies sent from a given address (`IP_PKTINFO`, `IPV6_PKTINFO`).
    pub sending_from: [MultiHeaders<A>; 2],
    /// Where each reply of a run goes.
    pub to: Vec<Option<A>>,
}

impl<A: Address> Heads<A> {
    fn new(slots: usize) -> Heads<A> {
        Heads {
            received: receiving(slots),
            sending: MultiHeaders::preallocate(slots, None),
            sending_from: [
                MultiHeaders::preallocate(slots, Some(nix::cmsg_space!(nix::libc::in_pktinfo))),
                MultiHeaders::preallocate(slots, Some(nix::cmsg_space!(nix::libc::in6_pktinfo))),
            ],
            to: Vec::with_capacity(slots),
        }
    }
}

/// The headers for `slots` received datagrams, each with its full control space.
pub fn receiving<A: Address>(slots: usize) -> MultiHeaders<A> {
    MultiHeaders::preallocate(
        slots,
        Some(nix::cmsg_space!(nix::sys::time::TimeSpec, u32, nix::libc::in6_pktinfo)),
    )
}

/// The headers of a socket's family.
pub enum Family {
    V4(Heads<SockaddrIn>),
    V6(Heads<SockaddrIn6>),
}

impl Family {
    /// Headers for `slots` datagrams at a time (`v6`: IPv6).
    pub fn new(v6: bool, slots: usize) -> Family {
        if v6 {
            Family::V6(Heads::new(slots))
        } else {
            Family::V4(Heads::new(slots))
        }
    }
}

/// Adds the datagrams of one `recvmmsg` to a batch's `got`, `peers` and
/// drop count (`stamps`: they are asked for, and whether control data may
/// have come at all, see `Batch::reports`); returns whether one's
/// control data was cut and whether one came unstamped while stamps are
/// asked for.
#[inline(always)]
pub fn take<A: Address>(
    results: MultiResults<'_, A>,
    (stamps, look): (bool, bool),
    (got, peers, drops, wall): (
        &mut Vec<Datagram>,
        &mut Vec<Option<SocketAddr>>,
        &mut Option<u32>,
        &mut u64,
    ),
) -> (bool, bool) {
    // the clock read once a batch (a second read into it comes at once)
    if stamps && *wall == 0 {
        *wall = wall_nanos();
    }
    let wall = *wall;
    let (mut cut, mut bare) = (false, false);
    for msg in results {
        let (mut stamp, mut to) = (None, None);
        let cmsgs = if look { msg.cmsgs().ok() } else { None };
        for m in cmsgs.into_iter().flatten() {
            match m {
                ControlMessageOwned::ScmTimestampns(t) => stamp = nanos(t),
                ControlMessageOwned::RxqOvfl(count) => *drops = Some(count),
                ControlMessageOwned::Ipv4PacketInfo(i) => {
                    to = Some(IpAddr::V4(Ipv4Addr::from(u32::from_be(i.ipi_addr.s_addr))));
                }
                ControlMessageOwned::Ipv6PacketInfo(i) => {
                    to = Some(Ipv6Addr::from(i.ipi6_addr.s6_addr).to_canonical());
                }
                _ => {}
            }
        }
        cut |= msg.flags.contains(MsgFlags::MSG_CTRUNC);
        bare |= stamps && stamp.is_none();
        // A stamp from a clock set back counts as no wait, one far off as none.
        let waited = stamp
            .map(|at| wall.saturating_sub(at))
            .filter(|w| *w < STAMP_LIMIT)
            .map(Duration::from_nanos);
        peers.push(msg.address.as_ref().and_then(A::get));
        got.push(Datagram {
            len: msg.bytes,
            waited,
            truncated: msg.flags.contains(MsgFlags::MSG_TRUNC),
            to,
        });
    }
    (cut, bare)
}

/// One `sendmmsg` of `slices` to `to` from `from` (`None`: the socket's
/// own address); returns how many the kernel took.
pub fn send<'a, A: Address>(
    fd: RawFd,
    h: &'a mut Heads<A>,
    slices: &'a [[IoSlice<'a>; 1]],
    to: impl Iterator<Item = Option<SocketAddr>>,
    from: Option<IpAddr>,
) -> Result<usize, Errno> {
    h.to.clear();
    h.to.extend(to.map(|a| a.and_then(A::of)));
    let flags = MsgFlags::empty();
    match from {
        None => {
            let none: [ControlMessage<'_>; 0] = [];
            socket::sendmmsg(fd, &mut h.sending, slices, &h.to, none, flags).map(|r| r.count())
        }
        Some(IpAddr::V4(ip)) => {
            let info = nix::libc::in_pktinfo {
                ipi_ifindex: 0,
                ipi_spec_dst: nix::libc::in_addr {
                    s_addr: u32::from(ip).to_be(),
                },
                ipi_addr: nix::libc::in_addr { s_addr: 0 },
            };
            let cmsg = [ControlMessage::Ipv4PacketInfo(&info)];
            socket::sendmmsg(fd, &mut h.sending_from[0], slices, &h.to, cmsg, flags).map(|r| r.count())
        }
        Some(IpAddr::V6(ip)) => {
            let info = nix::libc::in6_pktinfo {
                ipi6_addr: nix::libc::in6_addr { s6_addr: ip.octets() },
                ipi6_ifindex: 0,
            };
            let cmsg = [ControlMessage::Ipv6PacketInfo(&info)];
            socket::sendmmsg(fd, &mut h.sending_from[1], slices, &h.to, cmsg, flags).map(|r| r.count())
        }
    }
}

/// The wall clock in nanoseconds since the epoch, as stamps are.
fn wall_nanos() -> u64 {
    SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| {
        d.as_secs().saturating_mul(1_000_000_000) + u64::from(d.subsec_nanos())
    })
}

/// A stamp in nanoseconds since the epoch (`None`: before it).
fn nanos(t: TimeSpec) -> Option<u64> {
    let secs = u64::try_from(t.tv_sec()).ok()?;
    secs.checked_mul(1_000_000_000)?.checked_add(t.tv_nsec().unsigned_abs())
}
