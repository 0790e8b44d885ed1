//! `loadtest`: the load tester for clusterdns.
//!
//! ```text
//! loadtest fakeapi [--listen ADDR] [--namespaces N] [--services N] [--endpoints K] [--seconds S]
//!     serve a synthetic cluster from the fake Kubernetes API server
//!     (try: kubectl --server=http://ADDR get svc -A)
//! loadtest watch-bench --server PATH [--namespaces N] [--services N] [--endpoints K] [--changes M] [--pod-objects N] [--persist] [--pin-server CPU]
//!     initial sync time, RSS, change-to-served latency and relist peak RSS; --pod-objects N adds
//!     N Pods (`pods verified`); --persist also restarts the server warm during an API outage
//! loadtest run --target ADDR (--names FILE | --pods [--dump KUBECTL.json | --namespaces N --services N] [--lookups L])
//!         [--rate QPS] [--ramp 1x..5x --steps N] [--step-duration S] [--tcp] [--sockets N]
//!         [--pid PID] [--compare ADDR [--compare-pid PID]] [--out PREFIX]
//!     open-loop load at fixed rates (or a growth ramp); table, PREFIX.json, PREFIX.svg
//! loadtest knee --target ADDR (...workload...) [--rate START] [--factor F] [--slo-ms MS] [--max-loss FRACTION]
//!     ramp until p99 > SLO or loss > 0.1%: the highest sustainable qps (per core with --pid)
//! loadtest plan --metrics URL [--capacity REPORT.json] [--interval S]
//!     today's qps by type, protocol, rcode and search-expansion share; replicas at 1x, 2x, 5x
//! loadtest export-zone [--namespaces N] [--services N]
//!     the synthetic cluster's names as a zone file (for Knot, NSD, BIND)
//! loadtest export-cluster [--namespaces N] [--services N] [--endpoints K]
//!     the synthetic cluster as a kubectl JSON dump (for the `snapshot FILE` source)
//! loadtest cluster --server PATH [--services N] [--endpoints-per-service K] [--churn R] [--rate QPS] [--seconds S]
//!     the fake API serving a synthetic cluster, clusterdns watching it, R changes/s under query
//!     load: change-to-served latency and the load's outcome
//! loadtest soak --server PATH [--services N] [--churn R] [--rate QPS] [--seconds S] [--interval S] [--out PREFIX]
//!     the same for 30 minutes (default) with forwarding + cache to a stub upstream, sampled every
//!     --interval s (default 60): RSS, open fds, p99 per sample; PREFIX.json and PREFIX.svg
//! ```

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use loadtest::capacity::{self, Slo};
use loadtest::engine::{Proto, Step};
use loadtest::fakeapi::FakeApi;
use loadtest::synth::{self, Shape};
use loadtest::watchbench;
use loadtest::{plan, workload};

const USAGE: &str = "usage:\n  loadtest fakeapi [--listen ADDR] [--namespaces N] [--services N] [--endpoints K] [--seconds S]\n  loadtest watch-bench --server PATH [--namespaces N] [--services N] [--endpoints K] [--changes M] [--pod-objects N] [--persist] [--pin-server CPU]\n  loadtest run --target ADDR (--names FILE | --pods) [--rate QPS] [--ramp 1x..5x --steps N] [--step-duration S] [--tcp] [--sockets N] [--pid PID] [--compare ADDR [--compare-pid PID]] [--out PREFIX]\n  loadtest knee --target ADDR (--names FILE | --pods) [--rate START] [--factor F] [--slo-ms MS] [--max-loss F] [--pid PID] [--out PREFIX]\n  loadtest plan --metrics URL [--capacity REPORT.json] [--interval S]\n  loadtest export-zone [--namespaces N] [--services N]\n  loadtest export-cluster [--namespaces N] [--services N] [--endpoints K]\n  loadtest cluster --server PATH [--services N] [--endpoints-per-service K] [--churn R] [--rate QPS] [--seconds S]\n  loadtest soak --server PATH [--services N] [--churn R] [--rate QPS] [--seconds S] [--interval S] [--out PREFIX]";

