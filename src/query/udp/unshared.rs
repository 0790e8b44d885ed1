//! The port a listener asked for port 0 binds: one no socket holds
//! ([`bind`]); and the sockets of every listener, UDP and TCP ([`socket`]).
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

/// What `bind` makes at `addr`; at port 0, at a port no socket holds
/// ([`port`]), and at another (up to [`TRIES`] in all) when `bind` finds
/// that one taken (`in_use`) in the moment between the probe and the
/// bind. `probe_failed`: the error of a probe that fails.
pub fn bind<T, E>(
    addr: SocketAddr,
    probe_failed: impl Fn(io::Error) -> E,
    in_use: impl Fn(&E) -> bool,
    mut bind: impl FnMut(SocketAddr) -> Result<T, E>,
) -> Result<T, E> {
    if addr.port() != 0 {
        return bind(addr);
    }
    let mut left = TRIES;
    loop {
        left -= 1;
        match bind(port(addr).map_err(&probe_failed)?) {
            Err(e) if left > 0 && in_use(&e) => {}
            done => return done,
        }
    }
}

/// A new socket of `kind` (`Type::DGRAM`: UDP, else TCP) for `addr`'s
/// family, IPv6 only for an IPv6 address, as every listener's is.
pub fn socket(addr: SocketAddr, kind: Type) -> io::Result<Socket> {
    let protocol = if kind == Type::DGRAM {
        Protocol::UDP
    } else {
        Protocol::TCP
    };
    let socket = Socket::new(Domain::for_address(addr), kind, Some(protocol))?;
    if addr.is_ipv6() {
        socket.set_only_v6(true)?;
    }
    Ok(socket)
}

/// `addr` with a port that no UDP or TCP socket holds on its address now.
pub fn port(addr: SocketAddr) -> io::Result<SocketAddr> {
    let mut refused = io::Error::from(io::ErrorKind::AddrInUse);
    for _ in 0..TRIES {
        let udp = socket(addr, Type::DGRAM)?;
        udp.bind(&addr.into())?;
        let chosen = udp.local_addr()?.as_socket().ok_or(io::ErrorKind::AddrNotAvailable)?;
        match socket(addr, Type::STREAM)?.bind(&chosen.into()) {
            Ok(()) => return Ok(chosen),
            Err(e) if e.kind() == io::ErrorKind::AddrInUse => refused = e, // held for TCP: another
            Err(e) => return Err(e),
        }
    }
    Err(refused)
}

/// Ports tried before giving up: free for UDP and tried for TCP by the
/// probes, or chosen and tried by a listener.
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
