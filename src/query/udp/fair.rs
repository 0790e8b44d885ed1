//! Who is limited when a worker cannot answer everything: the policy of
//! per-client fairness, kept apart from the sockets so that it can be
//! tested with made-up clocks and sources.
//!
//! ```text
//!  busy batch ─► Talkers (space-saving: the heaviest sources of a window, fixed size)
//!                   │ window end, queue standing or tight
//!                   ▼
//!  the heaviest source above `share`% of the window's queries ─► Verdict::Limit(ip)
//!  a limited client whose own queue kept up for CALM ─────────► Verdict::Release(ip)
//! ```
//!
//! Counting happens only in busy batches (the whole batch was read: the
//! queue held more), so a worker that keeps up pays one comparison per
//! batch. A window (`WINDOW`) in which the queue stood is overload: the
//! heaviest source, if it sent more than `share` percent of the window's
//! queries, is limited (one per window, at most `max` at once; never a
//! client alone in the window, whom limiting would not protect anyone
//! from). Limiting
//! moves the client to a queue of its own ([`super::boxes`]), read in turn
//! with the shared one (deficit round robin, one batch each), so the
//! kernel drops its excess in its own queue, not everyone's. It is
//! released once its queue kept up (no drops, never a full read) for
//! [`CALM`]. Memory is fixed: [`TALKERS`] sources are tracked, so a flood
//! from many (spoofed) sources costs no more, and none of them stands out.

use std::net::IpAddr;
use std::time::{Duration, Instant};

use super::queue::CALM;

/// Sources tracked per window (the heaviest survive: space-saving).
pub const TALKERS: usize = 16;
/// How long the sources of busy batches are counted before a verdict.
pub const WINDOW: Duration = Duration::from_millis(50);

/// One source's count in the window; `over` is how much of it may belong
/// to sources it replaced (space-saving's error bound).
#[derive(Debug, Clone, Copy)]
struct Talker {
    ip: IpAddr,
    count: u32,
    over: u32,
}

/// The heaviest sources of a window, in fixed space (Metwally et al.'s
/// space-saving: a new source replaces the lightest and inherits its count
/// as an over-estimate, so a source sending more than 1/TALKERS of the
/// window is always tracked).
#[derive(Debug)]
pub struct Talkers {
    slots: [Talker; TALKERS],
    used: usize,
    total: u64,
}

impl Default for Talkers {
    fn default() -> Self {
        let empty = Talker {
            ip: IpAddr::from([0, 0, 0, 0]),
            count: 0,
            over: 0,
        };
        Talkers {
            slots: [empty; TALKERS],
            used: 0,
            total: 0,
        }
    }
}

impl Talkers {
    /// Counts one query from `ip`.
    pub fn note(&mut self, ip: IpAddr) {
        self.total += 1;
        let used = &mut self.slots[..self.used];
        if let Some(t) = used.iter_mut().find(|t| t.ip == ip) {
            t.count = t.count.saturating_add(1);
            return;
        }
        if self.used < TALKERS {
            self.slots[self.used] = Talker { ip, count: 1, over: 0 };
            self.used += 1;
            return;
        }
        if let Some(least) = self.slots.iter_mut().min_by_key(|t| t.count) {
            *least = Talker {
                ip,
                count: least.count.saturating_add(1),
                over: least.count,
            };
        }
    }

    /// Queries counted in the window.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// The heaviest sources, heaviest first, with their guaranteed counts
    /// (count less the over-estimate), skipping those `skip` says.
    pub fn heaviest(&self, skip: impl Fn(IpAddr) -> bool) -> Option<(IpAddr, u32)> {
        self.slots[..self.used]
            .iter()
            .filter(|t| !skip(t.ip))
            .map(|t| (t.ip, t.count - t.over))
            .max_by_key(|(_, n)| *n)
    }

    /// The sources tracked and their counts, for the top-talker metric.
    pub fn all(&self) -> impl Iterator<Item = (IpAddr, u32)> + '_ {
        self.slots[..self.used].iter().map(|t| (t.ip, t.count))
    }

    /// The `N` sources counted most (unused places: count 0), in no order.
    pub fn top<const N: usize>(&self) -> [(IpAddr, u32); N] {
        let mut top = [(IpAddr::from([0, 0, 0, 0]), 0u32); N];
        for (ip, n) in self.all() {
            if let Some(least) = top.iter_mut().min_by_key(|t| t.1).filter(|t| t.1 < n) {
                *least = (ip, n);
            }
        }
        top
    }

    pub fn clear(&mut self) {
        (self.used, self.total) = (0, 0);
    }
}

/// What to do with a client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// It takes more than its share of an overloaded worker: queue it apart.
    Limit(IpAddr),
    /// Its own queue kept up for [`CALM`]: back with everyone.
    Release(IpAddr),
}

