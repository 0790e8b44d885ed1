//! One metric family (name, type, help, label names) and the label-name
//! lists the families share.

/// One metric family as `/metrics` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Family {
    pub name: &'static str,
    /// `counter`, `gauge` or `histogram`.
    pub kind: &'static str,
    pub help: &'static str,
    /// Label names in the order they are written (`le` of histograms aside).
    pub labels: &'static [&'static str],
}

pub const fn counter(name: &'static str, help: &'static str, labels: &'static [&'static str]) -> Family {
    Family {
        name,
        kind: "counter",
        help,
        labels,
    }
}

pub const fn gauge(name: &'static str, help: &'static str, labels: &'static [&'static str]) -> Family {
    Family {
        name,
        kind: "gauge",
        help,
        labels,
    }
}

pub(super) const fn histogram(name: &'static str, help: &'static str, labels: &'static [&'static str]) -> Family {
    Family {
        name,
        kind: "histogram",
        help,
        labels,
    }
}

pub(super) const ZONE: &[&str] = &["server", "zone", "view"];
pub(super) const ZONE_PROTO: &[&str] = &["server", "zone", "view", "proto"];
pub(super) const CACHE: &[&str] = &["server", "zones", "view"];
pub(super) const CACHE_TYPE: &[&str] = &["server", "zones", "view", "type"];
pub(super) const KIND: &[&str] = &["kind"];
