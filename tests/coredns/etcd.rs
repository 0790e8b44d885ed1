//! A table's `etcd <<` block: a real etcd (Debian's `etcd-server`)
//! started in the table's directory on loopback ports of its own, each
//! line `KEY VALUE` written with `etcdctl put` before any server starts;
//! `{etcd}` in a Corefile is its endpoint URL. Killed with the table.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long etcd may take to answer (a hang, not a slow machine).
const HANG: Duration = Duration::from_secs(60);

/// A running, seeded etcd.
pub struct Etcd {
    child: Child,
    pub endpoint: String,
}

impl Drop for Etcd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A port free on 127.0.0.1 now.
fn free_port() -> Result<u16, String> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    Ok(l.local_addr().map_err(|e| e.to_string())?.port())
}

/// Whether `tool` is on the PATH (or in an sbin directory).
pub fn installed(tool: &str) -> bool {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin"].map(Into::into))
        .any(|d| d.join(tool).is_file())
}

impl Etcd {
    /// etcd in `dir` holding `lines` (`KEY VALUE`, with their line numbers).
    pub fn start(dir: &Path, lines: &[(usize, String)]) -> Result<Etcd, String> {
        let (client, peer) = (free_port()?, free_port()?);
        let (c, p) = (format!("http://127.0.0.1:{client}"), format!("http://127.0.0.1:{peer}"));
        let log = std::fs::File::create(dir.join("etcd.log")).map_err(|e| e.to_string())?;
        let child = Command::new("etcd")
            .args(["--name", "t", "--data-dir"])
            .arg(dir.join("etcd.data"))
            .args(["--listen-client-urls", &c, "--advertise-client-urls", &c])
            .args(["--listen-peer-urls", &p, "--initial-advertise-peer-urls", &p])
            .args(["--initial-cluster", &format!("t={p}"), "--log-level", "warn"])
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|e| format!("etcd: {e}"))?;
        let etcd = Etcd { child, endpoint: c };
        let started = Instant::now();
        while etcd.ctl(&["endpoint", "health"]).is_err() {
            if started.elapsed() > HANG {
                return Err("etcd never became healthy".into());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        for (n, line) in lines.iter().filter(|(_, l)| !l.trim().is_empty()) {
            let (key, value) = line
                .trim()
                .split_once(char::is_whitespace)
                .ok_or(format!("{n}: not KEY VALUE"))?;
            etcd.ctl(&["put", key, value.trim()]).map_err(|e| format!("{n}: {e}"))?;
        }
        Ok(etcd)
    }

    /// `etcdctl ARGS` (v3 API) against this etcd.
    fn ctl(&self, args: &[&str]) -> Result<(), String> {
        let out = Command::new("etcdctl")
            .env("ETCDCTL_API", "3")
            .arg(format!("--endpoints={}", self.endpoint))
            .args(args)
            .output()
            .map_err(|e| format!("etcdctl: {e}"))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!("etcdctl {args:?}: {}", String::from_utf8_lossy(&out.stderr)))
        }
    }
}
