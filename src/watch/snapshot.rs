//! The `snapshot FILE` source: a `kubectl get namespaces,services,
//! endpointslices,pods -A -o yaml` (or `-o json`) dump, served as the
//! cluster and reloaded when the file changes.
//!
//! A file is parsed whole once to check it, then again converting and
//! applying each object as it is parsed ([`load`]), as one relist of every
//! kind (so a reload costs work in proportion to what changed), and
//! published at once. A file that does not parse changes nothing and logs
//! `FILE:LINE:COL: message`; single malformed objects are skipped with a
//! log line naming them. No converted copy of the whole cluster is held:
//! one cost 27 MB at its peak for 10,000 imported Services × 3 clusters ×
//! 5 endpoints, most of it kept by the allocator afterwards
//! (`loadtest/bench/mcs-memory.sh`).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::de::DeserializeSeed;
use serde_json::Value;

use super::convert::{self, Invalid};
use super::dump::Document;
use super::lean;
use crate::kubernetes::KubernetesConfig;
use crate::metrics::Metrics;
use crate::store::{Kind, Record, Store, Writer};

/// Why a dump could not be loaded at all.
#[derive(Debug, thiserror::Error)]
pub enum DumpError {
    #[error("{path}: cannot read: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("{path}:{line}:{col}: {message}")]
    Syntax {
        path: String,
        line: usize,
        col: usize,
        message: String,
    },
}

/// What one read of a dump produced.
#[derive(Debug, Default)]
pub struct Loaded {
    /// The served objects, converted ([`read_str`]; [`load`] applies them
    /// instead).
    pub records: Vec<Record>,
    pub objects: usize,
    pub invalid: Vec<Invalid>,
    /// Objects of kinds DNS does not use (ConfigMaps, Endpoints, ...).
    pub ignored: usize,
}

fn read_text(path: &Path) -> Result<String, DumpError> {
    std::fs::read_to_string(path).map_err(|source| DumpError::Read {
        path: path.display().to_string(),
        source,
    })
}

/// Reads and converts a dump file.
pub fn read_file(path: &Path, cfg: &KubernetesConfig) -> Result<Loaded, DumpError> {
    read_str(&path.display().to_string(), &read_text(path)?, cfg)
}

/// Reads a dump file and applies it to `writer` as one relist of every
/// kind: what it lists is upserted, what it no longer lists is deleted at
/// the end. The file is parsed once to check it (a file that does not
/// parse changes nothing), then again, each object applied as soon as it
/// is converted.
pub fn load(path: &Path, cfg: &KubernetesConfig, writer: &mut Writer) -> Result<Loaded, DumpError> {
    let (name, text) = (path.display().to_string(), read_text(path)?);
    parse(&name, &text, |_| {})?;
    for kind in Kind::ALL {
        writer.relist_start(kind);
    }
    let mut loaded = Loaded::default();
    parse(&name, &text, |item| {
        if let Some(record) = convert_object(cfg, item, &mut loaded) {
            writer.apply(record);
        }
    })?; // parsed once already: no error here, and no relist ends half done
    for kind in Kind::ALL {
        writer.relist_done(kind);
    }
    Ok(loaded)
}

/// Parses dump text (JSON or YAML, one document or several, a `List` or
/// single objects) and converts every object as it is parsed.
pub fn read_str(path: &str, text: &str, cfg: &KubernetesConfig) -> Result<Loaded, DumpError> {
    let mut loaded = Loaded::default();
    let mut records = Vec::new();
    parse(path, text, |item| {
        records.extend(convert_object(cfg, item, &mut loaded))
    })?;
    loaded.records = records;
    Ok(loaded)
}

/// Hands every object of dump text to `each`, in order.
fn parse(path: &str, text: &str, mut each: impl FnMut(Value)) -> Result<(), DumpError> {
    let syntax = |line: usize, col: usize, message: String| DumpError::Syntax {
        path: path.to_string(),
        line,
        col,
        message,
    };
    if text.trim_start().starts_with('{') {
        let mut de = serde_json::Deserializer::from_str(text);
        let parsed = Document(&mut each).deserialize(&mut de).and_then(|()| de.end());
        parsed.map_err(|e| syntax(e.line(), e.column(), e.to_string()))?;
    } else {
        for doc in serde_yaml_ng::Deserializer::from_str(text) {
            Document(&mut each).deserialize(doc).map_err(|e| {
                let (line, col) = e.location().map_or((0, 0), |l| (l.line(), l.column()));
                syntax(line, col, e.to_string())
            })?;
        }
    }
    Ok(())
}

