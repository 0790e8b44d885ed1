//! The JSON report of a run and `loadtest merge`: each step with its
//! counts, rcodes and latency histogram (so reports of several generators
//! merge exactly), who generated it and when each step started. In a pod a
//! report goes to the log between [`BEGIN`] and [`END`], so `kubectl logs`
//! collects it; [`read`] takes a report file or such a log.

use serde_json::{json, Map, Value};

use crate::capacity::{rcode_code, rcode_name, Row, Slo};
use crate::outcome::{Outcome, SUB};

/// The lines that frame a report in a log.
pub const BEGIN: &str = "--- loadtest report begin ---";
pub const END: &str = "--- loadtest report end ---";

/// Who ran a report's steps, on which schedule.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Generator {
    pub index: usize,
    pub of: usize,
    /// Hostname (the pod's name in Kubernetes) and node, when known.
    pub host: String,
    pub node: Option<String>,
    pub pid: u32,
    /// The shared start (Unix seconds) and the seconds between steps.
    pub start_at: Option<f64>,
    pub slot_seconds: f64,
    /// When its first step started by its own clock (Unix seconds).
    pub first_step: Option<f64>,
}

/// A run's report: what was offered to whom, and each step.
#[derive(Debug, Clone)]
pub struct Report {
    pub target: String,
    pub workload: String,
    pub amplification: f64,
    pub slo: Slo,
    pub generators: Vec<Generator>,
    pub rows: Vec<Row>,
}

fn step_json(r: &Row) -> Value {
    let o = &r.outcome;
    let rcodes: Map<String, Value> = o
        .rcodes
        .iter()
        .enumerate()
        .filter(|(_, n)| **n > 0)
        .map(|(c, n)| (rcode_name(c), json!(n)))
        .collect();
    json!({
        "label": r.label, "offered_qps": o.offered, "achieved_qps": o.achieved(),
        "sent": o.sent, "answered": o.answered, "lost": o.lost, "loss": o.loss(),
        "p50_ms": o.quantile_ms(0.5), "p99_ms": o.quantile_ms(0.99), "p999_ms": o.quantile_ms(0.999),
        "mean_ms": o.mean_ms(), "cpu_seconds": r.cpu_seconds, "qps_per_core": r.qps_per_core(),
        "rcodes": rcodes, "seconds": o.seconds, "started_unix": r.started,
        "histogram": {"unit": "us", "sub_buckets": SUB, "sum_us": o.sum_us(), "counts": o.histogram()},
    })
}

fn generator_json(g: &Generator) -> Value {
    json!({
        "index": g.index, "of": g.of, "host": g.host, "node": g.node, "pid": g.pid,
        "start_at": g.start_at, "slot_seconds": g.slot_seconds,
        "clock": {"first_step_unix": g.first_step, "late_ms": g.start_at.zip(g.first_step).map(|(a, s)| (s - a) * 1e3)},
    })
}

/// The JSON report (also what `loadtest plan --capacity` reads).
pub fn json(report: &Report, knee: Option<usize>) -> Value {
    let knee_row = knee.and_then(|k| report.rows.get(k));
    json!({
        "target": report.target,
        "workload": report.workload,
        "amplification": report.amplification,
        "slo": {"p99_ms": report.slo.p99_ms, "max_loss": report.slo.max_loss},
        "generators": report.generators.iter().map(generator_json).collect::<Vec<_>>(),
        "steps": report.rows.iter().map(step_json).collect::<Vec<_>>(),
        "knee": knee_row.map(|r| json!({"offered_qps": r.outcome.offered, "achieved_qps": r.outcome.achieved(), "qps_per_core": r.qps_per_core()})),
    })
}

/// A report framed for a log: compact JSON in lines of at most 1000
/// characters (container runtimes split long lines), between the markers.
pub fn to_log(report: &Value) -> String {
    let text = report.to_string();
    let chars: Vec<char> = text.chars().collect();
    let mut s = format!("{BEGIN}\n");
    for line in chars.chunks(1000) {
        s.extend(line);
        s.push('\n');
    }
    s.push_str(END);
    s.push('\n');
    s
}

