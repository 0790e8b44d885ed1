//! `loadtest merge`: the reports of N generators that ran one shared
//! schedule become the report of one: per step, offered and achieved qps
//! summed, sent/answered/lost and rcodes summed, latency histograms added
//! bucket by bucket and the percentiles computed from the sum (never an
//! average of percentiles), and the knee found on the merged steps.

use crate::capacity::{self, Row};
use crate::outcome::Outcome;
use crate::report::{Generator, Report};

/// The merged report, its knee, and what the reader should know about the
/// inputs (missing generators, steps that did not start together).
#[derive(Debug)]
pub struct Merged {
    pub report: Report,
    pub knee: Option<usize>,
    pub notes: Vec<String>,
}

/// Merges `reports` (at least one).
pub fn merge(reports: &[Report]) -> Result<Merged, String> {
    let first = reports.first().ok_or("no reports to merge")?;
    let mut notes = Vec::new();
    let generators = generators(reports, &mut notes)?;
    let steps = reports.iter().map(|r| r.rows.len()).min().unwrap_or(0);
    let most = reports.iter().map(|r| r.rows.len()).max().unwrap_or(0);
    if most != steps {
        notes.push(format!(
            "the reports have {steps} to {most} steps (a generator stops after the step that broke its SLO): merged the first {steps}, which every generator ran"
        ));
    }
    for (what, differs) in [
        ("targets", reports.iter().any(|r| r.target != first.target)),
        ("workloads", reports.iter().any(|r| r.workload != first.workload)),
        (
            "SLOs (the first report's is used)",
            reports
                .iter()
                .any(|r| r.slo.p99_ms != first.slo.p99_ms || r.slo.max_loss != first.slo.max_loss),
        ),
    ] {
        if differs {
            notes.push(format!("the reports have different {what}"));
        }
    }
    let rows: Vec<Row> = (0..steps).map(|k| step(reports, k, &mut notes)).collect();
    let knee = capacity::knee(&rows, first.slo);
    let report = Report {
        target: first.target.clone(),
        workload: first.workload.clone(),
        amplification: first.amplification,
        slo: first.slo,
        generators,
        rows,
    };
    Ok(Merged { report, knee, notes })
}

/// Every generator once; a generator reported twice (a log collected
/// twice, a retried pod) would count its load twice, so it is an error.
fn generators(reports: &[Report], notes: &mut Vec<String>) -> Result<Vec<Generator>, String> {
    let all: Vec<Generator> = reports.iter().flat_map(|r| r.generators.iter().cloned()).collect();
    let of = all.iter().map(|g| g.of).max().unwrap_or(reports.len());
    if all.iter().any(|g| g.of != of) {
        notes.push("the generators ran with different --of".into());
    }
    let mut indexes: Vec<usize> = all.iter().map(|g| g.index).collect();
    indexes.sort_unstable();
    if let Some(w) = indexes.windows(2).find(|w| w[0] == w[1]) {
        let hosts: Vec<&str> = all
            .iter()
            .filter(|g| g.index == w[0])
            .map(|g| g.host.as_str())
            .collect();
        return Err(format!(
            "generator {} of {of} is reported more than once (hosts: {}): each report must be merged once",
            w[0],
            hosts.join(", ")
        ));
    }
    let missing: Vec<String> = (0..of)
        .filter(|i| !indexes.contains(i))
        .map(|i| i.to_string())
        .collect();
    if !all.is_empty() && !missing.is_empty() {
        notes.push(format!(
            "{} of {of} generators reported (missing: {}): the merged load is short of the schedule's",
            of - missing.len(),
            missing.join(", ")
        ));
    }
    Ok(all)
}

/// Step `k` of every report as one. Achieved qps is the sum of the
/// generators' achieved qps, so `seconds` is what makes answered/seconds
/// that sum (the step's length when all lasted as long).
fn step(reports: &[Report], k: usize, notes: &mut Vec<String>) -> Row {
    let mut sum = Outcome::default();
    let (mut achieved, mut longest) = (0.0, 0.0f64);
    for r in reports {
        let o = &r.rows[k].outcome;
        sum.add(o);
        achieved += o.achieved();
        longest = longest.max(o.seconds);
        // The engine sends every query, late if it must: a step that took
        // longer than planned had a generator short of CPU.
        let planned = o.sent as f64 / o.offered.max(1e-9);
        if o.seconds > 1.1 * planned {
            let who = r
                .generators
                .first()
                .map_or("a generator".into(), |g| format!("generator {} ({})", g.index, g.host));
            notes.push(format!(
                "step {}: {who} took {:.1} s to send a {planned:.1} s step: it could not keep its rate (its CPU), so its latencies include its own delay; add generators",
                k + 1,
                o.seconds
            ));
        }
    }
    sum.seconds = if achieved > 0.0 {
        sum.answered as f64 / achieved
    } else {
        longest
    };
    let starts: Vec<f64> = reports.iter().map(|r| r.rows[k].started).filter(|s| *s > 0.0).collect();
    let earliest = starts.iter().copied().fold(f64::MAX, f64::min);
    let spread = starts.iter().copied().fold(f64::MIN, f64::max) - earliest;
    if starts.len() > 1 && spread > 0.1 * longest {
        notes.push(format!(
            "step {}: the generators started {spread:.2} s apart, more than 10% of the {longest:.1} s step (no shared --start-at, or clocks apart)",
            k + 1
        ));
    }
    // Each generator measured the same server's CPU (with --pid): the mean.
    let cpu: Option<Vec<f64>> = reports.iter().map(|r| r.rows[k].cpu_seconds).collect();
    Row {
        label: format!("{:.0} qps", sum.offered),
        cpu_seconds: cpu.map(|c| c.iter().sum::<f64>() / c.len() as f64),
        started: if starts.is_empty() { 0.0 } else { earliest },
        outcome: sum,
    }
}

/// Every report in `paths` (report files or logs with framed reports).
pub fn read_files(paths: &[std::path::PathBuf]) -> Result<Vec<Report>, String> {
    let mut all = Vec::new();
    for path in paths {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        all.extend(crate::report::read(&text).map_err(|e| format!("{}: {e}", path.display()))?);
    }
    Ok(all)
}
