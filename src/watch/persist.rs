//! `persist FILE [MAX_AGE]`: the synced state on disk, so that a replica
//! starting while the API server is unreachable answers at once.
//!
//! Saving: after a change the writer schedules a save [`COALESCE`] later
//! (later changes ride along), exports its state in O(pods) and a blocking
//! thread streams it to `FILE.tmp`, syncs it and renames it over `FILE`:
//! a reader sees the old file or the new one, never half of one.
//!
//! Restoring: at start a file that is whole (checksum), of this format
//! version, built for the same `kubernetes` block (zones, source, filters)
//! and younger than `MAX_AGE` is applied to the writer and published as
//! synced but unconfirmed; the first full list of each kind then
//! reconciles it like any relist. Anything else is logged and ignored.
//!
//! The format (integers little-endian, `varint` LEB128, `str` a varint
//! length and UTF-8 bytes):
//!
//! ```text
//! "clusterdns-state" u32 version  u64 written (unix s)  str fingerprint
//! record*   0 Namespace  str name      (under `namespace_labels`, only those that match)
//!           1 Service    str ns, str name, u8 selector, kind, ports
//!                        kind: 0 ClusterIP varint n ip*n | 1 Headless | 2 ExternalName str target
//!           2 Slice      str ns, str name, str service, ports, varint n (ip, u8 has-host [str host])*n
//!           3 Pod        str ns, str name, u8 running, varint n ip*n
//!           ports: varint n (str name, u8 proto, u16 port)*n    ip: u8 4|6, 4 or 16 bytes
//! u64 FNV-1a of everything before it
//! ```

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::codec::{fnv, Dec, Enc};
use crate::kubernetes::{KubernetesConfig, Persist, Source};
use crate::metrics::Metrics;
use crate::store::{Export, Store, Writer};

const MAGIC: &[u8; 16] = b"clusterdns-state";
const VERSION: u32 = 1;
/// A change is saved this long after it (later changes ride along).
pub const COALESCE: Duration = Duration::from_secs(5);