struct Args {
    command: String,
    listen: String,
    shape: Shape,
    seconds: u64,
    server: Option<PathBuf>,
    changes: usize,
    target: Option<String>,
    names: Option<PathBuf>,
    dump: Option<PathBuf>,
    lookups: usize,
    rate: f64,
    ramp: Option<(f64, f64)>,
    steps: usize,
    step_seconds: f64,
    tcp: bool,
    sockets: usize,
    pid: Option<u32>,
    compare: Option<String>,
    compare_pid: Option<u32>,
    out: Option<String>,
    factor: f64,
    slo_ms: f64,
    max_loss: f64,
    metrics: Option<String>,
    capacity: Option<PathBuf>,
    interval: Option<f64>,
    churn: f64,
    pod_objects: usize,
    persist: bool,
    pin_server: Option<usize>,
}

fn parse(mut it: impl Iterator<Item = String>) -> Result<Args, String> {
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
        pin_server: None,
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
            "--pin-server" => a.pin_server = Some(number(value()?)?),
            "--dump" => a.dump = Some(PathBuf::from(value()?)),
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

fn main() -> ExitCode {
    let raw: Vec<String> = std::env::args().skip(1).collect();
    if raw.is_empty() || raw.iter().any(|a| a == "--help" || a == "-h") {
        println!("{USAGE}");
        return if raw.is_empty() {
            ExitCode::from(64)
        } else {
            ExitCode::SUCCESS
        };
    }
    let args = match parse(raw.into_iter()) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("loadtest: {e}\n{USAGE}");
            return ExitCode::from(64);
        }
    };
    let result = match args.command.as_str() {
        "fakeapi" => fakeapi(&args),
        "watch-bench" => watch_bench(&args),
        "run" => run(&args),
        "knee" => knee(&args),
        "plan" => plan(&args),
        "cluster" => cluster(&args, false),
        "soak" => cluster(&args, true),
        "export-cluster" => {
            println!("{}", synth::dump(&args.shape));
            Ok(())
        }
        "export-zone" => {
            print!("{}", workload::zone_file(&args.shape));
            Ok(())
        }
        other => Err(format!("unknown command '{other}'")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("loadtest: {e}");
            ExitCode::FAILURE
        }
    }
}

fn fakeapi(args: &Args) -> Result<(), String> {
    let rt = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
    rt.block_on(async {
        let api = if args.listen == "127.0.0.1:0" {
            FakeApi::start().await
        } else {
            FakeApi::start_on(&args.listen).await
        }
        .map_err(|e| e.to_string())?;
        synth::populate(&api, &args.shape);
        println!(
            "fake API server on {} with {} services ({} s)",
            api.url(),
            args.shape.services,
            args.seconds
        );
        tokio::time::sleep(Duration::from_secs(args.seconds)).await;
        Ok(())
    })
}

fn watch_bench(args: &Args) -> Result<(), String> {
    let server = args.server.clone().ok_or("--server PATH is required")?;
    let opts = watchbench::Options {
        server,
        shape: args.shape,
        changes: args.changes,
        corefile_extra: String::new(),
        pods: args.pod_objects,
        persist: args.persist,
        pin_server: args.pin_server,
    };
    let r = watchbench::run(&opts)?;
    let s = &args.shape;
    println!(
        "services {} x {} endpoints, {} pods: sync {:.2} s, steady RSS {:.1} MB, change-to-served p50 {:.2} ms p99 {:.2} ms max {:.2} ms ({} changes), relist peak RSS {:.1} MB ({:.2}x steady), relist served a deletion in {:.2} s",
        s.services,
        s.endpoints,
        args.pod_objects,
        r.sync.as_secs_f64(),
        r.steady_rss_kb as f64 / 1024.0,
        r.change_p50.as_secs_f64() * 1e3,
        r.change_p99.as_secs_f64() * 1e3,
        r.change_max.as_secs_f64() * 1e3,
        args.changes,
        r.relist_peak_rss_kb as f64 / 1024.0,
        r.relist_peak_rss_kb as f64 / r.steady_rss_kb.max(1) as f64,
        r.relist_time.as_secs_f64(),
    );
    println!(
        "  CPU during the sync: server {:.2} s, fake API server (this process) {:.2} s",
        r.sync_cpu_server.as_secs_f64(),
        r.sync_cpu_fake.as_secs_f64()
    );
    if let Some(w) = &r.warm {
        println!(
            "  restart with persist during an API outage: answered in {:.2} s (state file {:.1} MB), RSS {:.1} MB; after the API returned, synced (a deletion served) in {:.2} s",
            w.answered.as_secs_f64(),
            w.file_bytes as f64 / 1e6,
            w.rss_kb as f64 / 1024.0,
            w.reconciled.as_secs_f64(),
        );
    }
    Ok(())
}

