//! The batch against real sockets on loopback: stamps, drop counts and
//! destinations as the kernel delivers them.

use super::*;
use std::net::SocketAddr;
use std::time::Duration;

/// A worker's socket bound on loopback, its address, and a client socket.
fn loopback() -> (UdpSocket, SocketAddr, UdpSocket) {
    let server = super::super::bind("127.0.0.1:0".parse().expect("address")).expect("bind");
    let to = server.local_addr().expect("address");
    (server, to, UdpSocket::bind("127.0.0.1:0").expect("bind"))
}

fn receive_all(batch: &mut Batch, socket: &UdpSocket) -> Vec<Datagram> {
    let mut all = Vec::new();
    while batch.receive(socket).is_ok() {
        all.extend_from_slice(&batch.got);
        if batch.got.len() < BATCH {
            break;
        }
    }
    all
}

#[test]
fn every_datagram_is_stamped_and_drop_counts_survive_shrunken_headers() {
    let (server, to, client) = loopback();
    let mut batch = Batch::new(Some(to));
    // Stamps only: each slot's control length shrinks to a stamp's.
    for _ in 0..BATCH {
        client.send_to(b"query", to).expect("send");
    }
    let got = receive_all(&mut batch, &server);
    assert_eq!(got.len(), BATCH);
    assert!(got.iter().all(|d| d.waited.is_some_and(|w| w < Duration::from_secs(1))));
    assert_eq!(batch.drops, None);
    // A buffer of a few datagrams, and counts asked for: most are dropped.
    socket2::SockRef::from(&server).set_recv_buffer_size(1).expect("buffer");
    socket::setsockopt(&server, socket::sockopt::RxqOvfl, &1).expect("drop counts");
    for _ in 0..200 {
        client.send_to(b"query", to).expect("send");
    }
    let queued = receive_all(&mut batch, &server).len();
    assert!(queued > 0 && queued < 50, "{queued} queued");
    // The next datagram carries the count. Its slot is too short for it
    // (MSG_CTRUNC: nix then gives none of its control data, not even the
    // stamp), which rebuilds the headers: the next one has both.
    client.send_to(b"query", to).expect("send");
    let got = receive_all(&mut batch, &server);
    assert_eq!((got.len(), got[0].waited, batch.drops), (1, None, None));
    client.send_to(b"query", to).expect("send");
    let got = receive_all(&mut batch, &server);
    assert_eq!(got.len(), 1);
    assert!(got[0].waited.is_some());
    assert_eq!(batch.drops, u32::try_from(200 - queued).ok());
}

#[test]
fn a_slot_that_held_an_unstamped_datagram_stamps_again() {
    // A socket not yet stamping (as before the kernel turns stamps on):
    // its datagram leaves the slot's control length at 0.
    let server = UdpSocket::bind("127.0.0.1:0").expect("bind");
    let to = server.local_addr().expect("address");
    let client = UdpSocket::bind("127.0.0.1:0").expect("bind");
    let mut batch = Batch::new(None);
    client.send_to(b"query", to).expect("send");
    let got = receive_all(&mut batch, &server);
    assert_eq!((got.len(), got[0].waited), (1, None));
    // Stamps on: the same slot must carry the next one's stamp, and
    // the stamp must say how long it queued.
    socket::setsockopt(&server, socket::sockopt::ReceiveTimestampns, &true).expect("stamps");
    client.send_to(b"query", to).expect("send");
    let got = receive_all(&mut batch, &server);
    assert_eq!(got.len(), 1);
    assert!(got[0].waited.is_some(), "the slot carries the stamp again");
    // The kernel turns arrival stamps on in a deferred work item; until
    // it has run, a datagram is stamped when it is read (a wait of ~0).
    // So the wait is checked on datagrams sent after that, at most 20.
    let waits = queued_wait(&mut batch, &server, &client, false);
    assert!(
        waits.is_empty(),
        "no stamp says how long the datagram queued: {waits:?}"
    );
}

/// Sends up to 20 datagrams, each read 50 ms after it was sent (with
/// stamps `off_meanwhile`, turned on again before the read), until one's
/// stamp says it queued at least 40 ms: the waits of those that did not
/// (all 20 of them when none did; empty when one did).
fn queued_wait(
    batch: &mut Batch,
    server: &UdpSocket,
    client: &UdpSocket,
    off_meanwhile: bool,
) -> Vec<Option<Duration>> {
    let to = server.local_addr().expect("address");
    let mut waits = Vec::new();
    for _ in 0..20 {
        if off_meanwhile {
            batch.stamps(server, false);
        }
        client.send_to(b"query", to).expect("send");
        std::thread::sleep(Duration::from_millis(50));
        if off_meanwhile {
            batch.stamps(server, true);
        }
        let got = receive_all(batch, server);
        assert_eq!(got.len(), 1);
        if got[0].waited.is_some_and(|w| w >= Duration::from_millis(40)) {
            return Vec::new();
        }
        waits.push(got[0].waited);
    }
    waits
}