/// Why a state file is not served.
#[derive(Debug, thiserror::Error)]
pub enum PersistError {
    #[error("cannot read it: {0}")]
    Io(#[from] std::io::Error),
    #[error("not a clusterdns state file")]
    Foreign,
    #[error("format version {0}, this build reads version {VERSION}")]
    Version(u32),
    #[error("truncated or corrupt (checksum mismatch)")]
    Corrupt,
    #[error("built for another kubernetes block ({0})")]
    OtherBlock(String),
    #[error("written {age} s ago, older than its max age of {max} s")]
    TooOld { age: u64, max: u64 },
    #[error("malformed record at byte {0}")]
    Malformed(usize),
}

/// The `kubernetes` block a state was built for: zones, source, and the
/// options that decide which objects and fields are kept.
pub fn fingerprint(cfg: &KubernetesConfig) -> String {
    let zones: Vec<String> = cfg.zones.iter().map(ToString::to_string).collect();
    let source = match &cfg.source {
        Source::Snapshot(p) => format!("snapshot {}", p.display()),
        Source::Api {
            endpoint: Some(url), ..
        } => format!("endpoint {url}"),
        Source::Api {
            kubeconfig: Some((path, context)),
            ..
        } => format!("kubeconfig {} {}", path.display(), context.as_deref().unwrap_or("-")),
        Source::Api { .. } => "in-cluster".to_string(),
    };
    format!(
        "zones {}; {source}; namespaces {}; labels {}; {}pods {:?}; endpoint_pod_names {}; noendpoints {}; zonal {}",
        zones.join(" "),
        cfg.namespaces.join(" "),
        cfg.labels_text.as_deref().unwrap_or("-"),
        // Only the Namespaces that matched are saved: a state saved under
        // another selector (or none) must not be served.
        cfg.namespace_labels
            .as_ref()
            .map_or(String::new(), |s| format!("namespace_labels {s}; ")),
        cfg.pods,
        cfg.endpoint_pod_names,
        cfg.noendpoints,
        cfg.client.zonal
    )
}

fn unix_secs(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// Writes `export` to `path` atomically (temporary file, sync, rename).
pub fn save(path: &Path, fingerprint: &str, export: &Export, written: SystemTime) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let file = std::fs::File::create(&tmp)?;
    let mut enc = Enc::new(std::io::BufWriter::with_capacity(1 << 16, file));
    enc.bytes(MAGIC)?;
    enc.bytes(&VERSION.to_le_bytes())?;
    enc.bytes(&unix_secs(written).to_le_bytes())?;
    enc.str(fingerprint)?;
    for record in export.records() {
        enc.record(&record)?;
    }
    let file = enc.finish()?;
    file.sync_all()?;
    drop(file);
    std::fs::rename(&tmp, path)
}

/// Reads and checks a state file, then applies its records to `writer`.
/// Returns when it was written and how many records it held.
pub fn load(
    path: &Path,
    fingerprint: &str,
    max_age: Duration,
    writer: &mut Writer,
) -> Result<(SystemTime, usize), PersistError> {
    let data = std::fs::read(path)?;
    let head = MAGIC.len() + 4 + 8;
    if data.len() < MAGIC.len() || &data[..MAGIC.len()] != MAGIC {
        return Err(PersistError::Foreign);
    }
    if data.len() < head + 8 {
        return Err(PersistError::Corrupt);
    }
    let version = u32::from_le_bytes(data[16..20].try_into().map_err(|_| PersistError::Corrupt)?);
    if version != VERSION {
        return Err(PersistError::Version(version));
    }
    let (body, sum) = data.split_at(data.len() - 8);
    if fnv(body) != u64::from_le_bytes(sum.try_into().map_err(|_| PersistError::Corrupt)?) {
        return Err(PersistError::Corrupt);
    }
    let written = u64::from_le_bytes(data[20..28].try_into().map_err(|_| PersistError::Corrupt)?);
    let mut dec = Dec::new(body, head);
    let built_for = dec.str().ok_or(PersistError::Malformed(head))?;
    if built_for != fingerprint {
        return Err(PersistError::OtherBlock(built_for.to_string()));
    }
    let age = unix_secs(SystemTime::now()).saturating_sub(written);
    if age > max_age.as_secs() {
        return Err(PersistError::TooOld {
            age,
            max: max_age.as_secs(),
        });
    }
    let mut count = 0;
    while !dec.done() {
        let at = dec.pos();
        let record = dec.record().ok_or(PersistError::Malformed(at))?;
        writer.apply(record);
        count += 1;
    }
    Ok((UNIX_EPOCH + Duration::from_secs(written), count))
}

/// Serves the state in `p.path` if it fits (see the module doc) and
/// returns the saver of this directive's state.
pub async fn restore(
    p: &Persist,
    cfg: &KubernetesConfig,
    writer: &mut Writer,
    store: &Store,
    metrics: &Arc<Metrics>,
) -> Saver {
    let fingerprint = fingerprint(cfg);
    let (path, max_age, fp) = (p.path.clone(), p.max_age, fingerprint.clone());
    let mut w = std::mem::replace(writer, super::feed::writer(cfg));
    let started = Instant::now();
    let loaded = tokio::task::spawn_blocking(move || {
        let result = load(&path, &fp, max_age, &mut w);
        (w, result)
    })
    .await;
    let shown = p.path.display();
    match loaded {
        Ok((mut w, Ok((written, count)))) => {
            let written_ms = written.duration_since(UNIX_EPOCH).map_or(1, |d| d.as_millis() as u64);
            metrics.watch.unconfirmed_written_ms.store(written_ms.max(1), Relaxed);
            w.restored();
            w.publish(store, super::snapshot::unix_now());
            super::feed::record(&mut w, metrics);
            let age = SystemTime::now().duration_since(written).unwrap_or_default().as_secs();
            let (services, took) = (store.load().service_count(), started.elapsed().as_secs_f64());
            tracing::warn!(target: "kubernetes", "persist {shown}: serving the state saved {age} s ago ({count} objects, {services} services, loaded in {took:.2} s), not yet confirmed by the API");
            *writer = w;
        }
        Ok((_, Err(PersistError::Io(e)))) if e.kind() == std::io::ErrorKind::NotFound => {
            tracing::info!(target: "kubernetes", "persist {shown}: no saved state yet; waiting for the API");
        }
        Ok((_, Err(e))) => {
            tracing::warn!(target: "kubernetes", "persist {shown}: ignored: {e}; waiting for the API");
        }
        Err(e) => tracing::error!(target: "kubernetes", "persist {shown}: loader failed: {e}"),
    }
    Saver {
        path: p.path.clone(),
        fingerprint,
        due: None,
        busy: Arc::new(AtomicBool::new(false)),
        failures: metrics.clone(),
    }
}

/// Schedules and runs the saves of one directive's state.
pub struct Saver {
    path: PathBuf,
    fingerprint: String,
    due: Option<Instant>,
    busy: Arc<AtomicBool>,
    failures: Arc<Metrics>,
}

impl Saver {
    /// The state changed: save it within [`COALESCE`].
    pub fn changed(&mut self) {
        self.due.get_or_insert_with(|| Instant::now() + COALESCE);
    }

