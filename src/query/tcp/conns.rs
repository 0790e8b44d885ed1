//! The listener's open connections: each one's idle time, why it is
//! closed, its forwarded queries in flight; admitting one at the cap (the
//! connection idle longest makes room), and draining them all when the
//! listener stops.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{Notify, Semaphore};

use super::DRAIN;
use crate::config::timeouts::TcpLimits;
use crate::metrics::TcpClose;

/// One open connection, as the listener sees it.
pub(super) struct Conn {
    /// Milliseconds since the listener's epoch at which the connection
    /// began waiting for a query; 0 while a query is being read.
    pub(super) idle_since: AtomicU64,
    /// Why it is being closed from outside ([`TcpClose`] as u8).
    pub(super) reason: AtomicU8,
    pub(super) close: Notify,
    /// Forwarded queries in flight.
    pub(super) slots: Arc<Semaphore>,
    pub(super) pipeline: usize,
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
}

/// The listener's open connections.
pub(super) struct Conns {
    pub(super) epoch: Instant,
    pub(super) next: AtomicU64,
    pub(super) open: Mutex<HashMap<u64, Arc<Conn>>>,
}

impl Conns {
    pub(super) fn now(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64 + 1
    }

    /// Registers a new connection, closing the one idle longest when
    /// `limits.connections` are open; `None` when none is idle then.
    pub(super) fn admit(&self, limits: &TcpLimits) -> Option<(u64, Arc<Conn>)> {
        let mut open = self.open.lock().ok()?;
        if open.len() >= limits.connections {
            let oldest = open
                .iter()
                .filter_map(|(id, c)| c.idle().map(|since| (since, *id)))
                .min()
                .map(|(_, id)| id)?;
            if let Some(victim) = open.remove(&oldest) {
                victim.close(TcpClose::Evicted);
            }
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let conn = Arc::new(Conn {
            idle_since: AtomicU64::new(self.now()),
            reason: AtomicU8::new(TcpClose::Shutdown as u8),
            close: Notify::new(),
            slots: Arc::new(Semaphore::new(limits.pipeline)),
            pipeline: limits.pipeline,
        });
        open.insert(id, conn.clone());
        Some((id, conn))
    }

    pub(super) fn remove(&self, id: u64) {
        if let Ok(mut open) = self.open.lock() {
            open.remove(&id);
        }
    }

    /// Closes every connection as soon as it is idle (its queries
    /// answered), all of them after [`DRAIN`]; waits (at most 1 s more)
    /// until their tasks (each holds `conns`) have written their replies.
    pub(super) async fn drain(conns: &Arc<Conns>) {
        let deadline = Instant::now() + DRAIN;
        loop {
            let (open, late) = match conns.open.lock() {
                Ok(mut open) => {
                    let late = Instant::now() >= deadline;
                    open.retain(|_, c| {
                        let close = late || c.idle().is_some();
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