/// Applies a whole dump as one relist of every kind: what it lists is
/// upserted, what it no longer lists is deleted at the end.
pub fn apply(writer: &mut Writer, records: Vec<Record>) {
    for kind in Kind::ALL {
        writer.relist_start(kind);
    }
    for record in records {
        writer.apply(record);
    }
    for kind in Kind::ALL {
        writer.relist_done(kind);
    }
}

/// Converts one object of a dump, counting it in `loaded`: its record, if
/// DNS serves it.
fn convert_object(cfg: &KubernetesConfig, item: Value, loaded: &mut Loaded) -> Option<Record> {
    let kind = item.get("kind").and_then(Value::as_str).unwrap_or_default().to_string();
    loaded.objects += 1;
    let result = match kind.as_str() {
        "Namespace" => from_value::<lean::Namespace>(&item, "Namespace").and_then(|o| convert::namespace(cfg, &o)),
        "Service" => from_value::<lean::Service>(&item, "Service").and_then(|o| convert::service(cfg, &o)),
        "EndpointSlice" => {
            from_value::<lean::EndpointSlice>(&item, "EndpointSlice").and_then(|o| convert::endpoint_slice(cfg, &o))
        }
        "Pod" => from_value::<lean::Pod>(&item, "Pod").and_then(|o| convert::pod(cfg, &o)),
        "ServiceImport" => {
            from_value::<lean::ServiceImport>(&item, "ServiceImport").and_then(|o| convert::service_import(cfg, &o))
        }
        _ => {
            loaded.ignored += 1;
            Ok(None)
        }
    };
    match result {
        Ok(record) => record,
        Err(e) => {
            loaded.invalid.push(e);
            None
        }
    }
}

fn from_value<'v, T: serde::Deserialize<'v>>(item: &'v Value, kind: &'static str) -> Result<T, Invalid> {
    T::deserialize(item).map_err(|e| {
        let meta = item.get("metadata");
        let field = |f: &str| {
            meta.and_then(|m| m.get(f))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        Invalid {
            kind,
            namespace: field("namespace"),
            name: field("name"),
            reason: e.to_string(),
        }
    })
}

/// Loads the dump into `store` now and again whenever the file changes
/// (checked every `interval`), until the process exits.
pub async fn run(
    path: PathBuf,
    cfg: Arc<KubernetesConfig>,
    store: Arc<Store>,
    metrics: Arc<Metrics>,
    interval: Duration,
) {
    let mut last: Option<(SystemTime, u64)> = None;
    let mut ticker = tokio::time::interval(interval);
    let mut writer = Some(Writer::new(&Kind::ALL).selecting_namespaces(cfg.namespace_labels.is_some()));
    loop {
        ticker.tick().await;
        let stamp = std::fs::metadata(&path)
            .ok()
            .map(|m| (m.modified().unwrap_or(UNIX_EPOCH), m.len()));
        if stamp.is_none() || stamp == last {
            if stamp.is_none() && last.is_some() {
                tracing::warn!(target: "kubernetes", "snapshot {}: file is gone; serving the last loaded state", path.display());
                last = None;
            }
            continue;
        }
        last = stamp;
        let (p, c, s, m) = (path.clone(), cfg.clone(), store.clone(), metrics.clone());
        let Some(mut w) = writer.take() else { return };
        let loaded = tokio::task::spawn_blocking(move || {
            let result = load(&p, &c, &mut w).inspect(|_| {
                w.publish(&s, unix_now());
                super::feed::record(&mut w, &m);
            });
            (w, result)
        });
        let Ok((w, result)) = loaded.await else {
            tracing::error!(target: "kubernetes", "snapshot {}: loader failed; stopping reloads", path.display());
            return;
        };
        writer = Some(w);
        match result {
            Ok(loaded) => {
                for bad in &loaded.invalid {
                    let kind = crate::metrics::KINDS.iter().position(|k| *k == bad.kind).unwrap_or(0);
                    metrics.watch.invalid[kind].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    tracing::warn!(target: "kubernetes", "snapshot {}: skipped malformed object {bad}", path.display());
                }
                let (objects, services, invalid) = (loaded.objects, store.load().service_count(), loaded.invalid.len());
                tracing::info!(target: "kubernetes", "snapshot {}: loaded {objects} objects, {services} services, {invalid} skipped as malformed", path.display());
                super::trim::after("loading the snapshot");
            }
            Err(e) => tracing::error!(target: "kubernetes", "{e}; keeping the previously loaded state"),
        }
    }
}

/// Seconds since the Unix epoch, as an SOA serial.
pub fn unix_now() -> u32 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(1, |d| d.as_secs() as u32)
}
