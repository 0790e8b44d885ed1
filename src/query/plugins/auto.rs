//! The `auto` plugin: the zone files of a directory, each served as `file`
//! serves one ([`ZoneFile::found`]), found again every `reload`
//! (CoreDNS's `auto`). Each line is a [`Line`] of the block's zone plugin.
//!
//! - [`start`] reads the directory at once (as CoreDNS at startup), then
//!   every `reload` on a task of its own while the block lives.
//! - A file name (anywhere below DIR, symlinks followed) matching REGEXP
//!   gives the origin ORIGIN_TEMPLATE names; when two files give one
//!   origin the first in name order is kept, the other logged.
//! - A new file is loaded; a file changed (modification time or path) is
//!   read again and replaces its zone only when the SOA serial changed (as
//!   CoreDNS: "picked up only when SOA's serial changes"); a file gone
//!   takes its zone away; a file that does not parse is logged and its
//!   zone (if one was loaded) kept.
//! - A name under the directive's zones with no zone found goes on to the
//!   next plugin, as in CoreDNS.

pub mod print;
pub mod setup;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};
use std::time::SystemTime;

use arc_swap::ArcSwap;
use hickory_proto::rr::Name;

use crate::corefile::words::Block;
use crate::metrics::Plugin;
use crate::query::plugins::chain::changed;
use crate::query::plugins::file::line::Line;
use crate::query::plugins::file::zone::{FoundZones, ZoneFile};
use crate::zonefile::Zone;
use setup::AutoConfig;

/// One zone found: its origin, file, the file's modification time when
/// read, and the zone.
#[derive(Clone)]
struct Entry {
    origin: Name,
    path: PathBuf,
    /// Its modification time and size when read.
    modified: Option<(SystemTime, u64)>,
    zone: Arc<Option<Zone>>,
}

/// The zones of one `auto` directive, read now and kept up to date.
pub fn start(cfg: &AutoConfig) -> ZoneFile {
    let entries = walk(cfg, &[]);
    let found = Arc::new(ArcSwap::from_pointee(served(&entries)));
    if !cfg.reload.is_zero() {
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(keep(cfg.clone(), entries, Arc::downgrade(&found)));
        }
    }
    ZoneFile::found(cfg.as_file(), found, Plugin::Auto)
}

impl Line for AutoConfig {
    fn directive(&self) -> &'static str {
        "auto"
    }

    /// After `file`'s zones, before transferred ones, as in the table.
    fn rank(&self) -> u8 {
        1
    }

    fn print(&self, b: &mut Block) {
        print::auto(b, self);
    }

    fn start(&self) -> ZoneFile {
        start(self)
    }

    /// The zones its files are found under: `transfer` sends each zone
    /// found under them, by its own name.
    fn transferred(&self) -> &[Name] {
        &self.zones
    }
}

/// Reads the directory every `reload` while the block's zones live.
async fn keep(cfg: AutoConfig, mut entries: Vec<Entry>, found: Weak<ArcSwap<FoundZones>>) {
    loop {
        tokio::time::sleep(cfg.reload).await;
        let Some(found) = found.upgrade() else {
            return;
        };
        let cfg2 = cfg.clone();
        let old = entries.clone();
        entries = match tokio::task::spawn_blocking(move || walk(&cfg2, &old)).await {
            Ok(e) => e,
            Err(_) => continue,
        };
        let next = served(&entries);
        let now = found.load();
        let same = now.len() == next.len()
            && now
                .iter()
                .zip(&next)
                .all(|(a, b)| a.0 == b.0 && Arc::ptr_eq(&a.1, &b.1));
        if !same {
            found.store(Arc::new(next));
            changed();
        }
    }
}

fn served(entries: &[Entry]) -> FoundZones {
    entries.iter().map(|e| (e.origin.clone(), e.zone.clone())).collect()
}

/// The zones the directory holds now, reusing `before`'s where the file
/// did not change (or changed without a new serial).
fn walk(cfg: &AutoConfig, before: &[Entry]) -> Vec<Entry> {
    let root = std::fs::canonicalize(&cfg.directory).unwrap_or_else(|_| cfg.directory.clone());
    let mut files = Vec::new();
    list(&root, &mut files, 0);
    files.sort();
    let mut now: Vec<Entry> = Vec::new();
    for path in files {
        let Some(origin) = origin_of(cfg, &path) else {
            continue;
        };
        if let Some(first) = now.iter().find(|e| e.origin == origin) {
            tracing::warn!(target: "auto", "multiple zone files match origin {origin}: using {} instead of {}", first.path.display(), path.display());
            continue;
        }
        let old = before.iter().find(|e| e.origin == origin);
        if let Some(entry) = load(&origin, path, old) {
            now.push(entry);
        }
    }
    for gone in before.iter().filter(|b| !now.iter().any(|e| e.origin == b.origin)) {
        tracing::info!(target: "auto", "deleting zone {}", gone.origin);
    }
    now
}

/// The zone of `origin` from `path`: `old`'s when the file is the same
/// or its serial did not change; `None` when it never loaded.
fn load(origin: &Name, path: PathBuf, old: Option<&Entry>) -> Option<Entry> {
    let modified = std::fs::metadata(&path).and_then(|m| Ok((m.modified()?, m.len()))).ok();
    if let Some(old) = old.filter(|o| o.path == path && o.modified == modified) {
        return Some(old.clone());
    }
    let zone = match crate::zonefile::parse_file(&path, origin) {
        Ok(z) => z,
        Err(e) => {
            tracing::warn!(target: "auto", "parse zone {origin} ({}): {e}", path.display());
            return old.cloned();
        }
    };
    let held = old.and_then(|o| o.zone.as_ref().as_ref().map(Zone::serial));
    let zone = match (old, held) {
        (Some(o), Some(serial)) if serial == zone.serial() => o.zone.clone(),
        (Some(_), _) => {
            tracing::info!(target: "auto", "reloaded zone {origin} from {} (serial {})", path.display(), zone.serial());
            Arc::new(Some(zone))
        }
        (None, _) => {
            tracing::info!(target: "auto", "inserting zone {origin} from {}", path.display());
            Arc::new(Some(zone))
        }
    };
    Some(Entry {
        origin: origin.clone(),
        path,
        modified,
        zone,
    })
}

/// Every file below `dir` (symlinks followed, at most 16 levels deep).
fn list(dir: &Path, out: &mut Vec<PathBuf>, depth: usize) {
    let Ok(read) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in read.flatten() {
        let path = entry.path();
        match std::fs::metadata(&path) {
            Ok(m) if m.is_dir() && depth < 16 => list(&path, out, depth + 1),
            Ok(m) if m.is_file() => out.push(path),
            _ => {}
        }
    }
}

/// The origin the file name of `path` gives, if its name matches.
fn origin_of(cfg: &AutoConfig, path: &Path) -> Option<Name> {
    let base = path.file_name()?.to_str()?;
    let caps = cfg.regex.captures(base)?;
    let mut origin = String::new();
    caps.expand(&cfg.template, &mut origin);
    if origin.is_empty() {
        return None;
    }
    let mut name = Name::from_ascii(&origin).ok()?;
    name.set_fqdn(true);
    Some(name.to_lowercase())
}
