//! BIND's `named` as a primary, started by a test on 127.0.0.1 on a port of
//! its own, serving zone files the test writes in its directory
//! (`db.ZONE`), killed on drop.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use super::{installed, needs};

/// A running `named`, killed on drop.
pub struct Named {
    child: Child,
    dir: PathBuf,
}

impl Named {
    /// named as the primary of `zones` (each read from `dir/db.ZONE`) on
    /// `port`; its NOTIFY goes to the `notify_to` ports (and nowhere else),
    /// none when empty.
    pub fn start(bin: &Path, dir: &Path, port: u16, notify_to: &[u16], zones: &[&str]) -> Named {
        let notify = if notify_to.is_empty() {
            "notify no;".to_string()
        } else {
            let to: String = notify_to.iter().map(|p| format!("127.0.0.1 port {p}; ")).collect();
            format!("notify explicit;\n    also-notify {{ {to}}};")
        };
        let zones: String = zones
            .iter()
            .map(|z| format!("zone \"{z}\" {{\n    type primary;\n    file \"db.{z}\";\n}};\n"))
            .collect();
        let conf = format!(
            "options {{\n    directory \"{d}\";\n    pid-file \"{d}/named.pid\";\n    listen-on port {port} {{ 127.0.0.1; }};\n    listen-on-v6 {{ none; }};\n    recursion no;\n    dnssec-validation no;\n    allow-transfer {{ any; }};\n    ixfr-from-differences yes;\n    max-ixfr-ratio unlimited;\n    {notify}\n}};\ncontrols {{ }};\n{zones}",
            d = dir.display()
        );
        std::fs::write(dir.join("named.conf"), conf).expect("write named.conf");
        let log = std::fs::File::create(dir.join("named.log")).expect("named log");
        let child = Command::new(bin)
            .args(["-g", "-u", "root", "-c"])
            .arg(dir.join("named.conf"))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start named");
        Named {
            child,
            dir: dir.to_path_buf(),
        }
    }

    /// Tells named to load its zone files again (SIGHUP), as `rndc reload` does.
    pub fn reload(&self) {
        let status = Command::new("kill")
            .args(["-HUP", &self.child.id().to_string()])
            .status()
            .expect("kill -HUP");
        assert!(status.success());
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("named.log")).unwrap_or_default()
    }
}

impl Drop for Named {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// named's path, or `None` (SKIP outside CI) when it is not installed.
pub fn named_or_skip(test: &str) -> Option<PathBuf> {
    needs(
        test,
        installed("named"),
        "apt-get install bind9 (tests/run installs it)",
    )
}
