//! The queues of limited clients: one UDP socket per client, bound to the
//! listener's address in its `SO_REUSEPORT` group and connected to the
//! client's address with port 0. The kernel gives a datagram to the
//! socket whose address and peer match it best, and a connected socket's
//! peer outranks the group's unconnected sockets (the same rule
//! `leave_group` relies on); a peer port of 0 matches every source port.
//! So from the moment the socket is connected, every datagram from that
//! address, whatever its port, queues there and nowhere else: when the
//! client sends more than is read, the kernel drops its excess at this
//! socket's door, and the shared queue stays short for everyone else.
//! Closing the socket sends the client back to the group.
//!
//! On a wildcard listener (`.:53`), connecting also fixes the socket's own
//! address to the one the route back to the client picks, so only the
//! client's datagrams to that address queue apart; in a pod, clients reach
//! the pod's one address (through the Service), which is that address.
//!
//! The buffer is tight from the start (a limited client is an overloading
//! one) and reports its drop count (`SO_RXQ_OVFL`), which is how the
//! worker learns whether the client's queue keeps up.

use std::io;
use std::net::{IpAddr, SocketAddr, UdpSocket};

use nix::sys::socket::{self, sockopt};
use socket2::{Socket, Type};

use super::queue::TIGHT_BUFFER;

/// A limited client's own queue.
pub struct ClientQueue {
    pub ip: IpAddr,
    pub socket: UdpSocket,
    /// The socket's drop count as last reported (it counts from 0, when
    /// the socket was made).
    pub drops: u32,
}

impl ClientQueue {
    /// Binds a socket beside the listener's at `local` and connects it to
    /// `ip` (any port). Fails for a client of the other address family.
    pub fn open(local: SocketAddr, ip: IpAddr) -> io::Result<ClientQueue> {
        if local.is_ipv4() != ip.is_ipv4() {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "other address family"));
        }
        let socket = super::unshared::socket(local, Type::DGRAM)?;
        socket.set_reuse_port(true)?;
        let _ = socket.set_recv_buffer_size(TIGHT_BUFFER);
        socket.bind(&local.into())?;
        socket::setsockopt(&socket, sockopt::ReceiveTimestampns, &true).map_err(io::Error::from)?;
        socket::setsockopt(&socket, sockopt::RxqOvfl, &1).map_err(io::Error::from)?;
        packet_info(&socket, local)?;
        socket.connect(&SocketAddr::new(ip, 0).into())?;
        Ok(ClientQueue {
            ip,
            socket: socket.into(),
            drops: 0,
        })
    }

    /// Datagrams dropped at the door since the last count (`count`: the
    /// one a batch from this socket reported).
    pub fn dropped(&mut self, count: Option<u32>) -> u64 {
        let Some(count) = count else {
            return 0;
        };
        let new = count.wrapping_sub(self.drops);
        self.drops = count;
        u64::from(new)
    }
}

/// On a socket bound to the unspecified address, asks the kernel for each
/// datagram's destination address (`IP_PKTINFO`, `IPV6_RECVPKTINFO`): the
/// address the query came in on (`rewrite`'s `{server_ip}`, `template`'s
/// `server_ip()`). A socket bound to one address has it as its own.
pub(super) fn packet_info(socket: &Socket, addr: SocketAddr) -> io::Result<()> {
    match addr {
        SocketAddr::V4(a) if a.ip().is_unspecified() => socket::setsockopt(socket, sockopt::Ipv4PacketInfo, &true),
        SocketAddr::V6(a) if a.ip().is_unspecified() => socket::setsockopt(socket, sockopt::Ipv6RecvPacketInfo, &true),
        _ => return Ok(()),
    }
    .map_err(io::Error::from)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn drain(socket: &UdpSocket) -> Vec<IpAddr> {
        socket.set_nonblocking(true).expect("nonblocking");
        let mut from = Vec::new();
        let mut buf = [0u8; 64];
        while let Ok((_, peer)) = socket.recv_from(&mut buf) {
            from.push(peer.ip());
        }
        from
    }

    /// Deterministic, no timing: which socket the kernel queues each
    /// client's datagrams on is decided by the addresses alone.
    #[test]
    fn a_limited_client_queues_apart_from_every_port_and_returns_when_closed() {
        let (local, shared) = super::super::bind_all("127.0.0.1:0".parse().expect("address"), 2).expect("bind");
        let limited = ClientQueue::open(local, [127, 0, 0, 2].into()).expect("client queue");
        let send = |from: [u8; 4], n: usize| {
            let s = UdpSocket::bind(SocketAddr::from((from, 0))).expect("client");
            for _ in 0..n {
                s.send_to(b"q", local).expect("send");
            }
        };
        // The flooder from three ports, and ten polite clients.
        for _ in 0..3 {
            send([127, 0, 0, 2], 5);
        }
        for last in 10..20 {
            send([127, 0, 0, last], 1);
        }
        std::thread::sleep(Duration::from_millis(20));
        let apart = drain(&limited.socket);
        assert_eq!(apart, vec![IpAddr::from([127, 0, 0, 2]); 15]);
        let rest: Vec<IpAddr> = shared.iter().flat_map(drain).collect();
        assert_eq!(rest.len(), 10);
        assert!(rest.iter().all(|ip| *ip != IpAddr::from([127, 0, 0, 2])));
        // Released: back with everyone.
        drop(limited);
        send([127, 0, 0, 2], 4);
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(shared.iter().flat_map(drain).count(), 4);
        // A client of the other family has no queue of its own here.
        assert!(ClientQueue::open(local, "::1".parse().expect("v6")).is_err());
    }
}