/// The reports in `text`: every framed block of a log (a prefix before the
/// marker, such as `kubectl logs --prefix` adds, is stripped from its
/// lines), else the whole text as one JSON report.
pub fn read(text: &str) -> Result<Vec<Report>, String> {
    let mut blocks = Vec::new();
    let mut open: Option<(&str, String)> = None;
    for line in text.lines() {
        let line = line.trim_end_matches('\r');
        match &mut open {
            None => {
                if let Some(at) = line.find(BEGIN) {
                    open = Some((&line[..at], String::new()));
                }
            }
            Some((prefix, body)) => {
                let line = line.strip_prefix(*prefix).unwrap_or(line);
                if line == END {
                    blocks.push(std::mem::take(body));
                    open = None;
                } else {
                    body.push_str(line);
                }
            }
        }
    }
    if open.is_some() {
        return Err(format!(
            "a report begins ('{BEGIN}') but never ends ('{END}'): the log is cut"
        ));
    }
    if blocks.is_empty() {
        blocks.push(text.to_string());
    }
    blocks
        .iter()
        .map(|b| {
            let v: Value = serde_json::from_str(b).map_err(|e| format!("not a loadtest report: {e}"))?;
            from_json(&v)
        })
        .collect()
}

fn number(v: &Value, key: &str) -> Result<f64, String> {
    v[key].as_f64().ok_or(format!("the report has no number '{key}'"))
}

fn row_of(step: &Value) -> Result<Row, String> {
    let h = &step["histogram"];
    let counts: Vec<(usize, u64)> = h["counts"]
        .as_array()
        .ok_or("a step has no latency histogram (a report from an older loadtest: run it again)")?
        .iter()
        .filter_map(|p| Some((p[0].as_u64()? as usize, p[1].as_u64()?)))
        .collect();
    if h["sub_buckets"].as_u64() != Some(SUB as u64) {
        return Err(format!("histogram with {} sub-buckets, not {SUB}", h["sub_buckets"]));
    }
    let mut o = Outcome::default();
    o.offered = number(step, "offered_qps")?;
    o.sent = number(step, "sent")? as u64;
    o.answered = number(step, "answered")? as u64;
    o.lost = number(step, "lost")? as u64;
    o.seconds = number(step, "seconds")?;
    for (name, n) in step["rcodes"].as_object().into_iter().flatten() {
        let code = rcode_code(name).ok_or(format!("unknown rcode '{name}'"))?;
        o.rcodes[code] += n.as_u64().unwrap_or(0);
    }
    o.set_histogram(&counts, number(h, "sum_us")?)?;
    Ok(Row {
        label: step["label"].as_str().unwrap_or_default().to_string(),
        outcome: o,
        cpu_seconds: step["cpu_seconds"].as_f64(),
        started: step["started_unix"].as_f64().unwrap_or(0.0),
    })
}

fn generator_of(g: &Value) -> Generator {
    Generator {
        index: g["index"].as_u64().unwrap_or(0) as usize,
        of: g["of"].as_u64().unwrap_or(1) as usize,
        host: g["host"].as_str().unwrap_or_default().to_string(),
        node: g["node"].as_str().map(str::to_string),
        pid: g["pid"].as_u64().unwrap_or(0) as u32,
        start_at: g["start_at"].as_f64(),
        slot_seconds: g["slot_seconds"].as_f64().unwrap_or(0.0),
        first_step: g["clock"]["first_step_unix"].as_f64(),
    }
}

/// A report back from its JSON.
pub fn from_json(v: &Value) -> Result<Report, String> {
    let steps = v["steps"].as_array().ok_or("the report has no steps")?;
    Ok(Report {
        target: v["target"].as_str().unwrap_or_default().to_string(),
        workload: v["workload"].as_str().unwrap_or_default().to_string(),
        amplification: v["amplification"].as_f64().unwrap_or(1.0),
        slo: Slo {
            p99_ms: number(&v["slo"], "p99_ms")?,
            max_loss: number(&v["slo"], "max_loss")?,
        },
        generators: v["generators"]
            .as_array()
            .into_iter()
            .flatten()
            .map(generator_of)
            .collect(),
        rows: steps.iter().map(row_of).collect::<Result<_, _>>()?,
    })
}

/// Writes PREFIX.json and PREFIX.svg.
pub fn write_files(prefix: &str, report: &Report, knee: Option<usize>) -> Result<(), String> {
    let text = serde_json::to_string_pretty(&json(report, knee)).map_err(|e| e.to_string())?;
    std::fs::write(format!("{prefix}.json"), text).map_err(|e| format!("{prefix}.json: {e}"))?;
    let n = report.generators.len();
    let merged = if n > 1 {
        format!(" ({n} generators merged)")
    } else {
        String::new()
    };
    let title = format!("{}: {}{merged}", report.target, report.workload);
    std::fs::write(
        format!("{prefix}.svg"),
        crate::capacity::svg(&report.rows, knee, &title),
    )
    .map_err(|e| format!("{prefix}.svg: {e}"))
}
