//! Running a table's Corefile: its server-block keys rewritten to port 0
//! with a `bind` added, admin endpoints moved to 127.0.0.1:0, a `ready`
//! added when it has none; the binary started, its listening addresses read
//! from its log, and `/ready` polled. Tables with `from` addresses run in a
//! network namespace of their own (`Netns`), entered by the calling thread.

use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A network namespace, deleted on drop. The thread that made it lives in
/// it from then on (and so do the threads and processes it starts).
pub struct Netns {
    name: String,
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.name]).output();
    }
}

fn ip(args: &[&str]) -> Result<(), String> {
    let o = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("ip: {e} (install iproute2)"))?;
    if o.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&o.stderr).trim()
        ))
    }
}

impl Netns {
    /// Creates namespace `name` and moves this thread into it (`Err` when
    /// this machine cannot: no root, no iproute2).
    pub fn enter(name: &str) -> Result<Netns, String> {
        ip(&["netns", "add", name])?;
        let ns = Netns { name: name.to_string() };
        let file = std::fs::File::open(format!("/run/netns/{name}")).map_err(|e| format!("open netns {name}: {e}"))?;
        nix::sched::setns(&file, nix::sched::CloneFlags::CLONE_NEWNET).map_err(|e| format!("setns {name}: {e}"))?;
        Ok(ns)
    }

    /// Brings `lo` up and adds `addrs` to it.
    pub fn addresses(&self, addrs: &[IpAddr]) -> Result<(), String> {
        ip(&["link", "set", "lo", "up"])?;
        let mut addrs = addrs.to_vec();
        addrs.sort();
        addrs.dedup();
        for a in &addrs {
            if a.is_loopback() {
                continue;
            }
            match a {
                IpAddr::V4(_) => ip(&["addr", "add", &format!("{a}/32"), "dev", "lo"])?,
                IpAddr::V6(_) => ip(&["-6", "addr", "add", &format!("{a}/128"), "dev", "lo", "nodad"])?,
            }
        }
        Ok(())
    }
}

/// The first word of a line, without a trailing `{`.
fn directive(line: &str) -> &str {
    line.split_whitespace().next().unwrap_or("").trim_end_matches('{')
}

/// A server-block key on port 0 (`example.org:53` → `example.org:0`).
fn key_port0(key: &str) -> String {
    let (scheme, rest) = key.split_once("://").map_or(("", key), |(s, r)| (s, r));
    let host = match rest.rsplit_once(':') {
        Some((h, p)) if p.chars().all(|c| c.is_ascii_digit()) => h,
        _ => rest,
    };
    let scheme = if scheme.is_empty() {
        String::new()
    } else {
        format!("{scheme}://")
    };
    format!("{scheme}{host}:0")
}

/// The Corefile as run: keys on port 0, `bind` and `ready` added, admin
/// addresses on 127.0.0.1:0. Returns it and whether `bind` was added.
pub fn rewrite(corefile: &str, bind: &[IpAddr]) -> (String, bool) {
    let has = |d: &str| corefile.lines().any(|l| directive(l) == d);
    let (add_bind, mut add_ready) = (!has("bind"), !has("ready"));
    let binds = bind.iter().map(ToString::to_string).collect::<Vec<_>>().join(" ");
    let mut out = String::new();
    let mut depth = 0i32;
    for line in corefile.lines() {
        let trimmed = line.trim();
        let opens = trimmed.ends_with('{');
        if depth == 0 && opens && !trimmed.starts_with('(') {
            let keys: Vec<String> = trimmed
                .trim_end_matches('{')
                .split_whitespace()
                .map(key_port0)
                .collect();
            out.push_str(&format!("{} {{\n", keys.join(" ")));
            if add_bind {
                out.push_str(&format!("    bind {binds}\n"));
            }
            if add_ready {
                out.push_str("    ready 127.0.0.1:0\n");
                add_ready = false;
            }
        } else if depth == 1 && ["health", "ready", "prometheus"].contains(&directive(trimmed)) {
            let word = directive(trimmed);
            out.push_str(&format!("    {word} 127.0.0.1:0{}\n", if opens { " {" } else { "" }));
        } else {
            out.push_str(line);
            out.push('\n');
        }
        depth += trimmed.matches('{').count() as i32 - trimmed.matches('}').count() as i32;
    }
    (out, add_bind)
}

/// A running clusterdns, killed on drop.
pub struct Running {
    child: Child,
    pub dns: Vec<SocketAddr>,
    /// Its stderr and stdout lines (the `log` plugin writes to stdout).
    pub log: Arc<Mutex<Vec<String>>>,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Running {
    /// The listener of `family` to send a query from `from` to.
    pub fn target(&self, from: Option<IpAddr>) -> Option<SocketAddr> {
        let v6 = from.is_some_and(|a| a.is_ipv6());
        self.dns.iter().copied().find(|a| a.is_ipv6() == v6)
    }

    pub fn log_text(&self) -> String {
        self.log.lock().map(|l| l.join("\n")).unwrap_or_default()
    }
}

/// Starts the binary on `conf` and waits until it listens on `listeners`
/// addresses and (if `ready`) `/ready` answers 200 (20 s at most).
pub fn start(conf: &Path, listeners: usize, ready_wait: bool) -> Result<Running, String> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_clusterdns"))
        .arg("-conf")
        .arg(conf)
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("start clusterdns: {e}"))?;
    let stderr = child.stderr.take().ok_or("no stderr")?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let log = Arc::new(Mutex::new(Vec::new()));
    let rx = crate::common::follow(stderr, log.clone());
    // Nobody waits on stdout's lines; they are only kept.
    drop(crate::common::follow(stdout, log.clone()));
    let mut running = Running {
        child,
        dns: Vec::new(),
        log,
    };
    let mut ready = None;
    let deadline = Instant::now() + crate::wire::HANG;
    while running.dns.len() < listeners || ready.is_none() {
        let left = deadline.saturating_duration_since(Instant::now());
        let Ok(line) = rx.recv_timeout(left) else {
            return Err(format!("server did not start:\n{}", running.log_text()));
        };
        if let Some(a) = line
            .split("listening on udp ")
            .nth(1)
            .and_then(|a| a.trim().parse().ok())
        {
            running.dns.push(a);
        }
        if let Some(a) = line.split("listening on ready http://").nth(1) {
            ready = a.trim().parse::<SocketAddr>().ok();
        }
    }
    let ready = ready.ok_or("no ready address")?;
    while ready_wait && Instant::now() < deadline {
        if crate::common::http_get(ready, "/ready").starts_with("HTTP/1.1 200") {
            return Ok(running);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    if !ready_wait {
        return Ok(running);
    }
    Err(format!("server not ready within 20 s:\n{}", running.log_text()))
}
