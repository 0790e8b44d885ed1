//! What `migrate` was given: Corefile text, a CoreDNS ConfigMap (its
//! `data.Corefile`), or a kube-dns ConfigMap (`data` with `stubDomains`,
//! `upstreamNameservers`, `federations`), in YAML or JSON as `kubectl get
//! configmap -o yaml|json` prints it. A file is a ConfigMap when it is a
//! JSON object or its first line is a YAML key (`apiVersion:`, `data:`,
//! `stubDomains:` ...); a Corefile's first line never is.

use std::sync::Arc;

use crate::corefile::lexer::Pos;
use crate::corefile::problem::ConfigError;

/// The kube-dns ConfigMap keys.
pub const KUBE_DNS_KEYS: [&str; 3] = ["stubDomains", "upstreamNameservers", "federations"];

/// The input, sorted out.
#[derive(Debug)]
pub enum Source {
    /// Corefile text; its positions move by `shift` (lines, columns) to
    /// land in the file (a Corefile inside a ConfigMap's YAML).
    Corefile {
        text: String,
        shift: (u32, u32),
        name: Arc<str>,
    },
    /// A kube-dns ConfigMap's `data`, key by key.
    KubeDns(Vec<Entry>),
}

/// One key of a kube-dns ConfigMap's `data`.
#[derive(Debug, Clone)]
pub struct Entry {
    pub key: String,
    pub value: serde_json::Value,
    /// Where the key is written.
    pub pos: Pos,
    /// Where the value's text starts: `(line, col)` offsets for its own
    /// positions (a JSON document inside a YAML block scalar).
    pub shift: (u32, u32),
}

/// Sorts `text` (from `file`) out.
pub fn read(file: &Arc<str>, text: &str) -> Result<Source, ConfigError> {
    let value: serde_json::Value = if text.trim_start().starts_with('{') {
        serde_json::from_str(text)
            .map_err(|e| ConfigError::new(&at(file, e.line() as u32, e.column() as u32), format!("not JSON: {e}")))?
    } else if looks_like_yaml(text) {
        serde_yaml_ng::from_str(text).map_err(|e| {
            let (l, c) = e.location().map_or((1, 1), |l| (l.line() as u32, l.column() as u32));
            ConfigError::new(&at(file, l, c), format!("not YAML: {e}"))
        })?
    } else {
        return Ok(Source::Corefile {
            text: text.to_string(),
            shift: (0, 0),
            name: file.clone(),
        });
    };
    configmap(file, text, &value)
}

fn at(file: &Arc<str>, line: u32, col: u32) -> Pos {
    Pos {
        file: file.clone(),
        line: line.max(1),
        col: col.max(1),
    }
}

fn looks_like_yaml(text: &str) -> bool {
    let first = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'));
    let Some(first) = first else { return false };
    if first == "---" {
        return true;
    }
    let key = first
        .split_once(':')
        .map(|(k, rest)| (k, rest.is_empty() || rest.starts_with(' ')));
    matches!(key, Some((k, true)) if !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '"'))
}

fn configmap(file: &Arc<str>, text: &str, value: &serde_json::Value) -> Result<Source, ConfigError> {
    let top = at(file, 1, 1);
    let Some(obj) = value.as_object() else {
        return Err(ConfigError::new(&top, "expected a ConfigMap (an object with `data`)"));
    };
    if let Some(kind) = obj.get("kind").and_then(|k| k.as_str()).filter(|k| *k != "ConfigMap") {
        return Err(ConfigError::new(&top, format!("a {kind}, not a ConfigMap")));
    }
    let data = match obj.get("data") {
        Some(d) => d
            .as_object()
            .ok_or_else(|| ConfigError::new(&key_pos(file, text, "data"), "`data` is not a map"))?,
        None if obj.keys().any(|k| KUBE_DNS_KEYS.contains(&k.as_str())) => obj,
        None if obj.contains_key("kind") || obj.contains_key("apiVersion") => return Ok(Source::KubeDns(Vec::new())),
        None => {
            let msg =
                "neither a Corefile nor a ConfigMap (no `data`, `stubDomains`, `upstreamNameservers` or `federations`)";
            return Err(ConfigError::new(&top, msg));
        }
    };
    if let Some(corefile) = data.get("Corefile") {
        let Some(body) = corefile.as_str() else {
            return Err(ConfigError::new(
                &key_pos(file, text, "Corefile"),
                "`data.Corefile` is not a string",
            ));
        };
        return Ok(corefile_in(file, text, body));
    }
    let entries = data
        .iter()
        .map(|(k, v)| {
            let pos = key_pos(file, text, k);
            Entry {
                key: k.clone(),
                value: v.clone(),
                shift: value_shift(text, &pos),
                pos,
            }
        })
        .collect();
    Ok(Source::KubeDns(entries))
}