#[test]
fn a_wildcard_socket_tells_each_datagram_s_destination() {
    for (bind, dests) in [("0.0.0.0:0", &["127.0.0.1", "127.0.0.2"][..]), ("[::]:0", &["::1"][..])] {
        let Ok(server) = super::super::bind(bind.parse().expect("address")) else {
            continue; // no IPv6 here
        };
        let port = server.local_addr().expect("address").port();
        let mut batch = Batch::new(server.local_addr().ok()); // a worker's, for one socket
        for dest in dests {
            let ip: IpAddr = dest.parse().expect("ip");
            let client = UdpSocket::bind((ip, 0)).expect("bind");
            client.send_to(b"query", (ip, port)).expect("send");
            let got = receive_all(&mut batch, &server);
            assert_eq!(got.iter().map(|d| d.to).collect::<Vec<_>>(), [Some(ip)], "{bind}");
            // The reply goes from that address, not the one the route picks.
            batch.reply(0, b"reply", got[0].to);
            batch.send(&server);
            client.set_read_timeout(Some(Duration::from_secs(2))).expect("timeout");
            let mut buf = [0u8; 16];
            let (n, source) = client.recv_from(&mut buf).expect("the reply");
            assert_eq!((&buf[..n], source), (&b"reply"[..], SocketAddr::new(ip, port)));
        }
    }
    // Bound to one address: that address, not told per datagram.
    let mut batch = Batch::new(None);
    let (server, to, client) = loopback();
    client.send_to(b"query", to).expect("send");
    assert_eq!(receive_all(&mut batch, &server)[0].to, None);
}

#[test]
fn stamps_turned_off_are_not_delivered_and_turned_back_on_tell_the_arrival() {
    let (server, to, client) = loopback();
    let mut batch = Batch::new(Some(to));
    batch.stamps(&server, false);
    client.send_to(b"query", to).expect("send");
    let got = receive_all(&mut batch, &server);
    assert_eq!((got.len(), got[0].waited), (1, None));
    // Queued while off, read once they are back on: the stamp is the
    // arrival's (the kernel's deferred switch-on aside: see above).
    let waits = queued_wait(&mut batch, &server, &client, true);
    assert!(
        waits.is_empty(),
        "no stamp says how long the datagram queued while stamps were off: {waits:?}"
    );
}

#[test]
fn fewer_slots_after_short_batches_and_full_still_means_the_kernel_had_more() {
    let (server, to, client) = loopback();
    let mut batch = Batch::new(Some(to));
    let read = |batch: &mut Batch, sent: usize| {
        for _ in 0..sent {
            client.send_to(b"query", to).expect("send");
        }
        batch.receive(&server).expect("a batch");
        batch.got.len()
    };
    assert_eq!(read(&mut batch, 1), 1);
    assert_eq!(batch.slots, FEW);
    // The offered slots filled, nothing more queued: a short batch.
    assert_eq!(read(&mut batch, FEW), FEW);
    assert_eq!(batch.slots, 8);
    // More queued than offered: the rest joins the batch, which is full
    // as it would have been with every slot offered.
    assert_eq!(read(&mut batch, 1), 1);
    assert_eq!(read(&mut batch, 2 * BATCH + 3), BATCH);
    assert_eq!(batch.slots, BATCH);
    assert_eq!(read(&mut batch, 0), BATCH);
    assert_eq!(read(&mut batch, 0), 3);
    assert_eq!(batch.slots, 8);
    // Each datagram's sender and length, in order, across the two reads.
    for n in 0..12u8 {
        client.send_to(&[n; 3][..usize::from(n % 3) + 1], to).expect("send");
    }
    batch.receive(&server).expect("a batch");
    assert_eq!(batch.got.len(), 12);
    let local = client.local_addr().expect("address");
    for (k, d) in batch.got.iter().enumerate() {
        assert_eq!((d.len, batch.bufs[k][0]), (k % 3 + 1, k as u8));
        assert_eq!(batch.peers[k], Some(local));
    }
    assert_eq!(slots_after(12), BATCH);
}

#[test]
fn replies_out_of_order_each_go_to_their_own_sender() {
    let (server, to, first) = loopback();
    let second = UdpSocket::bind("127.0.0.1:0").expect("bind");
    first.send_to(b"1", to).expect("send");
    second.send_to(b"2", to).expect("send");
    let mut batch = Batch::new(Some(to));
    assert_eq!(receive_all(&mut batch, &server).len(), 2);
    batch.reply(1, b"to 2", None);
    batch.reply(0, b"to 1", None);
    batch.send(&server);
    for (client, want) in [(first, &b"to 1"[..]), (second, b"to 2")] {
        client.set_read_timeout(Some(Duration::from_secs(2))).expect("timeout");
        let mut buf = [0u8; 16];
        let (n, source) = client.recv_from(&mut buf).expect("the reply");
        assert_eq!((&buf[..n], source), (want, to));
    }
}

#[test]
fn control_data_is_read_only_while_the_socket_is_told_to_send_some() {
    let (server, to, client) = loopback();
    let mut batch = Batch::new(Some(to));
    batch.stamps(&server, false);
    batch.reports(false, false);
    // Drops at a tiny buffer: the next datagram carries the count.
    socket2::SockRef::from(&server).set_recv_buffer_size(1).expect("buffer");
    socket::setsockopt(&server, socket::sockopt::RxqOvfl, &1).expect("drop counts");
    for _ in 0..200 {
        client.send_to(b"query", to).expect("send");
    }
    let queued = receive_all(&mut batch, &server).len();
    // (the first one comes cut: its slot's control length shrank to 0)
    for _ in 0..2 {
        client.send_to(b"query", to).expect("send");
        assert_eq!((receive_all(&mut batch, &server).len(), batch.drops), (1, None));
    }
    batch.reports_drops(true);
    client.send_to(b"query", to).expect("send");
    assert_eq!(receive_all(&mut batch, &server).len(), 1);
    assert_eq!(batch.drops, u32::try_from(200 - queued).ok());
}
