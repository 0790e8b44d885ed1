//! Ramps, the capacity knee, and the reports: a table, a JSON file and an
//! SVG plot (achieved vs offered qps; p50/p99/p99.9 vs offered with the
//! knee marked).

use std::fmt::Write as _;
use std::io::{IsTerminal, Write as _};

use crate::engine::{self, Outcome, Step};
use crate::schedule::{unix_now, Schedule};
use crate::workload::Workload;

/// When a step is still sustainable.
#[derive(Debug, Clone, Copy)]
pub struct Slo {
    pub p99_ms: f64,
    pub max_loss: f64,
}

impl Slo {
    pub fn met(&self, o: &Outcome) -> bool {
        o.quantile_ms(0.99) <= self.p99_ms && o.loss() <= self.max_loss
    }
}

/// One measured step, with the target's CPU when its pid is known.
#[derive(Debug, Clone)]
pub struct Row {
    pub label: String,
    pub outcome: Outcome,
    /// CPU seconds the target used during the step.
    pub cpu_seconds: Option<f64>,
    /// When the step started (Unix seconds; 0 when unknown).
    pub started: f64,
}

impl Row {
    /// Achieved qps per core of the target's CPU.
    pub fn qps_per_core(&self) -> Option<f64> {
        let cpu = self.cpu_seconds?;
        (cpu > 0.0).then(|| self.outcome.answered as f64 / cpu)
    }
}

/// CPU seconds used so far by `pid` (utime + stime), from /proc.
pub fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: f64 = rest.get(11)?.parse::<f64>().ok()? + rest.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

/// Runs one step with a progress bar on stderr (when it is a terminal:
/// not in a pod's log).
pub fn measure(step: &Step, workload: &Workload, label: &str, pid: Option<u32>) -> std::io::Result<Row> {
    let before = pid.and_then(cpu_seconds);
    let terminal = std::io::stderr().is_terminal();
    let bar = |done: f64| {
        if !terminal {
            return;
        }
        let filled = (done * 30.0).round() as usize;
        eprint!(
            "\r{label:>14} [{}{}] {:3.0}%",
            "#".repeat(filled),
            ".".repeat(30 - filled.min(30)),
            done * 100.0
        );
        let _ = std::io::stderr().flush();
    };
    let started = unix_now();
    let outcome = engine::run(step, &workload.queries, &bar)?;
    if terminal {
        eprintln!();
    }
    let after = pid.and_then(cpu_seconds);
    Ok(Row {
        label: label.to_string(),
        outcome,
        cpu_seconds: before.zip(after).map(|(b, a)| a - b),
        started,
    })
}

/// Steps from `from`× to `to`× of `base` qps in `steps` equal steps.
pub fn ramp(base: f64, from: f64, to: f64, steps: usize) -> Vec<f64> {
    let steps = steps.max(1);
    (0..steps)
        .map(|i| {
            let f = if steps == 1 {
                to
            } else {
                from + (to - from) * i as f64 / (steps - 1) as f64
            };
            base * f
        })
        .collect()
}

/// The knee of measured steps: the last of the leading steps that all met
/// the SLO.
pub fn knee(rows: &[Row], slo: Slo) -> Option<usize> {
    rows.iter()
        .position(|r| !slo.met(&r.outcome))
        .unwrap_or(rows.len())
        .checked_sub(1)
}

/// Searches the knee: rates grow by `factor` until the SLO breaks (or
/// `max_steps`); the knee is the highest rate that met it. Each step waits
/// for its time in `schedule`.
#[allow(clippy::too_many_arguments)]
pub fn find_knee(
    template: &Step,
    workload: &Workload,
    start: f64,
    factor: f64,
    max_steps: usize,
    slo: Slo,
    pid: Option<u32>,
    schedule: &Schedule,
) -> std::io::Result<(Vec<Row>, Option<usize>)> {
    let mut rows = Vec::new();
    let mut knee = None;
    let mut rate = start;
    for k in 0..max_steps {
        let step = Step {
            rate,
            ..template.clone()
        };
        schedule.wait(k);
        let row = measure(&step, workload, &format!("{rate:.0} qps"), pid)?;
        let ok = slo.met(&row.outcome);
        rows.push(row);
        if !ok {
            break;
        }
        knee = Some(rows.len() - 1);
        rate *= factor;
    }
    Ok((rows, knee))
}

