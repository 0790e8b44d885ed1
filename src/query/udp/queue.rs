//! The overload policy of a UDP worker, kept apart from the sockets so that
//! it can be tested with made-up clocks. It watches two things: how long
//! the queries of each batch queued (the kernel's receive stamps, asked
//! for only while a queue may stand: [`Queue::stamps`]) and
//! whether the kernel dropped datagrams at the door (the socket's drop
//! count, read only while the buffer is tight). From them it decides the
//! receive buffer's size and which queries are too stale to answer.
//!
//! A queue that stays non-empty (every batch full) with a least wait above
//! [`STANDING`] for [`INTERVAL`] is overload, not a burst (CoDel's rule; a
//! batch that is not full emptied the queue, which ends the interval, so
//! sparse queries that each waited on a busy machine are no standing
//! queue): the buffer is tightened, and what
//! queued before that moment (the backlog of the roomy buffer) is dropped
//! unanswered rather than answered late. The buffer stays tight until, over
//! a window of [`CALM`], the kernel dropped at most a tenth of the arrivals
//! ([`SHED`]): a CPU-throttled worker empties its short queue in every slice
//! of CPU it gets while still shedding, so an empty queue does not end the
//! overload, the shedding ending does (and the few drops of pauses at
//! moderate load do not keep the buffer tight).

use std::time::{Duration, Instant};

use super::batch::BATCH;

/// A query older than this when its batch is read is dropped unanswered:
/// the shortest stub-resolver timeout in common use (`options timeout:1`);
/// glibc, musl and Go retry after 2.5 to 5 s.
pub const MAX_WAIT: Duration = Duration::from_secs(1);
/// Receive buffer while the worker keeps up: bursts and pauses queue here.
pub const ROOMY_BUFFER: usize = 4 << 20;
/// Receive buffer under overload. The kernel doubles it and charges about
/// 830 bytes per queued query (measured on loopback), so about 315
/// queries queue: one to three milliseconds of work.
pub const TIGHT_BUFFER: usize = 128 << 10;
/// A queue whose least wait stays above this for [`INTERVAL`] is standing.
pub const STANDING: Duration = Duration::from_millis(5);
/// How long the least wait must stay above [`STANDING`]. A pause of 50 ms
/// at moderate load drains in a few milliseconds, well within it.
pub const INTERVAL: Duration = Duration::from_millis(50);
/// While tight, the arrivals are judged over windows this long: the buffer
/// grows back after a window in which the kernel dropped at most a tenth
/// of them ([`SHED`]).
pub const CALM: Duration = Duration::from_millis(500);
/// The share of arrivals dropped at the door (1 in `SHED`) above which a
/// window still counts as overload. Pauses at moderate load with a tight
/// buffer shed a few percent; twice the capacity sheds half.
pub const SHED: u64 = 10;

/// What to do with the receive buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// Shrink it to [`TIGHT_BUFFER`] and start reading the drop count.
    Tighten,
    /// Grow it back to [`ROOMY_BUFFER`] and stop reading the drop count.
    Loosen,
}

/// How long queries queue, per worker, and whether the kernel sheds.
#[derive(Debug)]
pub struct Queue {
    /// Since when every batch's least wait was above [`STANDING`].
    above_since: Option<Instant>,
    /// When the buffer was tightened, while it is tight.
    tightened: Option<Instant>,
    /// While tight: when the current window started, and the datagrams
    /// read and dropped at the door in it.
    window: Instant,
    read: u64,
    shed: u64,
    /// The socket's drop count as last reported.
    drops: Option<u32>,
    /// Until when the worker asks for receive stamps ([`Queue::stamps`]).
    stamps_until: Option<Instant>,
    /// The clock read of the last batch observed (or idle poll).
    read_at: Instant,
}

impl Queue {
    pub fn new(now: Instant) -> Queue {
        Queue {
            above_since: None,
            tightened: None,
            window: now,
            read: 0,
            shed: 0,
            drops: None,
            stamps_until: None,
            read_at: now,
        }
    }

    pub fn is_tight(&self) -> bool {
        self.tightened.is_some()
    }

