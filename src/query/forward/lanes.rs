//! The threads forwarded misses run on. A UDP worker is its own lane: it
//! runs its loop inside a single-threaded runtime of its own
//! ([`Worker::enter`]), and a miss it reads is spawned there, on its own
//! thread (a push onto the runtime's local queue: no eventfd, no second
//! thread), so that, as in unbound's event loop, one `epoll_wait` watches
//! the client socket and the miss's upstream port together and a miss costs
//! two sleeps of one thread: for the query and for the reply, where the
//! hand-off to a lane on another thread cost three (context switches of
//! the server at 5,000 misses a second; `loadtest/bench/forward-miss.sh`
//! and `syscalls-per-miss.sh`). The worker's loop decides how to wait
//! (`query/udp/wait.rs`).
//!
//! Everything else (TCP, DoT and the other encrypted transports, which keep
//! connections shared between threads; a worker whose fairness limits a
//! client; reloads) hands its misses to a few shared lanes, each a
//! single-threaded runtime on its own thread, started on first use and kept
//! for the life of the process. Each lane, a worker's included, keeps its
//! own upstream ports and TCP connections ([`PerLane`]), so a socket is only
//! ever read on the thread whose runtime watches it.
//!
//! A shared lane's thread keeps a timer of its own, every [`TICK`]: tokio
//! wakes a parked driver (a write to its eventfd, and one more `epoll_wait`
//! on return) whenever a new timer is due sooner than any it already holds,
//! which an idle lane's miss timeout (`read_timeout`, 2 s by default)
//! always was; with the tick due sooner, a miss registers its timeout
//! without waking anyone. A worker's lane needs no tick: its misses are
//! spawned by its own thread, awake at that moment. Its one timer, the
//! shutdown poll, is held by its loop, not by a task: a task alive would
//! count as a miss in flight and keep the worker from its plain blocking
//! read.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use tokio::runtime::{Handle, Runtime};

/// At most this many shared lanes (fewer on fewer cores).
pub const MAX_LANES: usize = 4;
/// At most this many UDP workers are lanes at once (the others hand their
/// misses to the shared lanes): a worker per core and listening address,
/// twice over while a reload starts new workers before the old ones stop.
pub const WORKER_LANES: usize = 64;
/// Pools of sockets kept per lane: the shared lanes', the workers', and
/// one for every other thread.
pub const POOLS: usize = MAX_LANES + WORKER_LANES + 1;
/// How often an idle lane's thread wakes (see the module comment).
pub const TICK: std::time::Duration = std::time::Duration::from_millis(500);

static LANES: OnceLock<Vec<Handle>> = OnceLock::new();
static NEXT: AtomicUsize = AtomicUsize::new(0);
/// Worker lanes' slots in use.
static TAKEN: Mutex<[bool; WORKER_LANES]> = Mutex::new([false; WORKER_LANES]);
/// Owners of worker lanes' slots: never reused, so that a pool left by a
/// worker that ended is told from its successor's (see [`PerLane`]).
static OWNERS: AtomicU64 = AtomicU64::new(MAX_LANES as u64 + 1);

thread_local! {
    /// The shared lane this thread hands its misses to.
    static MINE: Cell<Option<usize>> = const { Cell::new(None) };
    /// Set on a lane's own thread: its pool and its owner.
    static ON: Cell<Option<(usize, u64)>> = const { Cell::new(None) };
    /// Set while a worker's misses run on its own runtime.
    static LOCAL: Cell<bool> = const { Cell::new(false) };
}

/// How many shared lanes there are (started on first use).
pub fn count() -> usize {
    lanes().len()
}

/// The shared lane for misses from this thread (the same one every time),
/// or `None` when none could be started.
pub fn lane() -> Option<&'static Handle> {
    let lanes = lanes();
    if lanes.is_empty() {
        return None;
    }
    let i = MINE.with(|mine| {
        let i = mine
            .get()
            .unwrap_or_else(|| NEXT.fetch_add(1, Ordering::Relaxed) % lanes.len());
        mine.set(Some(i));
        i
    });
    lanes.get(i)
}

/// Whether this thread's misses are spawned on its own runtime (a UDP
/// worker's lane, not handing them off).
pub fn local() -> bool {
    LOCAL.with(Cell::get)
}

/// Lets this worker's misses run here (`true`) or go to a shared lane.
pub fn set_local(on: bool) {
    if ON.with(Cell::get).is_some_and(|(i, _)| i >= MAX_LANES) {
        LOCAL.with(|l| l.set(on));
    }
}

/// This thread's pool ([`POOLS`]) and who owns it now: each lane's apart.
pub fn owner() -> (usize, u64) {
    ON.with(Cell::get).unwrap_or((POOLS - 1, 0))
}

/// Like [`owner`], but one pool for every thread whose runtime always
/// watches its sockets (the shared lanes and the multi-threaded runtime):
/// a connection opened on one may be read on another. Only a worker's lane
/// sleeps in a plain `recvmmsg` and keeps its own.
pub fn owner_shared() -> (usize, u64) {
    ON.with(Cell::get)
        .filter(|(i, _)| *i >= MAX_LANES)
        .unwrap_or((POOLS - 1, 0))
}

/// A UDP worker's lane: its runtime, and its slot while it lives.
pub struct Worker {
    runtime: Runtime,
    slot: usize,
}

