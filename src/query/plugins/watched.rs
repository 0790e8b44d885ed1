//! Files that plugins watch: `hosts` (a hosts file) and `file` (an RFC
//! 1035 zone file) reload their file when it changes ([`watch_file`]); a
//! file that fails to load keeps the previous data and logs `FILE: error`.

use std::path::Path;
use std::time::{Duration, SystemTime};

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

/// Polls `path` every `every` and calls `load` when its mtime changes.
pub(super) fn watch_file(path: std::path::PathBuf, every: Duration, mut load: impl FnMut() + Send + 'static) {
    if every.is_zero() {
        return;
    }
    let Ok(rt) = tokio::runtime::Handle::try_current() else {
        return;
    };
    // The time is taken now, not when the task first runs: a change in between counts.
    let mut seen = modified(&path);
    rt.spawn(async move {
        loop {
            tokio::time::sleep(every).await;
            let now = modified(&path);
            if now != seen {
                seen = now;
                load();
            }
        }
    });
}