fn workload_of(args: &Args) -> Result<workload::Workload, String> {
    let read = |path: &PathBuf| std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()));
    match (&args.names, &args.dump) {
        (Some(path), _) => workload::names_file(&read(path)?),
        (None, Some(path)) => {
            let services = workload::services_of_dump(&read(path)?)?;
            Ok(workload::pods_over(
                &services,
                0,
                args.lookups,
                42,
                &path.display().to_string(),
            ))
        }
        (None, None) => Ok(workload::pods(&args.shape, args.lookups, 42)),
    }
}

/// `--target` and the workload, announced.
fn target_and_workload(args: &Args) -> Result<(String, workload::Workload), String> {
    let target = args.target.clone().ok_or("--target ADDR is required")?;
    let w = workload_of(args)?;
    println!(
        "{} ({} queries, {:.2} queries per lookup)",
        w.description,
        w.queries.len(),
        w.amplification()
    );
    Ok((target, w))
}

fn step_of(args: &Args, target: &str, rate: f64) -> Result<Step, String> {
    Ok(Step {
        target: target.parse().map_err(|_| format!("'{target}' is not IP:PORT"))?,
        proto: if args.tcp { Proto::Tcp } else { Proto::Udp },
        rate,
        duration: Duration::from_secs_f64(args.step_seconds),
        sockets: args.sockets,
        timeout: Duration::from_secs(2),
    })
}

fn slo(args: &Args) -> Slo {
    Slo {
        p99_ms: args.slo_ms,
        max_loss: args.max_loss,
    }
}

/// Writes PREFIX.json and PREFIX.svg when asked.
fn write_reports(
    args: &Args,
    rows: &[capacity::Row],
    knee: Option<usize>,
    w: &workload::Workload,
    target: &str,
) -> Result<(), String> {
    let Some(prefix) = &args.out else { return Ok(()) };
    let report = capacity::json(rows, knee, w, slo(args), target);
    let text = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
    std::fs::write(format!("{prefix}.json"), text).map_err(|e| e.to_string())?;
    let title = format!("{target}: {}", w.description);
    std::fs::write(format!("{prefix}.svg"), capacity::svg(rows, knee, &title)).map_err(|e| e.to_string())?;
    println!("wrote {prefix}.json and {prefix}.svg");
    Ok(())
}

fn run(args: &Args) -> Result<(), String> {
    let (target, w) = target_and_workload(args)?;
    let rates = match args.ramp {
        Some((from, to)) => capacity::ramp(args.rate, from, to, args.steps),
        None => vec![args.rate],
    };
    let mut rows = Vec::new();
    let mut other = Vec::new();
    for rate in &rates {
        let row = capacity::measure(&step_of(args, &target, *rate)?, &w, &format!("{rate:.0} qps"), args.pid)
            .map_err(|e| e.to_string())?;
        rows.push(row);
        if let Some(cmp) = &args.compare {
            let label = format!("{cmp} {rate:.0}");
            other.push(
                capacity::measure(&step_of(args, cmp, *rate)?, &w, &label, args.compare_pid)
                    .map_err(|e| e.to_string())?,
            );
        }
    }
    let knee = rows.iter().rposition(|r| slo(args).met(&r.outcome));
    println!("{target}:\n{}", capacity::table(&rows, knee));
    if let Some(cmp) = &args.compare {
        let knee_other = other.iter().rposition(|r| slo(args).met(&r.outcome));
        println!("{cmp}:\n{}", capacity::table(&other, knee_other));
    }
    write_reports(args, &rows, knee, &w, &target)
}

