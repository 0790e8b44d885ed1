//! The `clusterdns` binary, as a runbook: flags → config → run → drain.
//!
//! ```text
//! clusterdns [-conf FILE] [-dns.port N]     serve (no -conf: ./Corefile, else zones/Corefile)
//! clusterdns check [-conf FILE]             validate, print the effective configuration
//! clusterdns migrate FILE [--domain D]      a kube-dns ConfigMap or an older Corefile → a Corefile
//! clusterdns doctor [-conf FILE] [--root DIR] [--resolv FILE]
//!                                           node and pod settings that break cluster DNS
//! clusterdns -version
//! ```
//! Exit codes: 0 done, 64 bad usage or configuration, 1 runtime failure.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

const USAGE: &str = "usage: clusterdns [check|doctor] [-conf FILE] [-dns.port PORT] [-version]\n       clusterdns doctor [-conf FILE] [--root DIR] [--resolv POD-RESOLV-CONF]\n       clusterdns migrate [FILE | -conf FILE | -] [--domain DOMAIN]";
const EXIT_CONFIG: u8 = 64;

struct Flags {
    check: bool,
    doctor: bool,
    conf: Option<PathBuf>,
    port: u16,
    /// `doctor`: where /proc is read from, and a pod resolv.conf to analyse.
    root: PathBuf,
    resolv: Option<PathBuf>,
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("migrate") {
        return ExitCode::from(clusterdns::migrate::main(&args[1..]));
    }
    let flags = match parse_flags(std::env::args().skip(1)) {
        Ok(Some(f)) => f,
        Ok(None) => return ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("clusterdns: {msg}\n{USAGE}");
            return ExitCode::from(EXIT_CONFIG);
        }
    };
    init_logging();
    if flags.doctor {
        return doctor(&flags);
    }
    let path = flags.conf.clone().unwrap_or_else(default_corefile);
    let config = match clusterdns::config::load(&path, flags.port) {
        Ok(c) => c,
        Err(errors) => {
            eprintln!("{errors}");
            eprintln!("clusterdns: {} error(s) in {}", errors.0.len(), path.display());
            return ExitCode::from(EXIT_CONFIG);
        }
    };
    if flags.check {
        print!("{config}");
        return ExitCode::SUCCESS;
    }
    match serve(config) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Prints every finding; exit 1 when one is critical.