/// The table printed at the end.
pub fn table(rows: &[Row], knee: Option<usize>) -> String {
    let mut s =
        String::from("offered qps   achieved qps   loss      p50 ms   p99 ms  p99.9 ms   mean ms   qps/core  rcodes\n");
    for (i, r) in rows.iter().enumerate() {
        let o = &r.outcome;
        let rcodes: Vec<String> = o
            .rcodes
            .iter()
            .enumerate()
            .filter(|(_, n)| **n > 0)
            .map(|(c, n)| format!("{}:{n}", rcode_name(c)))
            .collect();
        let _ = writeln!(
            s,
            "{:>11.0}   {:>12.0}   {:>6.3}%  {:>7.3}  {:>7.3}  {:>8.3}  {:>8.3}  {:>9}  {}{}",
            o.offered,
            o.achieved(),
            o.loss() * 100.0,
            o.quantile_ms(0.5),
            o.quantile_ms(0.99),
            o.quantile_ms(0.999),
            o.mean_ms(),
            r.qps_per_core().map_or("-".into(), |q| format!("{q:.0}")),
            rcodes.join(" "),
            if knee == Some(i) { "   <- knee" } else { "" }
        );
    }
    s
}

const RCODES: [&str; 11] = [
    "NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP", "REFUSED", "YXDOMAIN", "YXRRSET", "NXRRSET", "NOTAUTH",
    "NOTZONE",
];

/// An rcode's name (`RCODE12` for those without one).
pub fn rcode_name(c: usize) -> String {
    RCODES.get(c).map_or(format!("RCODE{c}"), |n| n.to_string())
}

/// The rcode [`rcode_name`] names.
pub fn rcode_code(name: &str) -> Option<usize> {
    RCODES
        .iter()
        .position(|n| *n == name)
        .or_else(|| name.strip_prefix("RCODE")?.parse().ok().filter(|c| *c < 16))
}

/// The knee in a sentence, or advice when the first step already broke the SLO.
pub fn knee_line(rows: &[Row], knee: Option<usize>) -> String {
    match knee.and_then(|k| rows.get(k)) {
        Some(r) => {
            let per_core = r
                .qps_per_core()
                .map_or(String::new(), |q| format!(", {q:.0} qps per server core"));
            format!(
                "knee: {:.0} qps sustained (p99 {:.3} ms, loss {:.3}%){per_core}",
                r.outcome.achieved(),
                r.outcome.quantile_ms(0.99),
                r.outcome.loss() * 100.0
            )
        }
        None => format!(
            "knee: not reached even at the first step ({:.0} qps): lower --rate",
            rows.first().map_or(0.0, |r| r.outcome.offered)
        ),
    }
}

/// The SVG plot: achieved vs offered (left), latency percentiles vs
/// offered (right, log scale), the knee marked in both.
pub fn svg(rows: &[Row], knee: Option<usize>, title: &str) -> String {
    let (w, h, pad) = (900.0, 380.0, 50.0);
    let panel = (w - 3.0 * pad) / 2.0;
    let max_x = rows.iter().map(|r| r.outcome.offered).fold(1.0, f64::max) * 1.05;
    let max_q = rows.iter().map(|r| r.outcome.achieved()).fold(max_x, f64::max);
    let lat: Vec<f64> = rows
        .iter()
        .flat_map(|r| {
            [
                r.outcome.quantile_ms(0.5),
                r.outcome.quantile_ms(0.99),
                r.outcome.quantile_ms(0.999),
            ]
        })
        .collect();
    let (lo, hi) = (
        lat.iter()
            .copied()
            .filter(|v| *v > 0.0)
            .fold(f64::MAX, f64::min)
            .clamp(0.001, 0.01),
        lat.iter().copied().fold(1.0, f64::max) * 1.5,
    );
    let x = |v: f64, left: f64| left + v / max_x * panel;
    let yq = |v: f64| h - pad - v / max_q * (h - 2.0 * pad);
    let yl = |v: f64| h - pad - (v.max(lo).ln() - lo.ln()) / (hi.ln() - lo.ln()) * (h - 2.0 * pad);
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"11\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"{pad}\" y=\"18\" font-size=\"13\">{}</text>\n",
        xml(title)
    );
    let left2 = 2.0 * pad + panel;
    for (left, name) in [(pad, "achieved qps"), (left2, "latency ms (log)")] {
        let _ = writeln!(
            s,
            "<rect x=\"{left}\" y=\"{pad}\" width=\"{panel}\" height=\"{}\" fill=\"none\" stroke=\"#999\"/>\n<text x=\"{left}\" y=\"{}\">{name} vs offered qps (0–{max_x:.0})</text>",
            h - 2.0 * pad,
            pad - 6.0
        );
    }
    let line = |pts: Vec<(f64, f64)>, color: &str| -> String {
        let p: Vec<String> = pts.iter().map(|(a, b)| format!("{a:.1},{b:.1}")).collect();
        format!(
            "<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"2\" points=\"{}\"/>\n",
            p.join(" ")
        )
    };
    s.push_str(&line(vec![(x(0.0, pad), yq(0.0)), (x(max_x, pad), yq(max_x))], "#ccc"));
    s.push_str(&line(
        rows.iter()
            .map(|r| (x(r.outcome.offered, pad), yq(r.outcome.achieved())))
            .collect(),
        "#1f77b4",
    ));
    for (q, color) in [(0.5, "#2ca02c"), (0.99, "#ff7f0e"), (0.999, "#d62728")] {
        s.push_str(&line(
            rows.iter()
                .map(|r| (x(r.outcome.offered, left2), yl(r.outcome.quantile_ms(q))))
                .collect(),
            color,
        ));
    }
    let _ = writeln!(s, "<text x=\"{}\" y=\"{}\" fill=\"#2ca02c\">p50</text><text x=\"{}\" y=\"{}\" fill=\"#ff7f0e\">p99</text><text x=\"{}\" y=\"{}\" fill=\"#d62728\">p99.9</text>", left2 + 5.0, h - pad + 15.0, left2 + 35.0, h - pad + 15.0, left2 + 65.0, h - pad + 15.0);
    let _ = writeln!(
        s,
        "<text x=\"{}\" y=\"{}\">max {max_q:.0} qps</text><text x=\"{}\" y=\"{}\">{lo:.3}–{hi:.1} ms</text>",
        pad + 5.0,
        pad + 14.0,
        left2 + 5.0,
        pad + 14.0
    );
    if let Some(k) = knee {
        let o = &rows[k].outcome;
        for left in [pad, left2] {
            let kx = x(o.offered, left);
            let _ = writeln!(s, "<line x1=\"{kx:.1}\" y1=\"{pad}\" x2=\"{kx:.1}\" y2=\"{}\" stroke=\"black\" stroke-dasharray=\"4 3\"/>", h - pad);
        }
        let _ = writeln!(
            s,
            "<text x=\"{:.1}\" y=\"{}\">knee {:.0} qps</text>",
            x(o.offered, pad) + 4.0,
            h - pad - 6.0,
            o.offered
        );
    }
    s.push_str("</svg>\n");
    s
}