    /// When the next save is due, if one is.
    pub fn due(&self) -> Option<Instant> {
        self.due
    }

    /// Saves `writer`'s state on a blocking thread (one save at a time;
    /// while one runs, the next is put off by a second).
    pub fn save(&mut self, writer: &Writer) {
        if self.busy.swap(true, Relaxed) {
            self.due = Some(Instant::now() + Duration::from_secs(1));
            return;
        }
        self.due = None;
        let export = writer.export();
        let (path, fp, busy, metrics) = (
            self.path.clone(),
            self.fingerprint.clone(),
            self.busy.clone(),
            self.failures.clone(),
        );
        tokio::task::spawn_blocking(move || {
            let started = Instant::now();
            match save(&path, &fp, &export, SystemTime::now()) {
                Ok(()) => {
                    let took = started.elapsed().as_secs_f64();
                    tracing::debug!(target: "kubernetes", "persist {}: saved in {took:.2} s", path.display());
                }
                Err(e) => {
                    metrics.watch.persist_failures.fetch_add(1, Relaxed);
                    tracing::error!(target: "kubernetes", "persist {}: cannot save the state: {e}", path.display());
                }
            }
            drop(export);
            busy.store(false, Relaxed);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Kind, PortIn, Proto, Record, ServiceKind};

    fn writer() -> Writer {
        let mut w = Writer::new(&[Kind::Namespace, Kind::Service, Kind::EndpointSlice]);
        w.apply(Record::Namespace { name: "db".into() });
        w.apply(Record::Service {
            namespace: "db".into(),
            name: "pg".into(),
            kind: ServiceKind::ClusterIp(vec!["10.0.0.1".parse().expect("ip")].into()),
            selector: true,
            ports: vec![PortIn {
                name: "pg".into(),
                proto: Proto::Tcp,
                port: 5432,
            }],
            external: None,
        });
        w.apply(Record::Slice {
            namespace: "db".into(),
            name: "pg-1".into(),
            service: "pg".into(),
            ports: vec![],
            endpoints: vec![("10.1.0.1".parse().expect("ip"), Some("pg-0".into()))],
            trigger: None,
            zones: vec![],
        });
        w
    }

    #[test]
    fn saved_state_loads_back_and_is_checked() {
        let dir = std::env::temp_dir().join(format!("clusterdns-persist-unit-{}", std::process::id()));
        let path = dir.join("sub").join("state");
        let original = writer();
        save(&path, "block A", &original.export(), SystemTime::now()).expect("save");
        let mut loaded = Writer::new(&[Kind::Namespace, Kind::Service, Kind::EndpointSlice]);
        let (_, count) = load(&path, "block A", Duration::from_secs(60), &mut loaded).expect("load");
        assert_eq!(count, 3);
        let mut a: Vec<Record> = original.export().records().collect();
        let mut b: Vec<Record> = loaded.export().records().collect();
        a.sort_by_key(|r| format!("{r:?}"));
        b.sort_by_key(|r| format!("{r:?}"));
        assert_eq!(a, b);

        let mut fresh = Writer::new(&[Kind::Service]);
        let other = load(&path, "block B", Duration::from_secs(60), &mut fresh);
        assert!(matches!(other, Err(PersistError::OtherBlock(b)) if b == "block A"));
        let old = SystemTime::now() - Duration::from_secs(7200);
        save(&path, "block A", &original.export(), old).expect("save");
        let too_old = load(&path, "block A", Duration::from_secs(3600), &mut fresh);
        assert!(matches!(too_old, Err(PersistError::TooOld { .. })), "{too_old:?}");
        let mut bytes = std::fs::read(&path).expect("read");
        let last = bytes.len() - 12;
        bytes[last] ^= 0x40;
        std::fs::write(&path, &bytes).expect("write");
        let corrupt = load(&path, "block A", Duration::from_secs(1 << 30), &mut fresh);
        assert!(matches!(corrupt, Err(PersistError::Corrupt)), "{corrupt:?}");
        std::fs::write(&path, &bytes[..bytes.len() / 2]).expect("write");
        let cut = load(&path, "block A", Duration::from_secs(1 << 30), &mut fresh);
        assert!(matches!(cut, Err(PersistError::Corrupt)), "{cut:?}");
        assert!(!path.with_extension("tmp").exists());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
