//! A UDP worker's socket door: the overload policy's decisions applied
//! to the socket ([`super::queue`] decides, kept apart from the sockets).

use std::net::UdpSocket;

use nix::sys::socket::{self, sockopt};

use super::batch::Batch;
use super::queue::{Change, ROOMY_BUFFER, TIGHT_BUFFER};

/// Applies the queue's decision, if any (inlined: there is none after
/// nearly every batch, and a call costs more than the check).
#[inline]
pub(super) fn adjust(socket: &UdpSocket, batch: &mut Batch, change: Option<Change>) {
    if let Some(change) = change {
        apply(socket, batch, change);
    }
}

/// Applies a change: the receive buffer's size, and whether the kernel
/// reports the socket's drop count with each datagram.
#[inline(never)]
fn apply(socket: &UdpSocket, batch: &mut Batch, change: Change) {
    let tight = change == Change::Tighten;
    let size = if tight { TIGHT_BUFFER } else { ROOMY_BUFFER };
    tracing::debug!(target: "udp", "receive buffer now {size} bytes");
    let _ = socket2::SockRef::from(socket).set_recv_buffer_size(size);
    if socket::setsockopt(socket, sockopt::RxqOvfl, &i32::from(tight)).is_ok() {
        batch.reports_drops(tight);
    }
    if tight {
        batch.make_room();
    }
}
