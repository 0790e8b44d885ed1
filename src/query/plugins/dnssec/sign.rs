//! RRSIGs made on the fly (RFC 4034 3.1.8.1): the RRSIG's fields without
//! the signature, then every record of the set in canonical form (owner
//! lowercased, the original TTL, RDATA in canonical form and sorted), signed
//! by each key that signs the set. Signatures are kept in a cache of
//! `cache_capacity` sets, keyed by a hash of the set, its TTL and its signer,
//! and made again once less than two of their eight days are left, as
//! CoreDNS's dnssec plugin does.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use hickory_proto::rr::{Name, Record, RecordType};
use hickory_proto::serialize::binary::{BinEncodable, BinEncoder};

use super::key::Key;
use crate::corefile::args::lower_wire;
use crate::zonefile::dnssec::unknown;

/// The original TTL every RRSIG carries: the plugin never sees a set's own.
pub const ORIG_TTL: u32 = 3600;
const HOUR: u32 = 3600;
const DAY: u32 = 24 * HOUR;

/// A signature's validity: from three hours ago, for eight days.
#[derive(Clone, Copy, Debug)]
pub struct Window {
    pub inception: u32,
    pub expiration: u32,
    /// Now: a cached signature with less than two days left is made again.
    pub now: u32,
}

/// The Unix time now, as RRSIG times are (serial number arithmetic:
/// they wrap past 2106).
pub fn unix_now() -> u32 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()) as u32
}

impl Window {
    /// From three hours before `now` for `days` days.
    pub fn at(now: u32, days: u32) -> Window {
        Window {
            inception: now.wrapping_sub(3 * HOUR),
            expiration: now.wrapping_add(days * DAY),
            now,
        }
    }

    /// `dnssec`'s signatures made now: eight days.
    pub fn now() -> Window {
        Window::at(unix_now(), 8)
    }
}

/// The keys of a block's `dnssec` and the signatures made with them.
#[derive(Debug)]
pub struct Signer {
    pub keys: Arc<Vec<Key>>,
    /// Both KSKs and ZSKs among the keys: KSKs sign the DNSKEY set only.
    pub split: bool,
    cache: Mutex<HashMap<u64, Arc<[Record]>>>,
    capacity: usize,
    pub stats: Arc<Stats>,
}

/// The cache's counts for `/metrics`, under the block's `server` label.
#[derive(Debug, Default)]
pub struct Stats {
    pub server: String,
    pub entries: AtomicU64,
    pub hits: AtomicU64,
    pub misses: AtomicU64,
}

impl Signer {
    pub fn new(keys: Arc<Vec<Key>>, capacity: usize, server: &str) -> Signer {
        let split = keys.iter().any(Key::is_ksk) && keys.iter().any(Key::is_zsk);
        Signer {
            keys,
            split,
            cache: Mutex::default(),
            capacity,
            stats: Arc::new(Stats {
                server: server.to_string(),
                ..Stats::default()
            }),
        }
    }

    /// The RRSIGs over `set` (one owner and type) by `zone`'s keys, each
    /// with `ttl`; none when signing fails.
    pub fn sign(&self, set: &[Record], zone: &Name, ttl: u32, at: Window) -> Vec<Record> {
        let Some(first) = set.first() else { return Vec::new() };
        let data = canonical(set);
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (&data, u16::from(first.record_type()), ttl, zone.to_lowercase()).hash(&mut h);
        first.name.to_lowercase().hash(&mut h);
        let key = h.finish();
        if let Some(sigs) = self.cached(key, at) {
            self.stats.hits.fetch_add(1, Ordering::Relaxed);
            return sigs.to_vec();
        }
        self.stats.misses.fetch_add(1, Ordering::Relaxed);
        let sigs = sign_set(self.signing(first.record_type()), set, &data, zone, (ORIG_TTL, ttl), at);
        if !sigs.is_empty() {
            self.keep(key, Arc::from(&sigs[..]));
        }
        sigs
    }

