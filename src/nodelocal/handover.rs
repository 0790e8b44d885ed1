//! Surge upgrades of the node-local DaemonSet with no lost query: two
//! instances side by side on one node, the new one taking over from the
//! old one. Every listener of both (DNS, health, ready, metrics) is in an
//! `SO_REUSEPORT` group, so both can bind at once.
//!
//! ```text
//!  new instance B                              old instance A (serving)
//!  setup (interface, addresses: idempotent)
//!  another instance lives? wait until the
//!    stores are synced, only then bind   ──►  the kernel spreads new queries over A and B
//!  announce "serving"                          SIGTERM ─► lameduck ─► a successor serving?
//!                                              (waits while one is still starting)
//!                                              UDP: each socket leaves its group (connect,
//!                                                see `udp::leave_group`): new datagrams go
//!                                                to B only; A answers what it holds
//!                                              TCP: listener closed (new connections go to
//!                                                B), each connection closed once idle
//!                                              forwarded queries answered ─► leave (no teardown:
//!                                                B lives) ─► exit
//! ```
//!
//! Kernels: `SO_REUSEPORT` for UDP and TCP since 3.9. A connected UDP
//! socket is skipped by the group's choice since 5.4 (commit acdcecc6,
//! "udp: correct reuseport selection with connected sockets", also in
//! stable 4.19/4.14 updates); on an older kernel a connected socket can
//! still be chosen and datagrams sent to it are dropped, so the hand-over
//! loses about what the old instance would have received while draining
//! (milliseconds). TCP: connections that completed their handshake on the
//! old listener but were not yet accepted are reset when it closes, unless
//! `net.ipv4.tcp_migrate_req=1` (5.14+) moves them to B; the accept loop
//! keeps that queue near empty either way.
//!
//! Why not steer with a reuseport BPF program (`SO_ATTACH_REUSEPORT_CBPF`,
//! 4.5+; nix exposes it as `sockopt::AttachReusePortCbpf`, settable
//! without `unsafe` in this crate): the program returns an index into the
//! group's socket array, which the kernel reorders on every close (the last
//! socket moves into the freed slot) and whose share per instance the
//! newcomer does not know (each sizes its workers by its own CPU quota), so
//! "the newest sockets" is not an index range that stays true; a stale
//! index falls back to the hash, i.e. to the old sockets too. Leaving the
//! group by connecting needs no program, is done by the instance that
//! leaves, and holds however the group changes. Measured in
//! tests/nodelocal_surge.rs: 4 hand-overs at 3,000 UDP qps, 0 lost with
//! this step, 14 lost without it (the old sockets kept receiving until
//! they closed); with loadtest/bench/nodelocal-surge.sh (release build),
//! 0 lost at 20,000 qps on an unloaded machine. What a saturated machine
//! loses is lost as much without a hand-over (docs/operations.md has the numbers).
//!
//! A successor that dies before it serves does not end the old one's
//! wait ([`successor`]); one that dies during the few milliseconds of the
//! drain does: the old sockets are out of the group by then, and the old
//! instance stops (and, being the last one, tears down).

use std::net::UdpSocket;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::lease::Phase;
use super::node::NodeLocal;
use crate::metrics::Metrics;
use crate::query::udp;
use crate::store::Store;

/// How long a new instance waits for its stores before binding anyway.
const READY_WAIT: Duration = Duration::from_secs(120);
/// How long a stopping instance waits for a starting one to serve
/// (below the DaemonSet's terminationGracePeriodSeconds).
const SUCCESSOR_WAIT: Duration = Duration::from_secs(20);
/// How long the UDP sockets may take to empty their queues.
const UDP_DRAIN: Duration = Duration::from_secs(2);
/// How long forwarded queries may take to be answered at exit.
const FORWARDED_WAIT: Duration = Duration::from_secs(3);