fn knee(args: &Args) -> Result<(), String> {
    let (target, w) = target_and_workload(args)?;
    let template = step_of(args, &target, args.rate)?;
    let (rows, knee) = capacity::find_knee(&template, &w, args.rate, args.factor, 40, slo(args), args.pid)
        .map_err(|e| e.to_string())?;
    println!("{}", capacity::table(&rows, knee));
    match knee {
        Some(k) => {
            let r = &rows[k];
            let per_core = r
                .qps_per_core()
                .map_or(String::new(), |q| format!(", {q:.0} qps per server core"));
            println!(
                "knee: {:.0} qps sustained (p99 {:.3} ms, loss {:.3}%){per_core}",
                r.outcome.achieved(),
                r.outcome.quantile_ms(0.99),
                r.outcome.loss() * 100.0
            );
        }
        None => println!(
            "knee: not reached even at the first step ({:.0} qps): lower --rate",
            args.rate
        ),
    }
    write_reports(args, &rows, knee, &w, &target)
}

fn plan(args: &Args) -> Result<(), String> {
    let url = args.metrics.clone().ok_or("--metrics URL is required")?;
    let load = plan::current(&url, Duration::from_secs_f64(args.interval.unwrap_or(5.0)))?;
    let knee_qps = match &args.capacity {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
            let report: serde_json::Value =
                serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
            Some(
                report["knee"]["achieved_qps"]
                    .as_f64()
                    .ok_or(format!("{}: no knee in the report", path.display()))?,
            )
        }
        None => None,
    };
    print!("{}", plan::report(&load, knee_qps));
    Ok(())
}

fn cluster(args: &Args, soak: bool) -> Result<(), String> {
    let server = args
        .server
        .clone()
        .ok_or("--server PATH (the clusterdns binary) is required")?;
    let default_seconds = if soak { 1800.0 } else { 10.0 };
    let seconds = if args.seconds == 600 {
        default_seconds
    } else {
        args.seconds as f64
    };
    let c = loadtest::churn::Churn {
        server,
        shape: args.shape,
        churn: args.churn,
        rate: args.rate,
        seconds,
        interval: if soak { args.interval.unwrap_or(60.0) } else { seconds },
        forward: soak,
    };
    let r = loadtest::churn::run(&c)?;
    println!(
        "{} Services x {} endpoints, {:.0} changes/s for {seconds:.0} s under {:.0} qps: {} changes ({} not served within 5 s), change-to-served p50 {:.2} ms p99 {:.2} ms max {:.2} ms",
        args.shape.services,
        args.shape.endpoints,
        args.churn,
        args.rate,
        r.changes.len(),
        r.failed_changes,
        r.changes.quantile(0.5).as_secs_f64() * 1e3,
        r.changes.quantile(0.99).as_secs_f64() * 1e3,
        r.changes.max().as_secs_f64() * 1e3
    );
    if soak {
        print!("{}", loadtest::churn::table(&r));
    } else {
        let rows: Vec<capacity::Row> = r.samples.into_iter().map(|x| x.load).collect();
        println!("{}", capacity::table(&rows, None));
        return Ok(());
    }
    if let Some(prefix) = &args.out {
        let title = format!(
            "soak: pods profile at {:.0} qps + {:.0} Service changes/s, {} Services",
            args.rate, args.churn, args.shape.services
        );
        let json = serde_json::to_string_pretty(&loadtest::churn::json(&r)).map_err(|e| e.to_string())?;
        std::fs::write(format!("{prefix}.json"), json).map_err(|e| e.to_string())?;
        std::fs::write(format!("{prefix}.svg"), loadtest::churn::svg(&r, &title)).map_err(|e| e.to_string())?;
        println!("wrote {prefix}.json and {prefix}.svg");
    }
    let (first, last) = (r.samples.first(), r.samples.last());
    if let (Some(a), Some(b)) = (first, last) {
        println!(
            "start vs end: RSS {:.1} -> {:.1} MB, fds {} -> {}, p99 {:.3} -> {:.3} ms",
            a.rss_kb as f64 / 1024.0,
            b.rss_kb as f64 / 1024.0,
            a.fds,
            b.fds,
            a.load.outcome.quantile_ms(0.99),
            b.load.outcome.quantile_ms(0.99)
        );
    }
    Ok(())
}
