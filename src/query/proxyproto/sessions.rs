//! Cloudflare Spectrum's UDP sessions (`udp_session_tracking TTL [MAX]`):
//! the balancer sends the PROXY v2 header alone in a session's first
//! datagram and none after, so the client it named is remembered per
//! balancer address for TTL (renewed by each datagram that uses it) and
//! given to the headerless datagrams that follow. One table per UDP
//! worker (a balancer address hashes to one socket of the group), so no
//! lock; at most MAX entries: a full table forgets the expired ones (at
//! most once a second), else the one used longest ago among a few looked
//! at, so a flood of headers from many addresses costs little per datagram.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// Entries looked at to find one to forget when the table is full.
const PROBE: usize = 8;

/// Balancer address → (client, last used).
#[derive(Debug, Default)]
pub struct Sessions {
    table: HashMap<SocketAddr, (SocketAddr, Instant)>,
    /// When the expired entries were last forgotten (at most once a second).
    swept: Option<Instant>,
}

/// How often a full table looks for expired entries.
const SWEEP: Duration = Duration::from_secs(1);

impl Sessions {
    /// Remembers that `balancer` speaks for `client` from `now`.
    pub fn remember(&mut self, balancer: SocketAddr, client: SocketAddr, now: Instant, ttl: Duration, max: usize) {
        if self.table.len() >= max.max(1) && !self.table.contains_key(&balancer) {
            if self.swept.is_none_or(|at| now.saturating_duration_since(at) >= SWEEP) {
                self.table
                    .retain(|_, (_, used)| now.saturating_duration_since(*used) < ttl);
                self.swept = Some(now);
            }
            if self.table.len() >= max.max(1) {
                let oldest = self
                    .table
                    .iter()
                    .take(PROBE)
                    .min_by_key(|(_, (_, used))| *used)
                    .map(|(k, _)| *k);
                oldest.map(|k| self.table.remove(&k));
            }
        }
        self.table.insert(balancer, (client, now));
    }

    /// The client `balancer` speaks for, if its session is alive at `now`
    /// (and then renewed).
    pub fn client(&mut self, balancer: SocketAddr, now: Instant, ttl: Duration) -> Option<SocketAddr> {
        let (client, used) = self.table.get_mut(&balancer)?;
        if now.saturating_duration_since(*used) >= ttl {
            self.table.remove(&balancer);
            return None;
        }
        *used = now;
        Some(*client)
    }

    pub fn len(&self) -> usize {
        self.table.len()
    }

    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }
}
