//! What every kind's conversion shares: a namespaced object's key, a
//! port, and the [`Invalid`] error naming a malformed object.

use crate::store::{PortIn, Proto};
use crate::watch::lean::Meta as ObjectMeta;

/// A malformed object, skipped: `kind namespace/name: reason`.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{kind} {namespace}/{name}: {reason}")]
pub struct Invalid {
    pub kind: &'static str,
    pub namespace: String,
    pub name: String,
    pub reason: String,
}

pub fn invalid(kind: &'static str, meta: &ObjectMeta, reason: impl Into<String>) -> Invalid {
    Invalid {
        kind,
        namespace: meta.namespace.as_deref().unwrap_or_default().to_string(),
        name: meta.name.as_deref().unwrap_or_default().to_string(),
        reason: reason.into(),
    }
}

/// `(namespace, name)` of a namespaced object, lower-cased.
pub fn ids(kind: &'static str, meta: &ObjectMeta) -> Result<(String, String), Invalid> {
    match (&meta.namespace, &meta.name) {
        (Some(ns), Some(name)) if !ns.is_empty() && !name.is_empty() => {
            Ok((ns.to_ascii_lowercase(), name.to_ascii_lowercase()))
        }
        _ => Err(invalid(kind, meta, "metadata.namespace and metadata.name are required")),
    }
}

/// One port: its name lower-cased (empty when unnamed), protocol, number.
pub fn port(
    kind: &'static str,
    meta: &ObjectMeta,
    name: Option<&str>,
    proto: Option<&str>,
    number: i32,
) -> Result<PortIn, Invalid> {
    let proto = Proto::from_k8s(proto).ok_or_else(|| invalid(kind, meta, "unknown port protocol"))?;
    let port = u16::try_from(number).map_err(|_| invalid(kind, meta, format!("port {number} out of range")))?;
    Ok(PortIn {
        name: name.unwrap_or_default().to_ascii_lowercase(),
        proto,
        port,
    })
}
