//! UDP: one `SO_REUSEPORT` socket per worker thread, so the kernel spreads
//! clients across workers; each worker owns its buffers and answers
//! synchronously (no task, no allocation for the packet itself).

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use socket2::{Domain, Protocol, Socket, Type};

use super::defer::Sink;
use super::{Handler, Scratch};
use crate::metrics::Transport;

/// How often an idle worker checks for shutdown.
const POLL: Duration = Duration::from_millis(200);
/// Requested receive buffer: bursts of small queries queue here.
const RECV_BUFFER: usize = 4 << 20;

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
    Ok(socket.into())
}

fn serve(socket: &Arc<UdpSocket>, handler: &Handler, stop: &AtomicBool) {
    let sink = || Sink::Udp(socket.clone());
    let mut buf = vec![0u8; 65535];
    let mut scratch = Scratch::default();
    while !stop.load(Ordering::Relaxed) {
        let (len, peer) = match socket.recv_from(&mut buf) {
            Ok(r) => r,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
                ) =>
            {
                continue
            }
            Err(e) => {
                tracing::warn!(target: "udp", "receive failed: {e}");
                continue;
            }
        };
        if handler.handle_guarded(&buf[..len], peer, Transport::Udp, &mut scratch, &sink) {
            if let Err(e) = socket.send_to(&scratch.out, peer) {
                tracing::debug!(target: "udp", "send to {peer} failed: {e}");
            }
        }
    }
}
