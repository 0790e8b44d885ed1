//! The `snapshot FILE` source: a `kubectl get namespaces,services,
//! endpointslices,pods -A -o yaml` (or `-o json`) dump, served as the
//! cluster and reloaded when the file changes.
//!
//! A reload builds a complete new snapshot beside the served one and swaps
//! it in whole. A file that does not parse keeps the previous snapshot and
//! logs `FILE:LINE:COL: message`; single malformed objects are skipped with
//! a log line naming them.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::de::DeserializeSeed;
use serde_json::Value;

use super::convert::{self, Invalid};
use super::dump::Document;
use crate::config::KubernetesConfig;
use crate::store::{Builder, Snapshot, Store};

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

/// What one load produced besides the snapshot.
#[derive(Debug, Default)]
pub struct LoadReport {
    pub objects: usize,
    pub invalid: Vec<Invalid>,
    /// Objects of kinds DNS does not use (ConfigMaps, Endpoints, ...).
    pub ignored: usize,
}

/// Reads and converts a dump file.
pub fn load_file(path: &Path, cfg: &KubernetesConfig) -> Result<(Snapshot, LoadReport), DumpError> {
    let text = std::fs::read_to_string(path).map_err(|source| DumpError::Read {
        path: path.display().to_string(),
        source,
    })?;
    load_str(&path.display().to_string(), &text, cfg)
}

/// Parses dump text (JSON or YAML, one document or several, a `List` or
/// single objects) and converts every object.
pub fn load_str(path: &str, text: &str, cfg: &KubernetesConfig) -> Result<(Snapshot, LoadReport), DumpError> {
    let mut builder = Builder::new();
    let mut report = LoadReport::default();
    let mut each = |item: Value| add_object(&mut builder, cfg, item, &mut report);
    let syntax = |line: usize, col: usize, message: String| DumpError::Syntax {
        path: path.to_string(),
        line,
        col,
        message,
    };
    if text.trim_start().starts_with('{') {
        let mut de = serde_json::Deserializer::from_str(text);
        Document(&mut each)
            .deserialize(&mut de)
            .and_then(|()| de.end())
            .map_err(|e| syntax(e.line(), e.column(), e.to_string()))?;
    } else {
        for doc in serde_yaml_ng::Deserializer::from_str(text) {
            Document(&mut each).deserialize(doc).map_err(|e| {
                let (line, col) = e.location().map_or((0, 0), |l| (l.line(), l.column()));
                syntax(line, col, e.to_string())
            })?;
        }
    }
    let serial = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(1, |d| d.as_secs() as u32);
    Ok((builder.build(serial), report))
}

fn add_object(b: &mut Builder, cfg: &KubernetesConfig, item: Value, report: &mut LoadReport) {
    let kind = item.get("kind").and_then(Value::as_str).unwrap_or_default().to_string();
    report.objects += 1;
    let result = match kind.as_str() {
        "Namespace" => from_value(&item, "Namespace").and_then(|o| convert::namespace(b, cfg, &o)),
        "Service" => from_value(&item, "Service").and_then(|o| convert::service(b, cfg, &o)),
        "EndpointSlice" => from_value(&item, "EndpointSlice").and_then(|o| convert::endpoint_slice(b, cfg, &o)),
        "Pod" => from_value(&item, "Pod").and_then(|o| convert::pod(b, cfg, &o)),
        _ => {
            report.ignored += 1;
            Ok(())
        }
    };
    if let Err(e) = result {
        report.invalid.push(e);
    }
}

fn from_value<T: serde::de::DeserializeOwned>(item: &Value, kind: &'static str) -> Result<T, Invalid> {
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
pub async fn run(path: PathBuf, cfg: Arc<KubernetesConfig>, store: Arc<Store>, interval: Duration) {
    let mut last: Option<(SystemTime, u64)> = None;
    let mut ticker = tokio::time::interval(interval);
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
        let (p, c) = (path.clone(), cfg.clone());
        match tokio::task::spawn_blocking(move || load_file(&p, &c)).await {
            Ok(Ok((snapshot, report))) => {
                for bad in &report.invalid {
                    tracing::warn!(target: "kubernetes", "snapshot {}: skipped malformed object {bad}", path.display());
                }
                tracing::info!(
                    target: "kubernetes",
                    "snapshot {}: loaded {} objects, {} services, {} skipped as malformed",
                    path.display(), report.objects, snapshot.service_count(), report.invalid.len()
                );
                store.publish(snapshot);
            }
            Ok(Err(e)) => {
                tracing::error!(target: "kubernetes", "{e}; keeping the previously loaded state")
            }
            Err(e) => {
                tracing::error!(target: "kubernetes", "snapshot {}: loader failed: {e}", path.display())
            }
        }
    }
}
