//! `loadtest`: the load tester for clusterdns.
//!
//! ```text
//! loadtest fakeapi [--listen ADDR] [--namespaces N] [--services N] [--endpoints K] [--seconds S]
//!     serve a synthetic cluster from the fake Kubernetes API server
//!     (try: kubectl --server=http://ADDR get svc -A)
//! loadtest watch-bench --server PATH [--namespaces N] [--services N] [--endpoints K] [--changes M] [--pod-objects N] [--imports N] [--persist] [--pin-server CPU]
//!     initial sync time, RSS, change-to-served latency and relist peak RSS; --pod-objects N adds
//!     N Pods (`pods verified`); --persist also restarts the server warm during an API outage;
//!     --imports N adds N ServiceImports x 3 clusters (`multicluster clusterset.local`) and times their changes too
//! loadtest run --target ADDR|resolv.conf (--names FILE | --pods [--services-from api|KUBECTL.json | --namespaces N --services N] [--lookups L])
//!         [--rate QPS] [--ramp 1x..5x --steps N] [--step-duration S] [--tcp] [--sockets N]
//!         [--pid PID] [--compare ADDR [--compare-pid PID]] [--out PREFIX] [--log-report]
//!         [--index I --of N --start-at UNIX_TIME]
//!     open-loop load at fixed rates (or a growth ramp); table, PREFIX.json, PREFIX.svg
//!     (--log-report: the JSON on stdout between markers, for `kubectl logs`); with --of N,
//!     generator I (default $JOB_COMPLETION_INDEX) offers 1/N of each rate, steps starting together
//! loadtest knee --target ADDR (...workload...) [--rate START] [--factor F] [--slo-ms MS] [--max-loss FRACTION]
//!     ramp until p99 > SLO or loss > 0.1%: the highest sustainable qps (per core with --pid)
//! loadtest merge REPORT... [--out PREFIX]
//!     the reports (JSON files or logs) of N generators as one: qps summed, histograms added
//! loadtest plan --metrics URL [--capacity REPORT.json] [--interval S]
//!     today's qps by type, protocol, rcode and search-expansion share; replicas at 1x, 2x, 5x
//! loadtest export-zone [--namespaces N] [--services N]
//!     the synthetic cluster's names as a zone file (for Knot, NSD, BIND)
//! loadtest export-cluster [--namespaces N] [--services N] [--endpoints K]
//!     the synthetic cluster as a kubectl JSON dump (for the `snapshot FILE` source)
//! loadtest cluster --server PATH [--services N] [--endpoints-per-service K] [--churn R] [--rate QPS] [--seconds S] [--pin-server CPU]
//!     the fake API serving a synthetic cluster, clusterdns watching it, R changes/s under query
//!     load: change-to-served latency and the load's outcome
//! loadtest soak --server PATH [--services N] [--churn R] [--rate QPS] [--seconds S] [--interval S] [--out PREFIX]
//!     the same for 30 minutes (default) with forwarding + cache to a stub upstream, sampled every
//!     --interval s (default 60): RSS, open fds, p99 per sample; PREFIX.json and PREFIX.svg
//! loadtest handshakes --target ADDR --names FILE [--sockets N] [--seconds S]
//!     new DNS over TLS connections per second: N at a time, each a full TLS 1.3 handshake,
//!     one query, closed (one thread; the client's own CPU time printed too)
//! ```

mod args;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use loadtest::capacity::{self, Slo};
use loadtest::engine::{Proto, Step};
use loadtest::fakeapi::FakeApi;
use loadtest::report::{self, Generator, Report};
use loadtest::schedule::Schedule;
use loadtest::synth;
use loadtest::watchbench;
use loadtest::{incluster, merge, plan, workload};

use args::{parse, Args};

