//! A `secondary` line with `catalog`: its zones are RFC 9432 catalog
//! zones, kept by transfer as any secondary zone (a transfer that does not
//! parse as a catalog is a failed one: the zone held is kept), and each
//! member zone they list is kept the same way from the same primaries, as
//! CoreDNS main's secondary does:
//!
//! - after each change of a catalog, a member new to it is added (first
//!   transferred, SERVFAIL until then), one gone from it is removed (its
//!   names are then REFUSED, no plugin answering them), one whose ID
//!   changed is transferred anew;
//! - `catalog MEMBERS...` takes only members at or below those names
//!   (RFC 9432 section 7 advises it); the others are skipped and logged;
//! - a member that is one of the line's catalogs is skipped, as is one
//!   already a member of another of its catalogs, unless that catalog's
//!   `coo` property for it names this one (RFC 9432 section 5.6.1): it
//!   then moves, its zone kept when both catalogs (and the zone held)
//!   give it the same ID, transferred anew otherwise;
//! - the zones are served as `auto`'s found zones ([`ZoneFile::found`])
//!   under MEMBERS and the catalogs (every name without MEMBERS): there a
//!   name of no zone goes to the next plugin, REFUSED when none follows;
//!   NOTIFY for a catalog or a member is heeded from its primaries.

use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use arc_swap::ArcSwap;
use hickory_proto::rr::Name;

use super::keep::{heed, keep, Hooks, Primaries};
use super::members::{accept, members, Member as Listed};
use super::setup::SecondaryConfig;
use crate::metrics::Plugin;
use crate::query::plugins::chain::changed;
use crate::query::plugins::file::setup::FileConfig;
use crate::query::plugins::file::zone::{Found, FoundZones, Loaded, Notified, ZoneFile};

/// One zone kept by transfer.
struct Kept {
    origin: Name,
    slot: Loaded,
    primaries: Arc<Primaries>,
}

/// A member zone, with the catalog listing it and its ID there.
struct Member {
    kept: Kept,
    catalog: Name,
    id: String,
}

/// The catalogs of one line and their members.
pub struct Catalog {
    cfg: SecondaryConfig,
    /// What is served: the catalogs, then the members.
    found: Found,
    me: Weak<Catalog>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    catalogs: Vec<Kept>,
    members: Vec<Member>,
    /// What each catalog listed at its last change.
    listings: Vec<(Name, Vec<Listed>)>,
}

/// The running lines' catalogs: a reload with the same line takes them
/// over (members and all).
static RUNNING: Mutex<Vec<(SecondaryConfig, Weak<Catalog>)>> = Mutex::new(Vec::new());

/// The zones of a `catalog` line: a running line's when it is the same.
pub fn start(cfg: &SecondaryConfig) -> ZoneFile {
    let catalog = match RUNNING.lock() {
        Ok(mut running) => {
            running.retain(|(_, c)| c.strong_count() > 0);
            let live = running.iter().filter(|(c, _)| c == cfg).find_map(|(_, c)| c.upgrade());
            live.unwrap_or_else(|| {
                let fresh = Catalog::new(cfg);
                running.push((cfg.clone(), Arc::downgrade(&fresh)));
                fresh
            })
        }
        Err(_) => Catalog::new(cfg),
    };
    ZoneFile::found(bound(cfg), catalog.found.clone(), Plugin::Secondary).notified(catalog)
}

/// The names the line's zones are served under: MEMBERS and the
/// catalogs, or all names (those of the block) when any member is taken.
/// Under them a name of no zone goes to the next plugin, REFUSED when none
/// follows (CoreDNS's secondary); the block's other names are not the
/// line's at all, so its fast ways stay open for them.
fn bound(cfg: &SecondaryConfig) -> FileConfig {
    let mut file = cfg.as_file();
    match &cfg.catalog {
        Some(members) if !members.is_empty() => file.zones.extend(members.iter().cloned()),
        _ => file.zones = vec![Name::root()],
    }
    file
}

impl Kept {
    fn new(origin: Name, cfg: &SecondaryConfig) -> Kept {
        let primaries = Primaries {
            from: cfg.from.clone(),
            notified: tokio::sync::Notify::new(),
        };
        Kept {
            origin,
            slot: Arc::new(ArcSwap::from_pointee(None)),
            primaries: Arc::new(primaries),
        }
    }

    /// A task keeping the zone while its slot lives.
    fn spawn(&self, accept: fn(&crate::zonefile::Zone) -> Result<(), String>, catalog: &Weak<Catalog>) {
        let (me, origin) = (catalog.clone(), self.origin.clone());
        let hooks = Hooks {
            accept,
            changed: Arc::new(move || {
                if let Some(c) = me.upgrade() {
                    c.changed(&origin);
                }
            }),
        };
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            let slot = Arc::downgrade(&self.slot);
            rt.spawn(keep(self.origin.clone(), slot, self.primaries.clone(), hooks));
        }
    }

    /// Its task ends (woken to find its slot gone).
    fn stop(self) {
        let primaries = self.primaries.clone();
        drop(self);
        primaries.notified.notify_one();
    }
}

impl Catalog {
    fn new(cfg: &SecondaryConfig) -> Arc<Catalog> {
        let catalog = Arc::new_cyclic(|me| Catalog {
            cfg: cfg.clone(),
            found: Arc::new(ArcSwap::from_pointee(Vec::new())),
            me: me.clone(),
            state: Mutex::new(State {
                catalogs: cfg.zones.iter().map(|o| Kept::new(o.clone(), cfg)).collect(),
                members: Vec::new(),
                listings: Vec::new(),
            }),
        });
        if let Some(state) = catalog.lock() {
            state.catalogs.iter().for_each(|k| k.spawn(accept, &catalog.me));
            catalog.publish(&state);
        }
        catalog
    }

