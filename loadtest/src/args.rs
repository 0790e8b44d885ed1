//! `loadtest`'s command line: one flat set of `--flags` shared by every
//! command (each reads the ones it needs), and `merge`'s report paths.

use std::path::PathBuf;

use loadtest::synth::Shape;

pub struct Args {
    pub command: String,
    pub listen: String,
    pub shape: Shape,
    pub seconds: u64,
    pub server: Option<PathBuf>,
    pub changes: usize,
    pub target: Option<String>,
    pub names: Option<PathBuf>,
    pub dump: Option<PathBuf>,
    pub lookups: usize,
    pub rate: f64,
    pub ramp: Option<(f64, f64)>,
    pub steps: usize,
    pub step_seconds: f64,
    pub tcp: bool,
    pub sockets: usize,
    pub pid: Option<u32>,
    pub compare: Option<String>,
    pub compare_pid: Option<u32>,
    pub out: Option<String>,
    pub factor: f64,
    pub slo_ms: f64,
    pub max_loss: f64,
    pub metrics: Option<String>,
    pub capacity: Option<PathBuf>,
    pub interval: Option<f64>,
    pub churn: f64,
    /// watch-bench: Pods to serve (`pods verified`), a warm restart, the server's CPU.
    pub pod_objects: usize,
    pub persist: bool,
    /// watch-bench: ServiceImports (3 clusters each) besides the Services.
    pub imports: usize,
    pub pin_server: Option<usize>,
    pub index: Option<usize>,
    pub of: usize,
    pub start_at: Option<f64>,
    pub log_report: bool,
    /// `merge`'s reports.
    pub files: Vec<PathBuf>,
}

pub fn parse(mut it: impl Iterator<Item = String>) -> Result<Args, String> {
    let command = it.next().ok_or("a command is required")?;
    let mut a = Args {
        command,
        listen: "127.0.0.1:0".into(),
        shape: Shape {
            namespaces: 10,
            services: 100,
            endpoints: 5,
        },
        seconds: 600,
        server: None,
        changes: 200,
        target: None,
        names: None,
        dump: None,
        lookups: 100_000,
        rate: 10_000.0,
        ramp: None,
        steps: 5,
        step_seconds: 5.0,
        tcp: false,
        sockets: 32,
        pid: None,
        compare: None,
        compare_pid: None,
        out: None,
        factor: 1.25,
        slo_ms: 5.0,
        max_loss: 0.001,
        metrics: None,
        capacity: None,
        interval: None,
        churn: 10.0,
        pod_objects: 0,
        persist: false,
        imports: 0,
        pin_server: None,
        index: None,
        of: 1,
        start_at: None,
        log_report: false,
        files: Vec::new(),
    };
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        let number = |v: String| v.parse::<usize>().map_err(|_| format!("{flag}: '{v}' is not a number"));
        match flag.as_str() {
            "--listen" => a.listen = value()?,
            "--namespaces" => a.shape.namespaces = number(value()?)?.max(1),
            "--services" => a.shape.services = number(value()?)?,
            "--endpoints" | "--endpoints-per-service" => a.shape.endpoints = number(value()?)?,
            "--churn" => a.churn = float(&flag, value()?.trim_end_matches("/s").to_string())?,
            "--seconds" => a.seconds = number(value()?)? as u64,
            "--server" => a.server = Some(PathBuf::from(value()?)),
            "--changes" => a.changes = number(value()?)?,
            "--target" => a.target = Some(value()?),
            "--names" => a.names = Some(PathBuf::from(value()?)),
            "--pods" => {}
            "--pod-objects" => a.pod_objects = number(value()?)?,
            "--persist" => a.persist = true,
            "--imports" => a.imports = number(value()?)?,
            "--pin-server" => a.pin_server = Some(number(value()?)?),
            "--dump" | "--services-from" => a.dump = Some(PathBuf::from(value()?)),
            "--lookups" => a.lookups = number(value()?)?,
            "--rate" => a.rate = float(&flag, value()?)?,
            "--ramp" => a.ramp = Some(ramp(&value()?)?),
            "--steps" => a.steps = number(value()?)?,
            "--step-duration" => a.step_seconds = float(&flag, value()?.trim_end_matches('s').to_string())?,
            "--tcp" => a.tcp = true,
            "--sockets" => a.sockets = number(value()?)?.max(1),
            "--pid" => a.pid = Some(number(value()?)? as u32),
            "--compare" => a.compare = Some(value()?),
            "--compare-pid" => a.compare_pid = Some(number(value()?)? as u32),
            "--out" => a.out = Some(value()?),
            "--factor" => a.factor = float(&flag, value()?)?.max(1.01),
            "--slo-ms" => a.slo_ms = float(&flag, value()?)?,
            "--max-loss" => a.max_loss = float(&flag, value()?)?,
            "--metrics" => a.metrics = Some(value()?),
            "--capacity" => a.capacity = Some(PathBuf::from(value()?)),
            "--interval" => a.interval = Some(float(&flag, value()?)?),
            "--index" => a.index = Some(number(value()?)?),
            "--of" => a.of = number(value()?)?,
            "--start-at" => a.start_at = Some(float(&flag, value()?)?).filter(|t| *t > 0.0),
            "--log-report" => a.log_report = true,
            file if a.command == "merge" && !file.starts_with('-') => a.files.push(PathBuf::from(file)),
            other => return Err(format!("unknown flag '{other}'")),
        }
    }
    Ok(a)
}

fn float(flag: &str, v: String) -> Result<f64, String> {
    v.parse::<f64>().map_err(|_| format!("{flag}: '{v}' is not a number"))
}

/// `1x..5x` → (1, 5).
fn ramp(text: &str) -> Result<(f64, f64), String> {
    let (a, b) = text
        .split_once("..")
        .ok_or(format!("--ramp: '{text}' is not FROMx..TOx"))?;
    let f = |t: &str| {
        t.trim_end_matches('x')
            .parse::<f64>()
            .map_err(|_| format!("--ramp: '{t}' is not a factor"))
    };
    Ok((f(a)?, f(b)?))
}
