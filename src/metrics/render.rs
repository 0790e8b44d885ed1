//! The Prometheus text format: a family's `# HELP`/`# TYPE` head, its
//! series, and histograms (cumulative buckets, sum, count). Names and help
//! come from the [`catalogue`](super::catalogue); the counters from their
//! owners, each of which renders its own families with these writers.

use std::fmt::Write;

use super::catalogue::Family;

impl Family {
    /// Writes `# HELP` and `# TYPE`.
    pub fn head(&self, s: &mut String) {
        head(s, self.name, self.kind, self.help);
    }

    /// Writes the family with one series without labels.
    pub fn single(&self, s: &mut String, value: impl std::fmt::Display) {
        family(s, self.name, self.kind, self.help, "", [("", value)]);
    }

    /// Writes the family with one series per value of its one label.
    pub fn by<'a, V: std::fmt::Display>(&self, s: &mut String, series: impl IntoIterator<Item = (&'a str, V)>) {
        family(s, self.name, self.kind, self.help, self.labels[0], series);
    }
}

/// Writes a family's `# HELP` and `# TYPE` lines.
pub fn head(s: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(s, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

/// Writes one metric family whose series differ in one label's value
/// (`label` empty: one series without labels).
pub(crate) fn family<'a, V: std::fmt::Display>(
    s: &mut String,
    name: &str,
    kind: &str,
    help: &str,
    label: &str,
    series: impl IntoIterator<Item = (&'a str, V)>,
) {
    head(s, name, kind, help);
    for (value, n) in series {
        if label.is_empty() {
            let _ = writeln!(s, "{name} {n}");
        } else {
            let _ = writeln!(s, "{name}{{{label}=\"{value}\"}} {n}");
        }
    }
}

/// Writes a histogram's series: cumulative buckets, sum, count.
pub(super) fn histogram(s: &mut String, name: &str, labels: &str, bounds: &[f64], counts: &[u64], over: u64, sum: f64) {
    let sep = if labels.is_empty() { "" } else { "," };
    let mut cumulative = 0;
    for (bound, n) in bounds.iter().zip(counts) {
        cumulative += n;
        let _ = writeln!(s, "{name}_bucket{{{labels}{sep}le=\"{bound}\"}} {cumulative}");
    }
    cumulative += over;
    let _ = writeln!(s, "{name}_bucket{{{labels}{sep}le=\"+Inf\"}} {cumulative}");
    if labels.is_empty() {
        let _ = writeln!(s, "{name}_sum {sum}\n{name}_count {cumulative}");
    } else {
        let _ = writeln!(s, "{name}_sum{{{labels}}} {sum}\n{name}_count{{{labels}}} {cumulative}");
    }
}