impl Worker {
    /// A lane for the calling worker thread; `None` when all
    /// [`WORKER_LANES`] are taken or no runtime could be built.
    pub fn claim() -> Option<Worker> {
        let slot = {
            let mut taken = TAKEN.lock().ok()?;
            let slot = taken.iter().position(|t| !t)?;
            taken[slot] = true;
            slot
        };
        match build("a worker's forwarding lane") {
            Some(runtime) => Some(Worker { runtime, slot }),
            None => {
                free(slot);
                None
            }
        }
    }

    /// Runs `f` on this thread as the lane: inside the runtime, with misses
    /// spawned there while [`local`].
    pub fn enter<F: std::future::Future>(&self, f: F) -> F::Output {
        let owner = OWNERS.fetch_add(1, Ordering::Relaxed);
        ON.with(|on| on.set(Some((MAX_LANES + self.slot, owner))));
        LOCAL.with(|l| l.set(true));
        let out = self.runtime.block_on(f);
        LOCAL.with(|l| l.set(false));
        ON.with(|on| on.set(None));
        out
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        free(self.slot);
    }
}

fn free(slot: usize) {
    if let Ok(mut taken) = TAKEN.lock() {
        taken[slot] = false;
    }
}

/// Things one lane's runtime watches (UDP ports, TCP connections), kept
/// apart per lane ([`POOLS`]): each is used only on the thread that
/// registered it, whose runtime reads its readiness. What a worker's lane
/// left when it ended is dropped by the next owner of its slot.
#[derive(Debug)]
pub struct PerLane<T> {
    slots: [Mutex<(u64, T)>; POOLS],
}

impl<T: Default> Default for PerLane<T> {
    fn default() -> PerLane<T> {
        PerLane {
            slots: std::array::from_fn(|_| Mutex::default()),
        }
    }
}

impl<T: Default> PerLane<T> {
    /// `f` on this thread's share; what a lane that has since ended left
    /// there goes to `left` first. `None` if the lock was poisoned.
    pub fn with<R>(&self, left: impl FnOnce(T), f: impl FnOnce(&mut T) -> R) -> Option<R> {
        self.with_of(owner(), left, f)
    }

    /// [`PerLane::with`] on the share of `(pool, owner)` ([`owner`] or
    /// [`owner_shared`]).
    pub fn with_of<R>(&self, (i, owner): (usize, u64), left: impl FnOnce(T), f: impl FnOnce(&mut T) -> R) -> Option<R> {
        let mut slot = self.slots.get(i)?.lock().ok()?;
        if slot.0 != owner {
            slot.0 = owner;
            left(std::mem::take(&mut slot.1));
        }
        Some(f(&mut slot.1))
    }
}

fn lanes() -> &'static [Handle] {
    LANES.get_or_init(|| {
        let n = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(MAX_LANES);
        (0..n).map_while(start).collect()
    })
}

/// A lane's single-threaded runtime; `None` (logged, naming `what`) when
/// it cannot be built.
fn build(what: &str) -> Option<Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| tracing::warn!(target: "forward", "cannot start {what}: {e}"))
        .ok()
}

/// Starts shared lane `i`: a thread that runs its runtime until the
/// process ends.
fn start(i: usize) -> Option<Handle> {
    let runtime = build(&format!("forwarding lane {i}"))?;
    let handle = runtime.handle().clone();
    let thread = std::thread::Builder::new().name(format!("forward-{i}")).spawn(move || {
        ON.with(|on| on.set(Some((i, i as u64 + 1))));
        MINE.with(|mine| mine.set(Some(i)));
        runtime.block_on(async {
            let mut tick = tokio::time::interval(TICK);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
            }
        });
    });
    match thread {
        Ok(_) => Some(handle),
        Err(e) => {
            tracing::warn!(target: "forward", "cannot start forwarding lane {i}: {e}");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lane_gets_its_own_share_and_a_successor_drops_what_an_ended_one_left() {
        let pool: PerLane<Vec<u32>> = PerLane::default();
        ON.with(|on| on.set(Some((MAX_LANES + 3, 1_000))));
        pool.with(|_| {}, |v| v.extend([1, 2, 3]));
        // a worker that claims the slot after: the old sockets go, unused
        ON.with(|on| on.set(Some((MAX_LANES + 3, 1_001))));
        let mut left = Vec::new();
        let mine = pool.with(|old| left = old, |v| v.clone());
        assert_eq!((left, mine), (vec![1, 2, 3], Some(vec![])));
        // any other thread has a share of its own
        let other = std::thread::scope(|s| s.spawn(|| pool.with(|_| {}, |v| v.len())).join());
        assert_eq!(other.ok().flatten(), Some(0));
        ON.with(|on| on.set(None));
        assert_eq!(owner(), (POOLS - 1, 0));
    }

    #[test]
    fn a_worker_lane_runs_its_misses_on_its_own_thread() {
        let Some(lane) = Worker::claim() else { return };
        let here = std::thread::current().id();
        let ran = lane.enter(async {
            assert!(local());
            let task = tokio::spawn(async { std::thread::current().id() });
            task.await.ok()
        });
        assert_eq!(ran, Some(here));
        assert!(!local(), "only while the lane runs");
    }
}
