//! The overload policy against made-up clocks.

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

#[test]
fn a_wait_for_the_socket_is_not_time_away() {
    let t0 = Instant::now();
    let mut q = Queue::new(t0);
    q.observe(None, SOME, None, at(t0, 1));
    // Prepared before the wait, then idle for 150 ms: the batch that
    // ends the wait is read without stamps.
    q.reading(at(t0, 2));
    q.woke(at(t0, 2), 200 * MS, at(t0, 152));
    q.observe(None, SOME, None, at(t0, 152));
    assert!(!q.stamps(at(t0, 152)));
    // Waits that time out are observed (the queue is empty): a batch
    // after seconds of them is not read long after the last clock read.
    for ms in (352..3000u32).step_by(200) {
        q.reading(at(t0, ms - 200));
        q.woke(at(t0, ms - 200), 200 * MS, at(t0, ms));
        q.observe(Some(Duration::ZERO), 0, None, at(t0, ms));
    }
    q.reading(at(t0, 2952));
    q.woke(at(t0, 2952), 200 * MS, at(t0, 3100));
    q.observe(None, SOME, None, at(t0, 3100));
    assert!(!q.stamps(at(t0, 3100)));
    // A wait that ended well past its bound: starved after it.
    q.reading(at(t0, 3101));
    q.woke(at(t0, 3101), 200 * MS, at(t0, 3310));
    assert!(q.stamps(at(t0, 3310)));
    // Slow on a batch before the next wait: away.
    let mut q = Queue::new(t0);
    q.observe(None, SOME, None, at(t0, 1));
    q.reading(at(t0, 9));
    assert!(q.stamps(at(t0, 9)));
}