    /// Whether the queue stands (full batches that waited over
    /// [`STANDING`]) or the buffer is tight: the worker is overloaded.
    pub fn overloaded(&self) -> bool {
        self.above_since.is_some() || self.tightened.is_some()
    }

    /// Notes a batch: the least wait in it (`None`: no datagram carried a
    /// stamp; an idle worker reports zero), how many datagrams it read (a
    /// full batch: the queue held more) and the socket's drop count if the
    /// kernel reported one. Returns the change to make, if any.
    #[inline(always)]
    pub fn observe(
        &mut self,
        least: Option<Duration>,
        read: usize,
        drops: Option<u32>,
        now: Instant,
    ) -> Option<Change> {
        // full: the queue held more; late: woken, then starved (an idle
        // worker reads the clock at every poll)
        if read >= BATCH || now > self.read_at + MAX_WAIT {
            self.away(now);
        }
        self.read_at = now;
        if let Some(count) = drops {
            if let Some(seen) = self.drops {
                self.shed += u64::from(count.wrapping_sub(seen));
            }
            self.drops = Some(count);
        }
        self.read += read as u64;
        if self.tightened.is_some() {
            if now.saturating_duration_since(self.window) < CALM {
                return None;
            }
            let overload = self.shed * SHED > self.read + self.shed;
            (self.window, self.read, self.shed) = (now, 0, 0);
            if overload {
                return None;
            }
            self.tightened = None;
            return Some(Change::Loosen);
        }
        let full = read >= BATCH;
        match least {
            Some(wait) if full && wait > STANDING => {
                let since = *self.above_since.get_or_insert(now);
                if now.saturating_duration_since(since) >= INTERVAL {
                    (self.above_since, self.tightened) = (None, Some(now));
                    // Counts start again: drops while roomy are not this window's.
                    self.drops = None;
                    (self.window, self.read, self.shed) = (now, 0, 0);
                    return Some(Change::Tighten);
                }
            }
            None if full => {}
            _ => self.above_since = None,
        }
        None
    }

    /// Whether the worker needs each datagram's receive stamp in its next
    /// batch: while the queue may stand (a batch came back full within the
    /// last [`INTERVAL`]: only full batches make a standing queue), while
    /// overloaded, and for an [`INTERVAL`] after the worker was away. Else
    /// no query can have waited longer than the worker's last batch took
    /// (the one before it emptied the queue), and the stamps are not worth
    /// their cost (the kernel writes each one out, and the worker reads it).
    pub fn stamps(&self, now: Instant) -> bool {
        self.overloaded() || self.stamps_until.is_some_and(|until| now < until)
    }

    /// Notes that the worker is about to read its socket, or to wait for
    /// it, at `now` (before the wait: a wait is not time away). If it last
    /// observed a batch more than [`STANDING`] ago (stopped, preempted or
    /// slow on a batch meanwhile), what queued since may have waited that
    /// long: it is read with stamps.
    pub fn reading(&mut self, now: Instant) {
        if now > self.read_at + STANDING {
            self.away(now);
        }
    }

    /// Notes that a wait for the socket, begun at `from` and bounded by
    /// `limit`, ended at `now` (with a batch or without). Ended later than
    /// its bound by more than [`STANDING`], the worker was stopped or
    /// starved after it, not waiting: what queued meanwhile is stamped.
    pub fn woke(&mut self, from: Instant, limit: Duration, now: Instant) {
        if now > from + limit + STANDING {
            self.away(now);
        }
    }

    /// Notes that the worker may have been away from its socket (stopped,
    /// starved, or a batch came back full): the next batches are stamped.
    pub fn away(&mut self, now: Instant) {
        self.stamps_until = Some(now + INTERVAL);
    }

    /// Whether a query that waited `waited` until `now` is still worth
    /// answering: not older than [`MAX_WAIT`], and not part of the backlog
    /// that queued before the buffer was tightened.
    pub fn fresh(&self, waited: Duration, now: Instant) -> bool {
        if waited > MAX_WAIT {
            return false;
        }
        match (self.tightened, now.checked_sub(waited)) {
            (Some(tightened), Some(queued)) => queued >= tightened,
            _ => true,
        }
    }
}

#[cfg(test)]
mod tests;