const USAGE: &str = "usage:\n  loadtest fakeapi [--listen ADDR] [--namespaces N] [--services N] [--endpoints K] [--seconds S]\n  loadtest watch-bench --server PATH [--namespaces N] [--services N] [--endpoints K] [--changes M] [--pod-objects N] [--imports N] [--persist] [--pin-server CPU]\n  loadtest run --target ADDR|resolv.conf (--names FILE | --pods [--services-from api|DUMP.json]) [--rate QPS] [--ramp 1x..5x --steps N] [--step-duration S] [--tcp] [--sockets N] [--pid PID] [--compare ADDR [--compare-pid PID]] [--out PREFIX] [--log-report] [--index I --of N --start-at UNIX_TIME]\n  loadtest knee --target ADDR|resolv.conf (--names FILE | --pods ...) [--rate START] [--factor F] [--slo-ms MS] [--max-loss F] [--pid PID] [--out PREFIX] [--log-report] [--index I --of N --start-at UNIX_TIME]\n  loadtest merge REPORT... [--out PREFIX]\n  loadtest plan --metrics URL [--capacity REPORT.json] [--interval S]\n  loadtest export-zone [--namespaces N] [--services N]\n  loadtest export-cluster [--namespaces N] [--services N] [--endpoints K]\n  loadtest cluster --server PATH [--services N] [--endpoints-per-service K] [--churn R] [--rate QPS] [--seconds S] [--pin-server CPU]\n  loadtest soak --server PATH [--services N] [--churn R] [--rate QPS] [--seconds S] [--interval S] [--out PREFIX]\n  loadtest handshakes --target ADDR --names FILE [--sockets N] [--seconds S]";

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
        "merge" => merge(&args),
        "plan" => plan(&args),
        "cluster" => cluster(&args, false),
        "soak" => cluster(&args, true),
        "handshakes" => handshakes(&args),
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

fn handshakes(args: &Args) -> Result<(), String> {
    let target = args.target.as_deref().ok_or("--target ADDR is required")?;
    let target = target
        .parse()
        .map_err(|_| format!("--target: '{target}' is not IP:PORT"))?;
    let names = args.names.as_ref().ok_or("--names FILE is required")?;
    let text = std::fs::read_to_string(names).map_err(|e| format!("{}: {e}", names.display()))?;
    let opts = loadtest::handshakes::Options {
        target,
        seconds: args.seconds as f64,
        connections: args.sockets,
        queries: workload::names_file(&text)?.queries,
    };
    let o = loadtest::handshakes::run(&opts)?;
    let secs = o.elapsed.as_secs_f64();
    println!(
        "handshakes {} answered {} failed {} seconds {secs:.2} rate {:.1} client-cpu {:.2}",
        o.handshakes,
        o.answered,
        o.failed,
        o.handshakes as f64 / secs,
        o.cpu.as_secs_f64() / secs
    );
    Ok(())
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
        imports: args.imports,
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
    println!(
        "  steady RSS: anonymous {:.1} MB, file-backed {:.1} MB (the binary's pages: more when the file is fresh in the page cache)",
        r.steady_anon_kb as f64 / 1024.0,
        r.steady_file_kb as f64 / 1024.0
    );
    if args.imports > 0 {
        let l = &r.import_changes;
        println!(
            "  {} ServiceImports x 3 clusters x {} endpoints besides: ServiceImport change-to-served p50 {:.2} ms p99 {:.2} ms max {:.2} ms ({} changes)",
            args.imports,
            s.endpoints,
            l.quantile(0.5).as_secs_f64() * 1e3,
            l.quantile(0.99).as_secs_f64() * 1e3,
            l.max().as_secs_f64() * 1e3,
            l.len(),
        );
    }
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
            let (services, source) = if path.as_os_str() == "api" {
                let rt = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
                (rt.block_on(incluster::services())?, "the Kubernetes API".to_string())
            } else {
                (workload::services_of_dump(&read(path)?)?, path.display().to_string())
            };
            Ok(workload::pods_over(&services, 0, args.lookups, 42, &source))
        }
        (None, None) => Ok(workload::pods(&args.shape, args.lookups, 42)),
    }
}

/// `--target` and the workload (this generator's rotation of it), announced.
fn target_and_workload(args: &Args, schedule: &Schedule) -> Result<(String, workload::Workload), String> {
    let target = incluster::target(args.target.as_deref().ok_or("--target ADDR is required")?)?.to_string();
    let mut w = workload_of(args)?;
    schedule.rotate(&mut w.queries);
    println!(
        "{} ({} queries, {:.2} queries per lookup)",
        w.description,
        w.queries.len(),
        w.amplification()
    );
    Ok((target, w))
}

