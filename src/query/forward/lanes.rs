//! The threads forwarded misses run on: a few lanes, each a single-threaded
//! runtime on its own thread, started on first use and kept for the life
//! of the process. A UDP worker hands every miss to the same lane, and each
//! lane keeps its own upstream ports (`outgoing.rs`), so a miss costs one
//! wake-up of the lane to send it and one when the reply arrives, as in
//! unbound's event loop: handing it to the shared multi-threaded runtime
//! woke one of its workers and that one a second to search for more work
//! (measured: `loadtest/bench/forward-miss.sh`).
//!
//! A lane's thread keeps a timer of its own, every [`TICK`]: tokio wakes a
//! parked driver (a write to its eventfd, and one more `epoll_wait` on
//! return) whenever a new timer is due sooner than any it already holds,
//! which an idle lane's miss timeout (`read_timeout`, 2 s by default)
//! always was; with the tick due sooner, a miss registers its timeout
//! without waking anyone.

use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use tokio::runtime::Handle;

/// At most this many lanes (fewer on fewer cores).
pub const MAX_LANES: usize = 4;
/// How often an idle lane's thread wakes (see the module comment).
pub const TICK: std::time::Duration = std::time::Duration::from_millis(500);

static LANES: OnceLock<Vec<Handle>> = OnceLock::new();
static NEXT: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// The lane this thread hands its misses to.
    static MINE: Cell<Option<usize>> = const { Cell::new(None) };
    /// Set on a lane's own thread: its index.
    static ON: Cell<Option<usize>> = const { Cell::new(None) };
}

/// How many lanes there are (started on first use).
pub fn count() -> usize {
    lanes().len()
}

/// The lane for misses from this thread (the same one every time), or
/// `None` when none could be started.
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

/// The index of the lane running on this thread, if it is one.
pub fn on() -> Option<usize> {
    ON.with(Cell::get)
}

fn lanes() -> &'static [Handle] {
    LANES.get_or_init(|| {
        let n = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(MAX_LANES);
        (0..n).map_while(start).collect()
    })
}

/// Starts lane `i`: a thread that runs its runtime until the process ends.
fn start(i: usize) -> Option<Handle> {
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            tracing::warn!(target: "forward", "cannot start forwarding lane {i}: {e}");
            return None;
        }
    };
    let handle = runtime.handle().clone();
    let thread = std::thread::Builder::new().name(format!("forward-{i}")).spawn(move || {
        ON.with(|on| on.set(Some(i)));
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