    fn lock(&self) -> Option<MutexGuard<'_, State>> {
        self.state.lock().ok()
    }

    /// The zone of `origin` changed: when it is a catalog, its members
    /// follow what it lists now.
    fn changed(&self, origin: &Name) {
        let Some(mut state) = self.lock() else {
            return;
        };
        let listed = state
            .catalogs
            .iter()
            .find(|k| &k.origin == origin)
            .map(|k| k.slot.load_full());
        if let Some(Some(zone)) = listed.as_deref() {
            match members(zone) {
                Ok(list) => self.apply(&mut state, origin, list),
                Err(e) => tracing::warn!(target: "secondary", "catalog {origin}: {e}"),
            }
        }
        self.publish(&state);
        changed();
    }

    /// What is served now.
    fn publish(&self, state: &State) {
        let members = state.members.iter().map(|m| &m.kept);
        let zones = state.catalogs.iter().chain(members);
        let found: FoundZones = zones.map(|k| (k.origin.clone(), k.slot.load_full())).collect();
        self.found.store(Arc::new(found));
    }

    /// `catalog`'s members made `listed`.
    fn apply(&self, state: &mut State, catalog: &Name, listed: Vec<Listed>) {
        let (mut taken, mut skipped) = (Vec::new(), 0);
        for m in &listed {
            if !self.allowed(&m.zone) {
                skipped += 1;
            } else if self.take(state, catalog, m) {
                taken.push(m.zone.clone());
            }
        }
        state.listings.retain(|(c, _)| c != catalog);
        state.listings.push((catalog.clone(), listed));
        let (gone, kept) = std::mem::take(&mut state.members)
            .into_iter()
            .partition(|m: &Member| m.catalog == *catalog && !taken.contains(&m.kept.origin));
        state.members = kept;
        for m in gone {
            tracing::info!(target: "secondary", "removed catalog member zone {} from catalog {catalog}", m.kept.origin);
            m.kept.stop();
        }
        if skipped > 0 {
            tracing::warn!(target: "secondary", "skipped {skipped} member zones from catalog {catalog}: outside configured member zones");
        }
    }

    /// Whether `m`, listed by `catalog`, is its member now: a new one
    /// added, one listed under a new ID reset, one of another catalog
    /// taken over only when that one's `coo` names this one.
    fn take(&self, state: &mut State, catalog: &Name, m: &Listed) -> bool {
        let exists = |why: &str| {
            tracing::warn!(target: "secondary", "skipping catalog member zone {} from {catalog}: {why}", m.zone);
            false
        };
        if state.catalogs.iter().any(|k| k.origin == m.zone) {
            return exists("zone already exists");
        }
        let Some(i) = state.members.iter().position(|x| x.kept.origin == m.zone) else {
            tracing::info!(target: "secondary", "added catalog member zone {} from catalog {catalog}", m.zone);
            state.members.push(self.member(m, catalog));
            return true;
        };
        let held = &state.members[i];
        if held.catalog == *catalog {
            if held.id != m.id {
                tracing::info!(target: "secondary", "reset catalog member zone {} from {catalog} after member ID changed from {} to {}", m.zone, held.id, m.id);
                self.replace(state, i, m, catalog);
            }
            return true;
        }
        let from = held.catalog.clone();
        let listing = state.listings.iter().find(|(c, _)| *c == from);
        let source = listing.and_then(|(_, l)| l.iter().find(|x| x.zone == m.zone));
        let Some(source) = source.filter(|s| s.coo.as_ref() == Some(catalog)) else {
            return exists(&format!("a member of catalog {from}"));
        };
        if held.id == source.id && source.id == m.id {
            tracing::info!(target: "secondary", "migrated catalog member zone {} from catalog {from} to {catalog}, preserving state for member ID {}", m.zone, m.id);
            state.members[i].catalog = catalog.clone();
        } else {
            tracing::info!(target: "secondary", "migrated catalog member zone {} from catalog {from} to {catalog} with state reset after member identity changed from {} to {}", m.zone, source.id, m.id);
            self.replace(state, i, m, catalog);
        }
        true
    }

    /// Member `i` made `m` of `catalog`, transferred anew.
    fn replace(&self, state: &mut State, i: usize, m: &Listed, catalog: &Name) {
        state.members.remove(i).kept.stop();
        state.members.push(self.member(m, catalog));
    }

    /// Whether a member zone named `zone` is taken.
    fn allowed(&self, zone: &Name) -> bool {
        match &self.cfg.catalog {
            Some(bound) if !bound.is_empty() => bound.iter().any(|b| b.zone_of(zone)),
            _ => true,
        }
    }

    /// A new member `m` of `catalog`, being transferred.
    fn member(&self, m: &Listed, catalog: &Name) -> Member {
        let kept = Kept::new(m.zone.clone(), &self.cfg);
        kept.spawn(|_| Ok(()), &self.me);
        Member {
            kept,
            catalog: catalog.clone(),
            id: m.id.clone(),
        }
    }
}

impl Notified for Catalog {
    fn notify(&self, zone: &Name, from: IpAddr) -> Option<bool> {
        let state = self.lock()?;
        let members = state.members.iter().map(|m| &m.kept);
        let kept = state.catalogs.iter().chain(members).find(|k| &k.origin == zone)?;
        Some(heed(&kept.primaries, zone, from))
    }
}

#[cfg(test)]
mod tests;