fn schedule_of(args: &Args) -> Result<Schedule, String> {
    Schedule::new(args.index, args.of, args.start_at, args.step_seconds, TIMEOUT)
}

/// How long a query may wait for its answer before it counts as lost.
const TIMEOUT: Duration = Duration::from_secs(2);

fn step_of(args: &Args, target: &str, rate: f64) -> Result<Step, String> {
    Ok(Step {
        target: target.parse().map_err(|_| format!("'{target}' is not IP:PORT"))?,
        proto: if args.tcp { Proto::Tcp } else { Proto::Udp },
        rate,
        duration: Duration::from_secs_f64(args.step_seconds),
        sockets: args.sockets,
        timeout: TIMEOUT,
        yield_idle: args.of > 1,
    })
}

fn slo(args: &Args) -> Slo {
    Slo {
        p99_ms: args.slo_ms,
        max_loss: args.max_loss,
    }
}

/// Writes PREFIX.json and PREFIX.svg, and the report to stdout between
/// markers, when asked.
fn write_reports(
    args: &Args,
    rows: Vec<capacity::Row>,
    knee: Option<usize>,
    w: &workload::Workload,
    target: &str,
    schedule: &Schedule,
) -> Result<(), String> {
    let (host, node) = incluster::identity();
    let report = Report {
        target: target.to_string(),
        workload: w.description.clone(),
        amplification: w.amplification(),
        slo: slo(args),
        generators: vec![Generator {
            index: schedule.index,
            of: schedule.of,
            host,
            node,
            pid: std::process::id(),
            start_at: schedule.start_at,
            slot_seconds: schedule.slot,
            first_step: rows.first().map(|r| r.started),
        }],
        rows,
    };
    if args.log_report {
        print!("{}", report::to_log(&report::json(&report, knee)));
    }
    if let Some(prefix) = &args.out {
        report::write_files(prefix, &report, knee)?;
        println!("wrote {prefix}.json and {prefix}.svg");
    }
    Ok(())
}

fn run(args: &Args) -> Result<(), String> {
    let schedule = schedule_of(args)?;
    let (target, w) = target_and_workload(args, &schedule)?;
    let rate = schedule.share(args.rate);
    let rates = match args.ramp {
        Some((from, to)) => capacity::ramp(rate, from, to, args.steps),
        None => vec![rate],
    };
    let mut rows = Vec::new();
    let mut other = Vec::new();
    for (k, rate) in rates.iter().enumerate() {
        schedule.wait(k);
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
    write_reports(args, rows, knee, &w, &target, &schedule)
}

fn knee(args: &Args) -> Result<(), String> {
    let schedule = schedule_of(args)?;
    let (target, w) = target_and_workload(args, &schedule)?;
    let start = schedule.share(args.rate);
    let template = step_of(args, &target, start)?;
    let (rows, knee) = capacity::find_knee(&template, &w, start, args.factor, 40, slo(args), args.pid, &schedule)
        .map_err(|e| e.to_string())?;
    println!("{}", capacity::table(&rows, knee));
    println!("{}", capacity::knee_line(&rows, knee));
    write_reports(args, rows, knee, &w, &target, &schedule)
}

fn merge(args: &Args) -> Result<(), String> {
    if args.files.is_empty() {
        return Err("merge needs the reports: loadtest merge REPORT.json... (or logs with framed reports)".into());
    }
    let reports = merge::read_files(&args.files)?;
    let m = merge::merge(&reports)?;
    println!(
        "{} reports from {} file(s), {} generators: {}",
        reports.len(),
        args.files.len(),
        m.report.generators.len(),
        m.report.target
    );
    for note in &m.notes {
        println!("note: {note}");
    }
    println!("{}", capacity::table(&m.report.rows, m.knee));
    println!("{}", capacity::knee_line(&m.report.rows, m.knee));
    if let Some(prefix) = &args.out {
        report::write_files(prefix, &m.report, m.knee)?;
        println!("wrote {prefix}.json and {prefix}.svg");
    }
    Ok(())
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
        pin_server: args.pin_server,
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
