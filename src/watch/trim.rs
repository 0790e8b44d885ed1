//! Handing the memory a list freed back to the system, once the list is
//! applied: glibc's malloc keeps freed memory in its heaps (the pages'
//! texts and the decoded objects between the long-lived records), where it
//! counts as resident though no heap profile shows it.
//! `malloc_trim(0)` returns every whole free page of every arena
//! (`MADV_DONTNEED`), not only the top of the main heap.
//!
//! Measured at 100,000 Services × 5 endpoints (`loadtest watch-bench`,
//! the log line below): 0.6–1.2 MB back after the initial sync, 0.7–2.4 MB
//! after each kind's relist, in 1–4 ms of the writer. Most of what a list
//! frees lies in holes smaller than a page between live records, which
//! only compaction could give back.
//!
//! The static image is glibc too (`+crt-static`, deploy/Dockerfile), so it
//! trims alike. Under musl (or any other libc) this does nothing: musl's
//! mallocng unmaps freed groups itself and has no `malloc_trim`.

/// Returns free memory to the system; the resident set before and after,
/// in kB (`None` where nothing is trimmed or `/proc` is not readable).
pub fn release() -> Option<(u64, u64)> {
    let before = resident_kb()?;
    if !trim() {
        return None;
    }
    Some((before, resident_kb()?))
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
fn trim() -> bool {
    // SAFETY: malloc_trim takes no pointers; it walks glibc's own arenas
    // under their locks, as malloc and free do, and only releases pages
    // no allocation holds.
    unsafe { libc::malloc_trim(0) };
    true
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn trim() -> bool {
    false
}

/// This process's resident set (`VmRSS`), in kB.
fn resident_kb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    crate::metrics::process::status_kb(&status, "VmRSS:")
}

/// Trims and logs what it gave back, after `what` (a list, a load).
pub fn after(what: &str) {
    if let Some((before, after)) = release() {
        let mb = |kb: u64| kb as f64 / 1024.0;
        tracing::info!(target: "kubernetes", "after {what}: resident memory {:.1} MB -> {:.1} MB (freed memory returned to the system)", mb(before), mb(after));
    }
}
