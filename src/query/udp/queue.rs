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

    /// Notes that the worker is about to read its socket at `now`. If it
    /// last read it more than [`STANDING`] ago (stopped, preempted or slow
    /// on a batch meanwhile, not waiting on the socket), what queued since
    /// may have waited that long: it is read with stamps.
    pub fn reading(&mut self, now: Instant) {
        if now > self.read_at + STANDING {
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
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);
    const FULL: usize = BATCH;
    const SOME: usize = 4;

    fn at(t0: Instant, ms: u32) -> Instant {
        t0 + ms * MS
    }

    /// A queue that stood from `t0` and was tightened 50 ms later.
    fn tightened_at_50_ms(t0: Instant) -> Queue {
        let mut q = Queue::new(t0);
        q.observe(Some(30 * MS), FULL, None, t0);
        assert_eq!(q.observe(Some(30 * MS), FULL, None, at(t0, 50)), Some(Change::Tighten));
        q
    }

    #[test]
    fn a_pause_at_moderate_load_keeps_the_buffer_roomy() {
        let t0 = Instant::now();
        let mut q = Queue::new(t0);
        // 50 ms stopped: the first batches after it waited long, then the
        // queue drains within a few milliseconds.
        for (ms, wait, full) in [
            (0, 0, SOME),
            (60, 50, FULL),
            (61, 45, FULL),
            (63, 30, FULL),
            (66, 8, SOME),
        ] {
            assert_eq!(q.observe(Some(wait * MS), full, None, at(t0, ms)), None, "at {ms} ms");
        }
        // A pause longer than the interval, answered in one go, too.
        assert_eq!(q.observe(Some(300 * MS), FULL, None, at(t0, 500)), None);
        assert_eq!(q.observe(Some(Duration::ZERO), 0, None, at(t0, 504)), None);
        assert!(!q.is_tight());
        // Sparse queries that each waited on a busy machine: every batch
        // emptied the queue, so there is no standing queue.
        for ms in [600, 640, 680, 720] {
            assert_eq!(q.observe(Some(9 * MS), 1, None, at(t0, ms)), None, "at {ms} ms");
        }
        assert!(!q.is_tight());
        assert!(q.fresh(900 * MS, at(t0, 505)));
        assert!(!q.fresh(1001 * MS, at(t0, 1505)));
    }

    #[test]
    fn a_standing_queue_tightens_the_buffer_and_flushes_its_backlog() {
        let t0 = Instant::now();
        let mut q = Queue::new(t0);
        assert_eq!(q.observe(Some(6 * MS), FULL, None, at(t0, 10)), None);
        assert_eq!(q.observe(Some(20 * MS), FULL, None, at(t0, 40)), None);
        // Stamps missing from a whole batch say nothing either way.
        assert_eq!(q.observe(None, FULL, None, at(t0, 50)), None);
        assert_eq!(q.observe(Some(30 * MS), FULL, None, at(t0, 60)), Some(Change::Tighten));
        assert!(q.is_tight());
        // The roomy buffer's backlog, queued before 60 ms, is dropped;
        // what queued after it is answered.
        assert!(!q.fresh(40 * MS, at(t0, 70)));
        assert!(!q.fresh(11 * MS, at(t0, 70)));
        assert!(q.fresh(9 * MS, at(t0, 70)));
        // A standing queue cut short by an empty one does not tighten.
        let mut q = Queue::new(t0);
        assert_eq!(q.observe(Some(30 * MS), FULL, None, at(t0, 10)), None);
        assert_eq!(q.observe(Some(MS), FULL, None, at(t0, 40)), None);
        assert_eq!(q.observe(Some(30 * MS), FULL, None, at(t0, 70)), None);
        assert!(!q.is_tight());
    }

    #[test]
    fn the_buffer_stays_tight_while_the_kernel_sheds_even_if_the_queue_empties() {
        let t0 = Instant::now();
        let mut q = tightened_at_50_ms(t0);
        // Throttled: each slice of CPU empties the short queue (least wait
        // 0), while the kernel drops as many at the door as are read.
        let mut count = 7;
        for ms in (60..2000u32).step_by(8) {
            count += 40;
            assert_eq!(
                q.observe(Some(Duration::ZERO), 40, Some(count), at(t0, ms)),
                None,
                "at {ms} ms"
            );
        }
        // The shedding stops: roomy again within two windows.
        let mut loosened = None;
        for ms in (2004..3100u32).step_by(8) {
            if q.observe(Some(Duration::ZERO), 40, Some(count), at(t0, ms)).is_some() {
                loosened = Some(ms);
                break;
            }
        }
        assert!(loosened.is_some_and(|ms| ms <= 2004 + 2 * 500), "{loosened:?}");
        assert!(!q.is_tight());
        assert!(q.fresh(50 * MS, at(t0, 3200)));
    }

    #[test]
    fn pauses_at_moderate_load_do_not_keep_the_buffer_tight() {
        let t0 = Instant::now();
        let mut q = tightened_at_50_ms(t0);
        // 20k qps, a 50 ms pause every 450 ms: the tight buffer drops about
        // 700 of each 9,000 arrivals (under a tenth): roomy after a window.
        let mut count = 0u32;
        let mut change = None;
        for ms in (52..600u32).step_by(2) {
            if ms % 450 == 0 {
                count += 700;
            }
            change = change.or(q.observe(Some(Duration::ZERO), 40, Some(count), at(t0, ms)));
        }
        assert_eq!(change, Some(Change::Loosen));
    }

    #[test]
    fn without_drop_counts_the_buffer_loosens_after_calm_and_tightens_again() {
        let t0 = Instant::now();
        let mut q = tightened_at_50_ms(t0);
        // The first count is a baseline, not a drop.
        assert_eq!(q.observe(Some(MS), SOME, Some(1000), at(t0, 100)), None);
        assert_eq!(q.observe(Some(MS), FULL, Some(1000), at(t0, 549)), None);
        assert_eq!(q.observe(Some(MS), FULL, None, at(t0, 550)), Some(Change::Loosen));
        // An idle worker reports a zero wait; a standing queue re-tightens.
        assert_eq!(q.observe(Some(Duration::ZERO), 0, None, at(t0, 600)), None);
        assert_eq!(q.observe(Some(9 * MS), FULL, None, at(t0, 700)), None);
        assert_eq!(q.observe(Some(9 * MS), FULL, None, at(t0, 750)), Some(Change::Tighten));
        // What the kernel dropped while roomy (the count moved from 1000
        // to 50,000 unread) is not this tight phase's shedding: its first
        // count is a baseline again, and a calm window loosens.
        assert_eq!(q.observe(Some(MS), FULL, Some(50_000), at(t0, 760)), None);
        assert_eq!(q.observe(Some(MS), FULL, Some(50_001), at(t0, 1249)), None);
        assert_eq!(
            q.observe(Some(MS), FULL, Some(50_002), at(t0, 1251)),
            Some(Change::Loosen)
        );
    }

    #[test]
    fn stamps_are_asked_for_only_while_the_queue_may_stand() {
        let t0 = Instant::now();
        let mut q = Queue::new(t0);
        // Short batches: no standing queue can form, no stamps.
        for ms in [1, 2, 3, 200] {
            assert_eq!(q.observe(None, SOME, None, at(t0, ms)), None);
            assert!(!q.stamps(at(t0, ms)), "at {ms} ms");
        }
        // A full batch: stamped for an interval of short batches after it.
        q.observe(None, FULL, None, at(t0, 210));
        assert!(q.stamps(at(t0, 210)));
        q.observe(Some(MS), SOME, None, at(t0, 250));
        assert!(q.stamps(at(t0, 250)));
        q.observe(Some(MS), SOME, None, at(t0, 261));
        assert!(!q.stamps(at(t0, 261)));
        // Tight: stamped until roomy again, full batches or not.
        let mut q = tightened_at_50_ms(t0);
        for ms in [100, 400, 549] {
            q.observe(Some(MS), SOME, Some(0), at(t0, ms));
            assert!(q.stamps(at(t0, ms)), "at {ms} ms");
        }
        assert_eq!(q.observe(Some(MS), SOME, Some(0), at(t0, 560)), Some(Change::Loosen));
        assert!(!q.stamps(at(t0, 620)));
        // A batch read long after the last clock read (stopped, starved):
        // the next ones are stamped; so after `away` (a stop seen).
        let mut q = Queue::new(t0);
        q.observe(None, SOME, None, at(t0, 1500));
        assert!(q.stamps(at(t0, 1500)));
        // The socket read again after a batch's work took long (stopped,
        // preempted): stamped; after a short one, not.
        let mut q = Queue::new(t0);
        q.observe(None, SOME, None, at(t0, 1));
        q.reading(at(t0, 2));
        assert!(!q.stamps(at(t0, 2)));
        q.reading(at(t0, 20));
        assert!(q.stamps(at(t0, 20)));
        let mut q = Queue::new(t0);
        q.away(at(t0, 10));
        assert!(q.stamps(at(t0, 10)));
    }
}
