//! The listener's open connections: each one's idle time, why it is
//! closed, its forwarded queries in flight; admitting one at the cap (the
//! connection idle longest makes room; with none idle, the client holding
//! the most connections gives one up, so that one client cannot hold the
//! cap against everyone), and draining them all when the listener stops.
//! DNS over HTTPS and over QUIC hold their connections here too, each as a
//! [`Seat`], so that one rule picks who gives way at every transport's cap.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{Notify, Semaphore};

use crate::metrics::TcpClose;
use crate::query::limits::timeouts::TcpLimits;

/// How long a stopping listener waits for busy connections to become
/// idle before closing them anyway (lameduck for TCP clients).
pub(super) const DRAIN: Duration = Duration::from_secs(2);

/// One open connection, as the listener sees it.
pub(super) struct Conn {
    /// Milliseconds since the listener's epoch at which the connection
    /// began waiting for a query; 0 while a query is being read.
    pub(super) idle_since: AtomicU64,
    /// Whether a query (or a request) came on it: a stopping listener
    /// waits for a new connection's first one (its handshake, then its
    /// query), up to [`DRAIN`], before closing it as idle.
    pub(super) served: AtomicBool,
    /// Why it is being closed from outside ([`TcpClose`] as u8).
    pub(super) reason: AtomicU8,
    pub(super) close: Notify,
    /// Forwarded queries in flight.
    pub(super) slots: Arc<Semaphore>,
    pub(super) pipeline: usize,
    /// The client's address (fairness at the cap).
    pub(super) peer: IpAddr,
    /// The listener's address the connection came in on.
    pub(super) local: Option<SocketAddr>,
}

impl Conn {
    pub(super) fn close(&self, why: TcpClose) {
        self.reason.store(why as u8, Ordering::Relaxed);
        self.close.notify_one();
    }

    pub(super) fn reason(&self) -> TcpClose {
        TcpClose::ALL[usize::from(self.reason.load(Ordering::Relaxed))]
    }

    /// Idle: waiting for a query with no forwarded query in flight.
    pub(super) fn idle(&self) -> Option<u64> {
        let since = self.idle_since.load(Ordering::Relaxed);
        (since != 0 && self.slots.available_permits() == self.pipeline).then_some(since)
    }

    /// A query (or a request) is being read: busy, and served from now on.
    pub(super) fn busy(&self) {
        self.idle_since.store(0, Ordering::Relaxed);
        self.served.store(true, Ordering::Relaxed);
    }

    /// Whether a stopping listener closes it now: idle after a first
    /// query, or `late` (past [`DRAIN`]).
    fn drained(&self, late: bool) -> bool {
        late || (self.idle().is_some() && self.served.load(Ordering::Relaxed))
    }
}

/// The listener's open connections.
pub struct Conns {
    pub(super) epoch: Instant,
    pub(super) next: AtomicU64,
    pub(super) open: Mutex<HashMap<u64, Arc<Conn>>>,
}

impl Conns {
    /// No connection open yet.
    pub fn new() -> Arc<Conns> {
        Arc::new(Conns {
            epoch: Instant::now(),
            next: AtomicU64::new(0),
            open: Mutex::new(HashMap::new()),
        })
    }

    /// A connection from `peer` admitted as [`Conns::admit`] admits one
    /// (`limits.connections` the cap), held until the seat is dropped.
    pub fn seat(self: &Arc<Self>, limits: &TcpLimits, peer: IpAddr) -> Option<Seat> {
        let (id, conn) = self.admit(limits, peer, None)?;
        Some(Seat {
            id,
            conn,
            conns: self.clone(),
            active: AtomicUsize::new(0),
        })
    }

    pub(super) fn now(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64 + 1
    }

