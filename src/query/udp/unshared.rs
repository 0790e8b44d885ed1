//! The port a listener asked for port 0 binds: one no socket holds.
//!
//! A UDP socket with `SO_REUSEPORT` bound to port 0 may be given a port
//! that another socket with `SO_REUSEPORT` of the same user already holds:
//! the kernel counts such a port as one the two may share. The listener
//! would then join that group, another process's, and the kernel would
//! split the port's queries between the two servers. (TCP's choice of a
//! port leaves shared ports out; UDP's does not.) So the port is chosen by
//! probes without `SO_REUSEPORT`, which any socket on a port refuses, UDP
//! and TCP alike, and the listener binds it once they are closed. (Another
//! such bind in the microseconds between could still share the port: the
//! kernel gives no way to bind a `SO_REUSEPORT` group's first socket
//! alone.)

use std::io;
use std::net::SocketAddr;

use socket2::{Domain, Protocol, Socket, Type};

/// `addr` with a port that no UDP or TCP socket holds on its address now.
pub fn port(addr: SocketAddr) -> io::Result<SocketAddr> {
    let probe = |kind, protocol| -> io::Result<Socket> {
        let socket = Socket::new(Domain::for_address(addr), kind, Some(protocol))?;
        if addr.is_ipv6() {
            socket.set_only_v6(true)?;
        }
        Ok(socket)
    };
    let mut refused = io::Error::from(io::ErrorKind::AddrInUse);
    for _ in 0..TRIES {
        let udp = probe(Type::DGRAM, Protocol::UDP)?;
        udp.bind(&addr.into())?;
        let chosen = udp.local_addr()?.as_socket().ok_or(io::ErrorKind::AddrNotAvailable)?;
        match probe(Type::STREAM, Protocol::TCP)?.bind(&chosen.into()) {
            Ok(()) => return Ok(chosen),
            Err(e) if e.kind() == io::ErrorKind::AddrInUse => refused = e, // held for TCP: another
            Err(e) => return Err(e),
        }
    }
    Err(refused)
}

/// Ports free for UDP tried for TCP before giving up.
const TRIES: usize = 20;

#[cfg(test)]
mod tests {
    use super::*;

    /// Held sockets (few: tests share the process's open-file limit) and
    /// draws: without the probes, a draw lands on a held port about once
    /// in 141 (200 of the 28,232 ephemeral ports), so 1,000 draws all miss
    /// them less than once in 1,000 runs.
    const HELD: usize = 200;
    const DRAWS: usize = 1000;

    #[test]
    fn a_port_chosen_for_port_0_is_one_no_reuseport_socket_holds() {
        let any: SocketAddr = "127.0.0.1:0".parse().expect("address");
        let sockets: Vec<Socket> = (0..HELD)
            .map(|_| {
                let s = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP)).expect("socket");
                s.set_reuse_port(true).expect("SO_REUSEPORT");
                s.bind(&any.into()).expect("bind");
                s
            })
            .collect();
        let held: std::collections::HashSet<u16> = (sockets.iter())
            .map(|s| s.local_addr().expect("bound").as_socket().expect("inet").port())
            .collect();
        for _ in 0..DRAWS {
            let chosen = port(any).expect("a free port").port();
            assert_ne!(chosen, 0);
            assert!(!held.contains(&chosen), "port {chosen} is held by another socket");
        }
    }
}