/// Beside another running instance, waits until every store has synced
/// (at most [`READY_WAIT`]), so this one answers nothing it cannot answer
/// yet. Alone, returns at once: nobody else would answer.
pub async fn await_ready(n: &NodeLocal, stores: &[Arc<Store>]) {
    let others = n.others();
    if others.is_empty() {
        return;
    }
    let started = Instant::now();
    tracing::info!(target: "nodelocal", "{} other instance(s) serving: binding the DNS listeners once the cluster state is loaded", others.len());
    while !stores.iter().all(|s| s.synced()) {
        if started.elapsed() > READY_WAIT {
            tracing::warn!(target: "nodelocal", "cluster state not loaded after {READY_WAIT:?}: binding anyway");
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tracing::info!(target: "nodelocal", "ready after {:?}: joining the listeners", started.elapsed());
}

/// At shutdown: whether another instance serves (then this one hands
/// over to it). While another is still starting, waits (at most
/// [`SUCCESSOR_WAIT`]) and keeps serving; a starting one that dies
/// before it serves (a crash, `kill -9`, a failed start) does not end
/// the wait: this one keeps serving for the rest of it, for the
/// successor's restart (the kubelet restarts its container), and only
/// when none serves by then stops as the last one out.
pub async fn successor(n: &NodeLocal) -> bool {
    let started = Instant::now();
    // The starting instance waited for, and whether there ever was one.
    let mut awaited: Option<String> = None;
    let mut seen = false;
    loop {
        let others = n.others();
        if let Some((name, _)) = others.iter().find(|(_, p)| *p == Phase::Serving) {
            n.announce(Phase::Draining);
            n.metrics.nodelocal.handovers.fetch_add(1, Relaxed);
            tracing::info!(target: "nodelocal", "handing over to instance {name}: taking no new queries, answering those queued");
            return true;
        }
        let starting = others
            .iter()
            .find(|(_, p)| *p == Phase::Starting)
            .map(|(name, _)| name.clone());
        if started.elapsed() > SUCCESSOR_WAIT {
            if seen {
                tracing::warn!(target: "nodelocal", "no successor served within {SUCCESSOR_WAIT:?}: stopping without a hand-over");
            }
            return false;
        }
        match starting {
            Some(name) => {
                if awaited.as_ref() != Some(&name) {
                    tracing::info!(target: "nodelocal", "instance {name} is starting: serving until it answers, then handing over");
                }
                awaited = Some(name);
                seen = true;
            }
            None if !seen => return false,
            None => {
                if let Some(was) = awaited.take() {
                    tracing::warn!(target: "nodelocal", "instance {was} ended before it served: still serving, waiting (up to {SUCCESSOR_WAIT:?} after the stop) for another to start");
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Takes every UDP socket out of its `SO_REUSEPORT` group, then waits
/// until none holds a datagram (at most [`UDP_DRAIN`]); the workers answer
/// what was queued meanwhile.
pub async fn drain_udp(sockets: &[&UdpSocket], metrics: &Metrics) {
    for s in sockets {
        if let Err(e) = udp::leave_group(s) {
            tracing::warn!(target: "nodelocal", "a UDP socket cannot leave its group ({e}): what reaches it after this is lost");
        }
    }
    let started = Instant::now();
    let answered = metrics.requests_total();
    // A datagram routed before the connect may still be on its way in.
    tokio::time::sleep(Duration::from_millis(20)).await;
    while sockets.iter().any(|s| udp::queued(s)) && started.elapsed() < UDP_DRAIN {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // The worker that read the last datagrams answers them before it
    // sees the stop flag.
    let drained = metrics.requests_total().saturating_sub(answered);
    metrics.nodelocal.drained.fetch_add(drained, Relaxed);
    tracing::info!(target: "nodelocal", "UDP sockets out of their groups; {drained} queued queries answered in {:?}", started.elapsed());
}

/// After the workers stopped: reads what is still queued on `sockets`
/// (at most 10,000 datagrams), which closing them would discard without
/// any counter seeing it, and logs how many; 0 unless datagrams reached
/// an old socket after the drain. Returns the count.
pub fn left_behind(sockets: &[UdpSocket]) -> usize {
    use nix::sys::socket::{recv, MsgFlags};
    use std::os::fd::AsRawFd;
    let mut buf = [0u8; 64];
    let mut left = 0;
    for s in sockets {
        while left < 10_000 && recv(s.as_raw_fd(), &mut buf, MsgFlags::MSG_DONTWAIT | MsgFlags::MSG_TRUNC).is_ok() {
            left += 1;
        }
    }
    if left > 0 {
        tracing::warn!(target: "nodelocal", "{left} UDP queries reached this instance's sockets after the drain and are lost at close");
    }
    left
}

/// Waits until no forwarded query is in flight (at most [`FORWARDED_WAIT`]).
pub async fn await_forwarded(metrics: &Metrics) {
    let started = Instant::now();
    while metrics.in_flight.load(Relaxed) > 0 && started.elapsed() < FORWARDED_WAIT {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
