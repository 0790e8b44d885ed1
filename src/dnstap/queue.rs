//! The queue between the query path and one tap's writer: a few slots,
//! each a mutex over a batch of fixed-size [`Record`]s and one byte buffer
//! for their wire messages. A thread keeps to one slot (assigned
//! round-robin at its first push), so a worker's lock is uncontended but
//! for the moment the writer swaps the batch out; a push allocates nothing
//! once the buffers have grown. The writer is woken only when it sleeps
//! with the queue empty, not per message.
//!
//! ```text
//!  worker thread ─ push ─► slot[t % SLOTS] ─┐  writer: swap each slot's batch
//!  worker thread ─ push ─► slot[…]         ─┼─► with its spare (cleared, its
//!  forward task  ─ push ─► slot[…]         ─┘   capacity kept), encode, write
//! ```
//!
//! A slot holds at most `cap` exchanges and `cap` × 512 bytes of wire
//! messages; a push past either is refused (the caller drops and counts).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::Notify;

use super::record::Record;

/// Slots per queue: more than the threads that usually push.
pub(super) const SLOTS: usize = 8;
/// Wire bytes a slot may hold per exchange it may hold.
const WIRE_PER_RECORD: usize = 512;
/// How long a sleeping writer waits for a wake-up before it looks anyway
/// (a wake-up lost to a race costs at most this delay).
const NAP: Duration = Duration::from_millis(100);

static NEXT_SLOT: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static SLOT: usize = NEXT_SLOT.fetch_add(1, Relaxed) % SLOTS;
}

/// Exchanges and the wire messages their ranges point into.
#[derive(Default)]
pub(super) struct Batch {
    pub records: Vec<Record>,
    pub wire: Vec<u8>,
}

impl Batch {
    fn clear(&mut self) {
        self.records.clear();
        self.wire.clear();
    }

    /// The wire bytes of `range`, as [`Queue::push`] stored them.
    pub fn bytes(&self, range: (u32, u32)) -> &[u8] {
        self.wire.get(range.0 as usize..range.1 as usize).unwrap_or_default()
    }
}

pub(super) struct Queue {
    slots: Box<[Mutex<Batch>]>,
    cap: usize,
    /// The writer sleeps on an empty queue: the next push wakes it.
    idle: AtomicBool,
    /// False while nobody would get the messages (a listening tap with no
    /// collector connected): pushes are skipped, not counted as drops.
    wanted: AtomicBool,
    closed: AtomicBool,
    wake: Notify,
}

impl Queue {
    /// A queue whose slots each hold up to `cap` exchanges.
    pub fn new(cap: usize) -> Queue {
        Queue {
            slots: (0..SLOTS).map(|_| Mutex::new(Batch::default())).collect(),
            cap: cap.max(1),
            idle: AtomicBool::new(false),
            wanted: AtomicBool::new(true),
            closed: AtomicBool::new(false),
            wake: Notify::new(),
        }
    }

    /// Queues `record` with its wire messages (empty when not wanted);
    /// false when the slot is full (nothing queued).
    pub fn push(&self, mut record: Record, query: &[u8], reply: &[u8]) -> bool {
        if !self.wanted.load(Relaxed) {
            return true;
        }
        let slot = SLOT.with(|s| *s);
        {
            let mut b = lock(&self.slots[slot]);
            let wire = b.wire.len() + query.len() + reply.len();
            if b.records.len() >= self.cap || wire > self.cap * WIRE_PER_RECORD {
                return false;
            }
            record.query = append(&mut b.wire, query);
            record.reply = append(&mut b.wire, reply);
            b.records.push(record);
            if b.records.len() == self.cap.div_ceil(2) {
                // Half full: the writer takes the batch now, not after
                // its gathering pause.
                self.wake.notify_one();
                return true;
            }
        }
        if self.idle.load(Relaxed) && self.idle.swap(false, Relaxed) {
            self.wake.notify_one();
        }
        true
    }

    /// Swaps every slot's batch with `spares`' (cleared first, so their
    /// capacity comes back into use); true when anything came.
    pub fn drain(&self, spares: &mut [Batch; SLOTS]) -> bool {
        let mut any = false;
        for (slot, spare) in self.slots.iter().zip(spares.iter_mut()) {
            spare.clear();
            let mut b = lock(slot);
            if !b.records.is_empty() {
                std::mem::swap(&mut *b, spare);
                any = true;
            }
        }
        any
    }

    /// Waits until something is queued (or the queue closes), at most
    /// [`NAP`]; call after a drain found nothing.
    pub async fn wait(&self) {
        self.idle.store(true, Relaxed);
        let _ = tokio::time::timeout(NAP, self.wake.notified()).await;
        self.idle.store(false, Relaxed);
    }

    /// Lets messages gather for `pause`, or until a slot is half full or
    /// the queue closes.
    pub async fn gather(&self, pause: Duration) {
        let _ = tokio::time::timeout(pause, self.wake.notified()).await;
    }

    pub fn want(&self, wanted: bool) {
        self.wanted.store(wanted, Relaxed);
    }

    /// The taps were dropped: the writer finishes what is queued and ends.
    pub fn close(&self) {
        self.closed.store(true, Relaxed);
        self.wake.notify_one();
    }

    pub fn is_closed(&self) -> bool {
        self.closed.load(Relaxed)
    }
}

/// The spare batches a writer swaps in.
pub(super) fn spares() -> [Batch; SLOTS] {
    std::array::from_fn(|_| Batch::default())
}

fn lock(m: &Mutex<Batch>) -> MutexGuard<'_, Batch> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Appends `bytes` to `wire`; their range there.
fn append(wire: &mut Vec<u8>, bytes: &[u8]) -> (u32, u32) {
    let start = wire.len() as u32;
    wire.extend_from_slice(bytes);
    (start, wire.len() as u32)
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;
    use crate::dnstap::Side;

    fn record() -> Record {
        Record::new(
            Side::Client,
            "127.0.0.1:1".parse().expect("addr"),
            false,
            Instant::now(),
        )
    }

    #[test]
    fn a_full_slot_refuses_and_a_drain_empties_it() {
        let q = Queue::new(2);
        assert!(q.push(record(), b"ab", b"cde"));
        assert!(q.push(record(), b"", b""));
        assert!(!q.push(record(), b"", b""), "a third exchange is past the cap");
        let mut spares = spares();
        assert!(q.drain(&mut spares));
        let b = spares.iter().find(|b| !b.records.is_empty()).expect("a batch");
        assert_eq!(b.records.len(), 2);
        assert_eq!(
            (b.bytes(b.records[0].query), b.bytes(b.records[0].reply)),
            (&b"ab"[..], &b"cde"[..])
        );
        assert_eq!(b.bytes(b.records[1].query), b"");
        assert!(q.push(record(), b"", b""), "room again after the drain");
        // Wire bytes are bounded too.
        let big = vec![0u8; 2 * WIRE_PER_RECORD + 1];
        let q = Queue::new(2);
        assert!(!q.push(record(), &big, b""));
    }
}