/// A titled panel of `(color, points)` lines.
pub type Panel<'a> = (&'a str, Vec<(&'a str, Vec<(f64, f64)>)>);

/// Panels side by side, each with its line series `(color, points)` on a
/// linear scale from 0: the same x axis (`x_label`) for all.
pub fn panels_svg(title: &str, x_label: &str, panels: &[Panel]) -> String {
    let (pw, h, pad) = (320.0, 300.0, 45.0);
    let n = panels.len().max(1) as f64;
    let w = pad + n * (pw + pad);
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"11\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"{pad}\" y=\"18\" font-size=\"13\">{}</text>\n",
        xml(title)
    );
    let points = || panels.iter().flat_map(|p| p.1.iter().flat_map(|l| l.1.iter()));
    let max_x = points().map(|p| p.0).fold(1e-9, f64::max);
    for (i, (name, lines)) in panels.iter().enumerate() {
        let left = pad + i as f64 * (pw + pad);
        let max_y = lines.iter().flat_map(|l| l.1.iter()).map(|p| p.1).fold(1e-9, f64::max) * 1.15;
        let _ = writeln!(
            s,
            "<rect x=\"{left}\" y=\"{pad}\" width=\"{pw}\" height=\"{}\" fill=\"none\" stroke=\"#999\"/>\n<text x=\"{left}\" y=\"{}\">{}</text>\n<text x=\"{}\" y=\"{}\">0–{max_y:.2}</text>\n<text x=\"{left}\" y=\"{}\">{} 0–{max_x:.1}</text>",
            h - 2.0 * pad,
            pad - 6.0,
            xml(name),
            left + 4.0,
            pad + 14.0,
            h - pad + 15.0,
            xml(x_label)
        );
        for (color, pts) in lines {
            let p: Vec<String> = pts
                .iter()
                .map(|(x, y)| {
                    format!(
                        "{:.1},{:.1}",
                        left + x / max_x * pw,
                        h - pad - y / max_y * (h - 2.0 * pad)
                    )
                })
                .collect();
            let _ = writeln!(
                s,
                "<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"2\" points=\"{}\"/>",
                p.join(" ")
            );
        }
    }
    s.push_str("</svg>\n");
    s
}

fn xml(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// Replicas needed for `qps` × each growth factor, with 50% headroom,
/// from a replica's knee.
pub fn replicas(qps: f64, knee_qps: f64, growth: &[f64]) -> Vec<(f64, u64)> {
    growth
        .iter()
        .map(|g| (*g, ((qps * g) / (knee_qps * 0.5)).ceil().max(1.0) as u64))
        .collect()
}