    /// The keys that sign a set of `kind`.
    fn signing(&self, kind: RecordType) -> impl Iterator<Item = &Key> {
        let dnskey = kind == RecordType::DNSKEY;
        self.keys
            .iter()
            .filter(move |k| !self.split || if dnskey { k.is_ksk() } else { k.is_zsk() })
    }

    /// A cached signature with more than two days left.
    fn cached(&self, key: u64, at: Window) -> Option<Arc<[Record]>> {
        let cache = self.cache.lock().ok()?;
        let sigs = cache.get(&key)?;
        let fresh = sigs
            .iter()
            .all(|s| expiration(s).is_some_and(|e| e.wrapping_sub(at.now) > 2 * DAY));
        fresh.then(|| sigs.clone())
    }

    fn keep(&self, key: u64, sigs: Arc<[Record]>) {
        let Ok(mut cache) = self.cache.lock() else { return };
        if cache.len() >= self.capacity.max(1) {
            // full: one entry goes (CoreDNS's cache drops one at random)
            if let Some(old) = cache.keys().next().copied() {
                cache.remove(&old);
            }
        }
        cache.insert(key, sigs);
        self.stats.entries.store(cache.len() as u64, Ordering::Relaxed);
    }
}

/// The RRSIGs by each of `keys` over `set` (one owner and type) whose
/// canonical RDATAs are `data` ([`canonical`]), uncached; `ttls` are the
/// original TTL signed and the RRSIGs' own.
pub fn sign_set<'k>(
    keys: impl Iterator<Item = &'k Key>,
    set: &[Record],
    data: &[Vec<u8>],
    zone: &Name,
    ttls: (u32, u32),
    at: Window,
) -> Vec<Record> {
    let Some(first) = set.first() else { return Vec::new() };
    keys.filter_map(|k| rrsig(k, first, data, zone, ttls, at)).collect()
}

/// The canonical RDATA of each record of `set`, sorted, duplicates dropped.
pub fn canonical(set: &[Record]) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = set
        .iter()
        .map(|r| {
            let mut buf = Vec::new();
            let mut enc = BinEncoder::new(&mut buf);
            enc.set_canonical_form(true);
            // a record that does not encode signs as empty data (and fails to validate)
            let _ = r.data.emit(&mut enc);
            buf
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The RRSIG by `key` over the set of `first` whose canonical RDATAs are `data`.
fn rrsig(
    key: &Key,
    first: &Record,
    data: &[Vec<u8>],
    zone: &Name,
    (orig, ttl): (u32, u32),
    at: Window,
) -> Option<Record> {
    let kind = u16::from(first.record_type());
    let mut rdata = kind.to_be_bytes().to_vec();
    rdata.push(key.algorithm());
    rdata.push(first.name.num_labels()); // a wildcard's `*` not counted
    rdata.extend(orig.to_be_bytes());
    rdata.extend(at.expiration.to_be_bytes());
    rdata.extend(at.inception.to_be_bytes());
    rdata.extend(key.tag.to_be_bytes());
    rdata.extend(lower_wire(zone));
    let mut signed = rdata.clone();
    let owner = lower_wire(&first.name);
    for r in data {
        signed.extend(&*owner);
        signed.extend(kind.to_be_bytes());
        signed.extend(u16::from(first.dns_class).to_be_bytes());
        signed.extend(orig.to_be_bytes());
        signed.extend((r.len() as u16).to_be_bytes());
        signed.extend(r);
    }
    match key.sign(&signed) {
        Ok(sig) => rdata.extend(sig),
        Err(e) => {
            tracing::warn!(target: "dnssec", "{} {}: {e}", first.name, first.record_type());
            return None;
        }
    }
    Some(unknown(first.name.clone(), ttl, RecordType::RRSIG, rdata))
}

/// An RRSIG record's expiration.
fn expiration(r: &Record) -> Option<u32> {
    match &r.data {
        hickory_proto::rr::RData::Unknown { rdata, .. } => {
            let b = rdata.anything.get(8..12)?;
            Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
        }
        _ => None,
    }
}
