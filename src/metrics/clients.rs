//! Requests by client namespace (client IP → pod → namespace, when pods
//! are watched), with a bounded number of series.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use super::catalogue::CLIENT_REQUESTS;

/// Requests by client namespace. At most [`Clients::MAX`] namespaces get
/// their own series; the rest count as `other`, clients without a known
/// pod as `unknown`.
#[derive(Default)]
pub struct Clients {
    named: std::sync::RwLock<Vec<(Arc<str>, AtomicU64)>>,
    other: AtomicU64,
}

impl Clients {
    pub const MAX: usize = 256;

    /// Counts a request from a client in `ns` (clients without a known
    /// pod are not counted here: `unknown` is the rest of all requests).
    pub fn count(&self, ns: &Arc<str>) {
        if let Ok(named) = self.named.read() {
            if let Some((_, n)) = named.iter().find(|(k, _)| Arc::ptr_eq(k, ns) || **k == **ns) {
                n.fetch_add(1, Relaxed);
                return;
            }
            if named.len() >= Self::MAX {
                self.other.fetch_add(1, Relaxed);
                return;
            }
        }
        if let Ok(mut named) = self.named.write() {
            match named.iter().find(|(k, _)| **k == **ns) {
                Some((_, n)) => n.fetch_add(1, Relaxed),
                None if named.len() < Self::MAX => {
                    named.push((ns.clone(), AtomicU64::new(1)));
                    0
                }
                None => self.other.fetch_add(1, Relaxed),
            };
        }
    }

    pub(super) fn render(&self, s: &mut String, all_requests: u64) {
        let name = CLIENT_REQUESTS.name;
        CLIENT_REQUESTS.head(s);
        let other = self.other.load(Relaxed);
        let mut known = other;
        if let Ok(named) = self.named.read() {
            for (ns, n) in named.iter() {
                let n = n.load(Relaxed);
                known += n;
                let _ = writeln!(s, "{name}{{namespace=\"{ns}\"}} {n}");
            }
        }
        let _ = writeln!(s, "{name}{{namespace=\"other\"}} {other}");
        let unknown = all_requests.saturating_sub(known);
        let _ = writeln!(s, "{name}{{namespace=\"unknown\"}} {unknown}");
    }
}