/// A limited client, as the policy follows it.
#[derive(Debug, Clone, Copy)]
struct Limited {
    ip: IpAddr,
    /// Since when its queue kept up (no drops, no full read).
    calm_since: Option<Instant>,
    /// Whether the current window saw it fall behind.
    behind: bool,
}

/// Per-worker fairness: the talkers of the current window and the clients
/// limited now.
#[derive(Debug)]
pub struct Fairness {
    /// Percent of an overloaded window's queries above which the heaviest
    /// source is limited; 0 turns fairness off.
    share: u8,
    /// Clients limited at once, at most.
    max: usize,
    pub talkers: Talkers,
    /// When the current window ends (a comparison per batch, no arithmetic).
    window_end: Instant,
    /// Whether the queue stood (or the buffer was tight) in this window.
    overloaded: bool,
    limited: Vec<Limited>,
}

impl Fairness {
    pub fn new(share: u8, max: usize, now: Instant) -> Fairness {
        Fairness {
            share: share.min(100),
            max,
            talkers: Talkers::default(),
            window_end: now + WINDOW,
            overloaded: false,
            limited: Vec::with_capacity(max),
        }
    }

    /// Takes new settings (a reload); limited clients stay until released.
    pub fn configure(&mut self, share: u8, max: usize) {
        (self.share, self.max) = (share.min(100), max);
    }

    pub fn enabled(&self) -> bool {
        self.share > 0
    }

    /// Whether this batch's sources are worth counting: a full batch (the
    /// queue held more), or any batch while someone is limited.
    pub fn counts(&self, read: usize, full: usize) -> bool {
        self.enabled() && (read >= full || !self.limited.is_empty())
    }

    /// Notes that the queue stood (or the buffer was tight) in this window.
    pub fn overloaded(&mut self) {
        self.overloaded = true;
    }

    /// Notes how limited client `ip`'s own queue fared in a read: `full`
    /// (it held more than one batch) or `dropped` (the kernel dropped some
    /// at its door since the last read).
    pub fn behind(&mut self, ip: IpAddr, full: bool, dropped: bool) {
        if let Some(l) = self.limited.iter_mut().find(|l| l.ip == ip) {
            l.behind |= full || dropped;
        }
    }

    #[cfg(test)]
    pub fn is_limited(&self, ip: IpAddr) -> bool {
        self.limited.iter().any(|l| l.ip == ip)
    }

    /// Whether a window ends at `now` ([`Fairness::judge`] has work).
    #[inline]
    pub fn due(&self, now: Instant) -> bool {
        now >= self.window_end
    }

    /// At most one verdict per call; call after each batch (and when idle).
    /// Returns the verdict of the window that ended, if any, and whether a
    /// window ended (its talkers are in `self.talkers` until the next call).
    pub fn judge(&mut self, now: Instant) -> (Option<Verdict>, bool) {
        if now < self.window_end {
            return (None, false);
        }
        self.window_end = now + WINDOW;
        let mut verdict = None;
        for l in &mut self.limited {
            if l.behind {
                l.calm_since = None;
            } else {
                l.calm_since.get_or_insert(now);
            }
            l.behind = false;
        }
        let calm = |l: &Limited| l.calm_since.is_some_and(|s| now.saturating_duration_since(s) >= CALM);
        if let Some(at) = self.limited.iter().position(calm) {
            verdict = Some(Verdict::Release(self.limited.swap_remove(at).ip));
        } else if self.overloaded && self.enabled() && self.limited.len() < self.max {
            let limited = &self.limited;
            // Limited clients' queries count in the total (they are part of
            // the load) but are not limited twice.
            let heaviest = self.talkers.heaviest(|ip| limited.iter().any(|l| l.ip == ip));
            let total = self.talkers.total();
            // Above its share, and not alone: limiting the only client
            // would protect nobody (it would only shrink its queue).
            let above = |n: u32| u64::from(n) * 100 > u64::from(self.share) * total && u64::from(n) < total;
            if let Some((ip, _)) = heaviest.filter(|(_, n)| above(*n)) {
                self.limited.push(Limited {
                    ip,
                    calm_since: None,
                    behind: false,
                });
                verdict = Some(Verdict::Limit(ip));
            }
        }
        self.overloaded = false;
        (verdict, true)
    }

    /// Starts the next window's count (after [`Fairness::judge`] said one ended).
    pub fn next_window(&mut self) {
        self.talkers.clear();
    }

    /// Forgets a client without a verdict (its queue could not be made).
    pub fn forget(&mut self, ip: IpAddr) {
        self.limited.retain(|l| l.ip != ip);
    }

    /// The clients limited now.
    #[cfg(test)]
    pub fn limited(&self) -> impl Iterator<Item = IpAddr> + '_ {
        self.limited.iter().map(|l| l.ip)
    }
}

#[cfg(test)]
mod tests;