/// The Corefile of a CoreDNS ConfigMap; positions land in the file when
/// it is a YAML block scalar (`Corefile: |`), else name `FILE[Corefile]`.
fn corefile_in(file: &Arc<str>, text: &str, body: &str) -> Source {
    let pos = key_pos(file, text, "Corefile");
    let shift = value_shift(text, &pos);
    let name = if shift.0 > 0 {
        file.clone()
    } else {
        Arc::from(format!("{file}[Corefile]"))
    };
    Source::Corefile {
        text: body.to_string(),
        shift: if shift.0 > 0 { shift } else { (0, 0) },
        name,
    }
}

/// Where key `key` is written (its first occurrence as a key), else 1:1.
fn key_pos(file: &Arc<str>, text: &str, key: &str) -> Pos {
    let quoted = format!("\"{key}\"");
    for (n, line) in text.lines().enumerate() {
        let t = line.trim_start();
        let rest = t.strip_prefix(key).or_else(|| t.strip_prefix(quoted.as_str()));
        if rest.is_some_and(|r| r.trim_start().starts_with(':')) {
            return at(file, n as u32 + 1, (line.len() - t.len()) as u32 + 1);
        }
    }
    at(file, 1, 1)
}

/// For a key followed by a block scalar (`key: |`): the value's first line
/// is the file's line `pos.line + 1`, indented as its first line is; the
/// shift is `(pos.line, indent)`. Otherwise `(0, 0)`.
fn value_shift(text: &str, pos: &Pos) -> (u32, u32) {
    let lines: Vec<&str> = text.lines().collect();
    let Some(line) = lines.get(pos.line as usize - 1) else {
        return (0, 0);
    };
    let after = line.split_once(':').map_or("", |(_, r)| r.trim());
    if !(after.starts_with('|') || after.starts_with('>')) {
        return (0, 0);
    }
    let indent = lines[pos.line as usize..]
        .iter()
        .find(|l| !l.trim().is_empty())
        .map_or(0, |l| l.len() - l.trim_start().len());
    (pos.line, indent as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(text: &str) -> String {
        let file: Arc<str> = Arc::from("f");
        match read(&file, text) {
            Ok(Source::Corefile { shift, name, .. }) => format!("corefile {shift:?} {name}"),
            Ok(Source::KubeDns(e)) => format!(
                "kube-dns {}",
                e.iter().map(|e| e.key.as_str()).collect::<Vec<_>>().join(",")
            ),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn a_corefile_a_coredns_configmap_and_a_kube_dns_one_are_told_apart() {
        assert_eq!(kind(".:53 {\n    errors\n}\n"), "corefile (0, 0) f");
        assert_eq!(kind("# c\nexample:53 {\n}\n"), "corefile (0, 0) f");
        assert_eq!(
            kind("kind: ConfigMap\ndata:\n  Corefile: |\n    .:53 {\n    }\n"),
            "corefile (3, 4) f"
        );
        assert_eq!(
            kind("{\"data\": {\"Corefile\": \".:53 {\\n}\"}}"),
            "corefile (0, 0) f[Corefile]"
        );
        assert_eq!(
            kind("data:\n  upstreamNameservers: '[]'\n"),
            "kube-dns upstreamNameservers"
        );
        assert_eq!(kind("stubDomains: '{}'\n"), "kube-dns stubDomains");
        assert_eq!(kind("apiVersion: v1\nkind: ConfigMap\n"), "kube-dns ");
        assert_eq!(kind("kind: Pod\n"), "f:1:1: a Pod, not a ConfigMap");
        assert!(kind("data: [\n").starts_with("f:"), "{}", kind("data: [\n"));
    }
}
