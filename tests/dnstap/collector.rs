//! The collectors the dnstap tests send to, all real programs: Debian's
//! `dnstap` tool (golang-dnstap) on a unix socket or TCP printing JSON,
//! `fstrm_capture` writing a Frame Streams file, and `socat` terminating
//! TLS in front of a unix-socket collector. Each is killed on drop.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use clusterdns::dnstap::proto::Dnstap;
use prost::Message as _;

/// A collector process and the file it writes.
pub struct Collector {
    child: Child,
    pub out: PathBuf,
}

impl Drop for Collector {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Collector {
    /// `dnstap ARGS -j`, its JSON lines written to `out`.
    pub fn dnstap(args: &[&str], out: &Path) -> Collector {
        let file = std::fs::File::create(out).expect("output file");
        let child = Command::new("dnstap")
            .args(args)
            .arg("-j")
            .stdout(file)
            .stderr(Stdio::null())
            .spawn()
            .expect("start dnstap");
        Collector {
            child,
            out: out.to_path_buf(),
        }
    }

    /// `fstrm_capture` on the unix socket `socket`, writing `out`.
    pub fn fstrm(socket: &Path, out: &Path) -> Collector {
        let child = Command::new("fstrm_capture")
            .args(["-t", "protobuf:dnstap.Dnstap", "-u"])
            .arg(socket)
            .arg("-w")
            .arg(out)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start fstrm_capture");
        Collector {
            child,
            out: out.to_path_buf(),
        }
    }

    /// `socat` terminating TLS on `port` (certificate `pem`) and passing
    /// each connection to the unix socket `socket`.
    pub fn tls_terminator(port: u16, pem: &Path, socket: &Path) -> Collector {
        let listen = format!(
            "OPENSSL-LISTEN:{port},bind=127.0.0.1,reuseaddr,fork,cert={},verify=0",
            pem.display()
        );
        let child = Command::new("socat")
            .arg(listen)
            .arg(format!("UNIX-CONNECT:{}", socket.display()))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start socat");
        Collector {
            child,
            out: PathBuf::new(),
        }
    }

    /// Ends the collector with SIGTERM (it closes its file) and waits.
    pub fn stop(mut self) {
        let _ = Command::new("kill").arg(self.child.id().to_string()).status();
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline && !matches!(self.child.try_wait(), Ok(Some(_))) {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// The JSON messages in `out` so far.
pub fn json(out: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(out).unwrap_or_default();
    text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
}

/// Waits (at most `limit`) until `out` holds `n` JSON messages.
pub fn json_count(out: &Path, n: usize, limit: Duration) -> Vec<serde_json::Value> {
    let deadline = Instant::now() + limit;
    loop {
        let got = json(out);
        if got.len() >= n || Instant::now() > deadline {
            return got;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The dnstap payloads of a Frame Streams file (control frames skipped).
pub fn frames(file: &Path) -> Vec<Dnstap> {
    let bytes = std::fs::read(file).unwrap_or_default();
    let mut rest = &bytes[..];
    let mut all = Vec::new();
    let word = |b: &[u8]| {
        b.get(..4)
            .map(|w| u32::from_be_bytes([w[0], w[1], w[2], w[3]]) as usize)
    };
    while let Some(len) = word(rest) {
        rest = &rest[4..];
        let len = if len == 0 {
            let Some(control) = word(rest) else { break };
            rest = &rest[4..];
            (control, false)
        } else {
            (len, true)
        };
        let Some(body) = rest.get(..len.0) else { break };
        if len.1 {
            all.push(Dnstap::decode(body).expect("a dnstap payload"));
        }
        rest = &rest[len.0..];
    }
    all
}

/// A self-signed certificate and key for `localhost` in one PEM file.
pub fn certificate(dir: &Path) -> PathBuf {
    let (key, cert, pem) = (dir.join("key.pem"), dir.join("cert.pem"), dir.join("both.pem"));
    let made = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-days",
            "2",
        ])
        .args([
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=DNS:localhost,IP:127.0.0.1",
            "-keyout",
        ])
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("run openssl");
    assert!(made.success(), "openssl could not make a certificate");
    let both = [std::fs::read(&cert).expect("cert"), std::fs::read(&key).expect("key")].concat();
    std::fs::write(&pem, both).expect("pem");
    pem
}
