//! Network-namespace labs for end-to-end tests that need a "node" and a
//! "pod" (tests/nodelocal.rs): commands run in a namespace, clusterdns
//! started there, and everything removed on drop, also when a test fails.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The namespaces and processes of one run, removed on drop (also when
/// an assertion fails).
pub struct Lab {
    pub node: String,
    pub pod: String,
    pub children: Vec<Child>,
    pub dir: PathBuf,
}

impl Drop for Lab {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        for ns in [&self.node, &self.pod] {
            let _ = Command::new("ip").args(["netns", "del", ns]).output();
        }
    }
}

pub fn out(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

impl Lab {
    /// Creates the namespaces `node` and `pod` (removed again on drop);
    /// `Err` says why this machine cannot (it needs root).
    pub fn create(node: String, pod: String, dir: PathBuf) -> Result<Lab, String> {
        let lab = Lab {
            node,
            pod,
            children: Vec::new(),
            dir,
        };
        for ns in [&lab.node, &lab.pod] {
            let o = Command::new("ip")
                .args(["netns", "add", ns])
                .output()
                .map_err(|e| format!("ip: {e}"))?;
            if !o.status.success() {
                return Err(format!(
                    "cannot create network namespaces (needs root): {}",
                    out(&o).trim()
                ));
            }
        }
        Ok(lab)
    }

    /// Runs `cmd` with sh in namespace `ns`.
    pub fn sh(&self, ns: &str, cmd: &str) -> (bool, String) {
        let o = Command::new("ip")
            .args(["netns", "exec", ns, "sh", "-c", cmd])
            .stdin(Stdio::null())
            .output()
            .expect("run ip netns exec");
        (o.status.success(), out(&o))
    }

    pub fn must(&self, ns: &str, cmd: &str) -> String {
        let (ok, text) = self.sh(ns, cmd);
        assert!(ok, "`{cmd}` in {ns} failed: {text}");
        text
    }

    /// Our rules in `table` (`-S` lines, without kube-proxy's stand-ins).
    pub fn rules(&self, ipt: &str, table: &str) -> Vec<String> {
        let text = self.must(&self.node, &format!("{ipt} -t {table} -S"));
        text.lines()
            .filter(|l| l.starts_with("-A") && !l.contains("ctstate"))
            .map(String::from)
            .collect()
    }

    /// The node-local server's /metrics page (bash's /dev/tcp: no curl needed).
    pub fn metrics(&self, ip: &str, port: u16) -> String {
        let cmd = format!("exec 3<>/dev/tcp/{ip}/{port}; printf 'GET /metrics HTTP/1.0\\r\\n\\r\\n' >&3; cat <&3");
        let o = Command::new("ip")
            .args(["netns", "exec", &self.node, "bash", "-c", &cmd])
            .output()
            .expect("bash");
        out(&o)
    }

    /// `clusterdns doctor` with the Corefile of run `tag`.
    pub fn doctor(&self, tag: &str) -> String {
        let conf = self.dir.join(format!("{tag}.Corefile"));
        let cmd = format!("{} doctor -conf {}", env!("CARGO_BIN_EXE_clusterdns"), conf.display());
        self.sh(&self.node, &cmd).1
    }

    pub fn dig(&self, server: &str, name: &str, tcp: bool) -> String {
        let flag = if tcp { "+tcp" } else { "+notcp" };
        let cmd = format!("dig {flag} +short +time=2 +tries=1 @{server} {name} A");
        self.sh(&self.pod, &cmd).1.trim().to_string()
    }

    /// Starts clusterdns in the node namespace with `corefile`; returns
    /// its index in `children` and its log file.
    pub fn start(&mut self, tag: &str, corefile: &str) -> (usize, PathBuf) {
        let conf = self.dir.join(format!("{tag}.Corefile"));
        std::fs::write(&conf, corefile).expect("write Corefile");
        let log = self.dir.join(format!("{tag}.log"));
        let child = Command::new("ip")
            .args(["netns", "exec", &self.node, env!("CARGO_BIN_EXE_clusterdns"), "-conf"])
            .arg(&conf)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("log file"))
            .spawn()
            .expect("start clusterdns");
        self.children.push(child);
        (self.children.len() - 1, log)
    }

    /// SIGTERM to child `i`; waits for it to exit (at most 10 s).
    pub fn stop(&mut self, i: usize) -> bool {
        let pid = self.children[i].id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        let deadline = Instant::now() + HANG;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.children[i].try_wait() {
                return status.success();
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("clusterdns did not exit within {HANG:?} of SIGTERM");
    }
}

/// The ceiling of every wait for an event here: only a hang reaches it,
/// never a busy machine.
pub const HANG: Duration = Duration::from_secs(60);

/// Waits until `log` holds `text` (until [`HANG`]); returns the log.
pub fn wait_log(log: &Path, text: &str) -> String {
    let deadline = Instant::now() + HANG;
    loop {
        let now = std::fs::read_to_string(log).unwrap_or_default();
        if now.contains(text) {
            return now;
        }
        assert!(
            Instant::now() < deadline,
            "no '{text}' in {} within {HANG:?}:\n{now}",
            log.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Polls `check` until it holds or [`HANG`] has passed.
pub fn eventually(mut check: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + HANG;
    while Instant::now() < deadline {
        if check() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    check()
}