    /// Registers a new connection from `peer`. When `limits.connections`
    /// are open, the one idle longest is closed for it; with none idle, the
    /// newest connection of the client holding the most is, unless that is
    /// `peer` itself or (fairness off, `client_share 0`) then `None`.
    pub(super) fn admit(
        &self,
        limits: &TcpLimits,
        peer: IpAddr,
        local: Option<SocketAddr>,
    ) -> Option<(u64, Arc<Conn>)> {
        let mut open = self.open.lock().ok()?;
        if open.len() >= limits.connections {
            let oldest = open
                .iter()
                .filter_map(|(id, c)| c.idle().map(|since| (since, *id)))
                .min()
                .map(|(_, id)| id);
            let victim = match oldest {
                Some(id) => id,
                None if limits.client_share > 0 => heaviest(&open, peer)?,
                None => return None,
            };
            if let Some(victim) = open.remove(&victim) {
                victim.close(TcpClose::Evicted);
            }
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let conn = Arc::new(Conn {
            idle_since: AtomicU64::new(self.now()),
            served: AtomicBool::new(false),
            reason: AtomicU8::new(TcpClose::Shutdown as u8),
            close: Notify::new(),
            slots: Arc::new(Semaphore::new(limits.pipeline)),
            pipeline: limits.pipeline,
            peer,
            local,
        });
        open.insert(id, conn.clone());
        Some((id, conn))
    }

    /// Connections open now.
    pub fn count(&self) -> usize {
        self.open.lock().map_or(0, |o| o.len())
    }

    pub(super) fn remove(&self, id: u64) {
        if let Ok(mut open) = self.open.lock() {
            open.remove(&id);
        }
    }

    /// Closes every connection as soon as it is idle (its queries
    /// answered; a new one, once it answered its first), all of them
    /// after [`DRAIN`]; waits (at most 1 s more) until their tasks (each
    /// holds `conns`) have written their replies.
    pub async fn drain(conns: &Arc<Conns>) {
        let deadline = Instant::now() + DRAIN;
        loop {
            let (open, late) = match conns.open.lock() {
                Ok(mut open) => {
                    let late = Instant::now() >= deadline;
                    open.retain(|_, c| {
                        let close = c.drained(late);
                        if close {
                            c.close(TcpClose::Shutdown);
                        }
                        !close
                    });
                    (open.len(), late)
                }
                Err(_) => return,
            };
            if open == 0 || late {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let closed = Instant::now() + Duration::from_secs(1);
        while Arc::strong_count(conns) > 1 && Instant::now() < closed {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// A connection held in [`Conns`] by a listener that frames its requests
/// itself (DNS over HTTPS, DNS over QUIC): idle while no request of it is
/// in progress; it leaves the listener's connections when dropped.
pub struct Seat {
    id: u64,
    conn: Arc<Conn>,
    conns: Arc<Conns>,
    active: AtomicUsize,
}

impl Seat {
    /// A request began: the connection is busy.
    pub fn begin(&self) {
        if self.active.fetch_add(1, Ordering::Relaxed) == 0 {
            self.conn.busy();
        }
    }

    /// A request ended: with none left, the connection is idle from now.
    pub fn end(&self) {
        if self.active.fetch_sub(1, Ordering::Relaxed) == 1 {
            self.conn.idle_since.store(self.conns.now(), Ordering::Relaxed);
        }
    }

    /// Resolves when the listener closes the connection (for a newer one
    /// at the cap: [`TcpClose::Evicted`]), with why.
    pub async fn closed(&self) -> TcpClose {
        self.conn.close.notified().await;
        self.conn.reason()
    }
}

impl Drop for Seat {
    fn drop(&mut self) {
        self.conns.remove(self.id);
    }
}

/// The newest connection of the client holding the most connections, when
/// that client is not `peer` and holds more than `peer` would with the new
/// one (a scan of the open connections, at the cap only; no allocation
/// beyond a map of the distinct clients).
fn heaviest(open: &HashMap<u64, Arc<Conn>>, peer: IpAddr) -> Option<u64> {
    let mut per: HashMap<IpAddr, (usize, u64)> = HashMap::new();
    for (id, c) in open {
        let e = per.entry(c.peer).or_insert((0, *id));
        e.0 += 1;
        e.1 = e.1.max(*id);
    }
    let mine = per.get(&peer).map_or(0, |e| e.0) + 1;
    let (ip, (n, newest)) = per.into_iter().max_by_key(|(ip, (n, _))| (*n, *ip))?;
    (ip != peer && n > mine).then_some(newest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conns() -> Conns {
        Conns {
            epoch: Instant::now(),
            next: AtomicU64::new(1),
            open: Mutex::new(HashMap::new()),
        }
    }

    /// Admits a connection from `ip` that is busy at once.
    fn admit(c: &Conns, limits: &TcpLimits, ip: [u8; 4]) -> Option<Arc<Conn>> {
        let (_, conn) = c.admit(limits, ip.into(), None)?;
        conn.idle_since.store(0, Ordering::Relaxed);
        Some(conn)
    }

    /// Deterministic order at the cap: idle first, then the heaviest client.
    #[test]
    fn at_the_cap_the_client_holding_the_most_gives_one_up() {
        let limits = TcpLimits {
            connections: 4,
            ..TcpLimits::default()
        };
        let (flood, polite) = ([127, 0, 0, 2], [127, 0, 0, 10]);
        let c = conns();
        let held: Vec<_> = [flood, flood, flood, polite]
            .iter()
            .map(|ip| admit(&c, &limits, *ip).expect("room"))
            .collect();
        // Every connection busy: a new client takes the flooder's newest.
        assert!(admit(&c, &limits, [127, 0, 0, 11]).is_some());
        assert_eq!(held[2].reason(), TcpClose::Evicted);
        assert_eq!(held[0].reason(), TcpClose::Shutdown, "untouched");
        assert_eq!(c.count(), 4);
        // The flooder gets none of anyone else's, and a client that would
        // hold as many as the heaviest does not take one of its either.
        assert!(admit(&c, &limits, flood).is_none());
        assert!(admit(&c, &limits, polite).is_none());
        assert_eq!(held[3].reason(), TcpClose::Shutdown);
        // Another new client does, from the flooder again.
        let last = admit(&c, &limits, [127, 0, 0, 12]).expect("fair share");
        assert_eq!(held[1].reason(), TcpClose::Evicted);
        // An idle connection goes first, whoever holds it.
        held[3].idle_since.store(1, Ordering::Relaxed);
        assert!(admit(&c, &limits, flood).is_some());
        assert_eq!(held[3].reason(), TcpClose::Evicted);
        // Fairness off: refused as before.
        let off = TcpLimits {
            client_share: 0,
            ..limits
        };
        assert!(admit(&c, &off, [127, 0, 0, 13]).is_none());
        assert_eq!(last.reason(), TcpClose::Shutdown);
    }

    /// A seat (DoH, DoQ) is idle while none of its requests is in
    /// progress, gives way by the same rule, and leaves when dropped.
    #[test]
    fn a_seat_follows_the_same_rule_and_leaves_when_dropped() {
        let limits = TcpLimits {
            connections: 2,
            ..TcpLimits::default()
        };
        let c = Arc::new(conns());
        let flood: IpAddr = [127, 0, 0, 2].into();
        let (a, b) = (
            c.seat(&limits, flood).expect("room"),
            c.seat(&limits, flood).expect("room"),
        );
        a.begin();
        b.begin();
        b.begin();
        b.end();
        // Both busy: a new client takes the flooder's newest.
        let polite = c.seat(&limits, [127, 0, 0, 10].into()).expect("fair share");
        assert_eq!(b.conn.reason(), TcpClose::Evicted);
        assert_eq!(a.conn.reason(), TcpClose::Shutdown);
        // Its last request ended: idle, so it gives way first.
        a.end();
        polite.begin();
        let again = c.seat(&limits, flood).expect("an idle one gives way");
        assert_eq!(a.conn.reason(), TcpClose::Evicted);
        drop(polite);
        assert_eq!(c.count(), 1, "a dropped seat leaves");
        drop(again);
        assert_eq!(c.count(), 0);
    }

    /// A stopping listener leaves a connection in its handshake alone until
    /// its first query is answered, then closes it as idle.
    #[tokio::test]
    async fn a_draining_listener_lets_a_new_connection_ask_first() {
        let conns = Arc::new(conns());
        let (_, conn) = conns
            .admit(&TcpLimits::default(), [127, 0, 0, 1].into(), None)
            .expect("admitted");
        // Idle since it was admitted (its handshake), and never served: the drain leaves it until late.
        assert!(
            conn.idle().is_some() && !conn.drained(false),
            "closed before its first query"
        );
        assert!(conn.drained(true), "closed once late");
        conn.busy();
        assert!(!conn.drained(false), "closed while busy");
        conn.idle_since.store(conns.now(), Ordering::Relaxed);
        let draining = tokio::spawn({
            let conns = conns.clone();
            async move { Conns::drain(&conns).await }
        });
        drop(conns);
        let closed = tokio::time::timeout(Duration::from_secs(1), conn.close.notified()).await;
        assert!(closed.is_ok(), "closed once it answered and was idle");
        assert_eq!(conn.reason(), TcpClose::Shutdown);
        draining.await.expect("drained");
    }
}