fn doctor(flags: &Flags) -> ExitCode {
    let path = flags.conf.clone().unwrap_or_else(default_corefile);
    let (upstream_resolv, nodelocal) = match clusterdns::config::load(&path, flags.port) {
        Ok(c) => (
            c.servers
                .iter()
                .flat_map(|s| &s.forward)
                .flat_map(|f| f.files.clone())
                .collect(),
            c.nodelocal,
        ),
        Err(errors) => {
            println!(
                "(not checking upstreams: {} does not load: {} error(s); see clusterdns check)",
                path.display(),
                errors.0.len()
            );
            (Vec::new(), None)
        }
    };
    let mut findings = clusterdns::doctor::check(&clusterdns::doctor::Inputs {
        root: flags.root.clone(),
        upstream_resolv,
        pod_resolv: flags.resolv.clone(),
        pods: None,
        sockets: None,
    });
    // A node-local node: its interface, rules and conntrack bypass.
    if let Some(n) = nodelocal {
        match tokio::runtime::Builder::new_current_thread().enable_all().build() {
            Ok(rt) => findings.extend(rt.block_on(clusterdns::nodelocal::doctor::check(&n))),
            Err(e) => println!("(not checking nodelocal: {e})"),
        }
    }
    if findings.is_empty() {
        println!("no findings: this node's DNS-relevant settings look right");
    }
    for f in &findings {
        println!("{f}");
    }
    let critical = findings
        .iter()
        .any(|f| f.severity == clusterdns::doctor::Severity::Critical);
    if critical {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn serve(config: clusterdns::config::Config) -> anyhow::Result<()> {
    tracing::info!(
        "clusterdns {} starting with {}",
        env!("CARGO_PKG_VERSION"),
        config.path.display()
    );
    raise_fd_limit();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("clusterdns-rt")
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    // The handlers are installed now, before anything listens: a SIGTERM
    // that arrives as soon as the server reports ready is a graceful stop
    // (lameduck, drain, exit 0), never the default action's kill.
    let shutdown = {
        let _entered = runtime.enter();
        shutdown_signal()
    };
    runtime.block_on(clusterdns::app::run(config, shutdown))?;
    Ok(())
}

/// Raises the open-file limit to its hard limit (as Go does for CoreDNS):
/// every TCP client and every forwarded query in flight holds a socket.
fn raise_fd_limit() {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let limit = getrlimit(Resource::Nofile);
    if limit.current < limit.maximum {
        let raised = Rlimit {
            current: limit.maximum,
            maximum: limit.maximum,
        };
        if let Err(e) = setrlimit(Resource::Nofile, raised) {
            tracing::warn!("could not raise the open-file limit from {:?}: {e}", limit.current);
        }
    }
    let now = getrlimit(Resource::Nofile).current;
    tracing::info!(
        "open-file limit {}",
        now.map_or("unlimited".to_string(), |n| n.to_string())
    );
}

/// Installs the SIGTERM and SIGINT handlers at once (inside the runtime);
/// the future it returns completes at the first of them.
fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    use tokio::signal::unix::{signal, SignalKind};
    let handlers = (signal(SignalKind::terminate()), signal(SignalKind::interrupt()));
    async move {
        match handlers {
            (Ok(mut term), Ok(mut int)) => {
                tokio::select! {
                    _ = term.recv() => tracing::info!("SIGTERM received"),
                    _ = int.recv() => tracing::info!("SIGINT received"),
                }
            }
            (Err(e), _) | (_, Err(e)) => {
                tracing::warn!("no SIGTERM/SIGINT handler ({e}): stopped only by SIGKILL");
                std::future::pending().await
            }
        }
    }
}

fn default_corefile() -> PathBuf {
    let local = PathBuf::from("Corefile");
    if local.is_file() {
        local
    } else {
        PathBuf::from("zones/Corefile")
    }
}

fn init_logging() {
    use tracing_subscriber::{layer::SubscriberExt, reload, util::SubscriberInitExt, EnvFilter};
    let from_env = EnvFilter::try_from_default_env().ok();
    let explicit = from_env.is_some();
    let (filter, handle) = reload::Layer::new(from_env.unwrap_or_else(|| EnvFilter::new("info")));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_ansi(ansi);
    tracing_subscriber::registry().with(filter).with(fmt).init();
    if !explicit {
        // `debug` in the Corefile: the plugins' debug events, not the libraries'.
        clusterdns::app::on_log_debug(move |on| {
            let level = if on { DEBUG_FILTER } else { "info" };
            let _ = handle.reload(EnvFilter::new(level));
        });
    }
}

/// The log filter under `debug`: clusterdns's debug events, the
/// libraries' at info.
const DEBUG_FILTER: &str = "debug,hyper=info,hyper_util=info,h2=info,rustls=info,tokio_rustls=info,kube=info,\
kube_client=info,kube_runtime=info,tower=info,tower_http=info,hickory_proto=info,netlink_proto=info,rtnetlink=info,mio=info";

/// `Ok(None)`: a flag that only prints (help, version) was handled.
fn parse_flags(mut args: impl Iterator<Item = String>) -> Result<Option<Flags>, String> {
    let mut flags = Flags {
        check: false,
        doctor: false,
        conf: None,
        port: 53,
        root: PathBuf::from("/"),
        resolv: None,
    };
    let mut first = true;
    while let Some(arg) = args.next() {
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) if n.starts_with('-') => (n.to_string(), Some(v.to_string())),
            _ => (arg.clone(), None),
        };
        let mut value = |what: &str| {
            inline
                .clone()
                .or_else(|| args.next())
                .ok_or(format!("{name} needs {what}"))
        };
        match name.trim_start_matches('-') {
            "check" if first && !name.starts_with('-') => flags.check = true,
            "doctor" if first && !name.starts_with('-') => flags.doctor = true,
            "root" if flags.doctor => flags.root = PathBuf::from(value("a directory")?),
            "resolv" if flags.doctor => flags.resolv = Some(PathBuf::from(value("a file")?)),
            "conf" => flags.conf = Some(PathBuf::from(value("a file")?)),
            "dns.port" => {
                flags.port = value("a port")?
                    .parse()
                    .map_err(|_| "-dns.port needs a port number".to_string())?
            }
            "version" => {
                println!("clusterdns-{}", env!("CARGO_PKG_VERSION"));
                return Ok(None);
            }
            "h" | "help" => {
                println!("{USAGE}");
                return Ok(None);
            }
            _ => return Err(format!("unknown argument '{arg}'")),
        }
        first = false;
    }
    Ok(Some(flags))
}
