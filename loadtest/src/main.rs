//! `loadtest`: the load tester for clusterdns.
//!
//! ```text
//! loadtest fakeapi [--listen ADDR] [--namespaces N] [--services N] [--endpoints K] [--seconds S]
//!     serve a synthetic cluster from the fake Kubernetes API server
//!     (try: kubectl --server=http://ADDR get svc -A)
//! loadtest watch-bench --server PATH [--namespaces N] [--services N] [--endpoints K] [--changes M]
//!     initial sync time, RSS, change-to-served latency and relist peak RSS
//! ```
//! The query generator, pods profile, capacity knee and reports are tracked
//! in their own issue; until then `dnsperf` drives query load
//! (loadtest/bench/compare-knot.sh).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use loadtest::fakeapi::FakeApi;
use loadtest::synth::{self, Shape};
use loadtest::watchbench;

const USAGE: &str = "usage:\n  loadtest fakeapi [--listen ADDR] [--namespaces N] [--services N] [--endpoints K] [--seconds S]\n  loadtest watch-bench --server PATH [--namespaces N] [--services N] [--endpoints K] [--changes M]";

struct Args {
    command: String,
    listen: String,
    shape: Shape,
    seconds: u64,
    server: Option<PathBuf>,
    changes: usize,
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
    };
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        let number = |v: String| v.parse::<usize>().map_err(|_| format!("{flag}: '{v}' is not a number"));
        match flag.as_str() {
            "--listen" => a.listen = value()?,
            "--namespaces" => a.shape.namespaces = number(value()?)?.max(1),
            "--services" => a.shape.services = number(value()?)?,
            "--endpoints" => a.shape.endpoints = number(value()?)?,
            "--seconds" => a.seconds = number(value()?)? as u64,
            "--server" => a.server = Some(PathBuf::from(value()?)),
            "--changes" => a.changes = number(value()?)?,
            other => return Err(format!("unknown flag '{other}'")),
        }
    }
    Ok(a)
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
    };
    let r = watchbench::run(&opts)?;
    let s = &args.shape;
    println!(
        "services {} x {} endpoints: sync {:.2} s, steady RSS {:.1} MB, change-to-served p50 {:.2} ms p99 {:.2} ms max {:.2} ms ({} changes), relist peak RSS {:.1} MB ({:.2}x steady, {:.1} s)",
        s.services,
        s.endpoints,
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
    Ok(())
}
