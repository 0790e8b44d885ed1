//! `pprof` (CoreDNS's plugin) end to end: `go tool pprof -top` (Go's own
//! reader of the format, Debian's golang-go) reads the CPU profile of a
//! server answering queries and names the server's functions; Go's other
//! profiles answer 404 with the reason; a bad length is 400; `block` is
//! refused at load with its position.

mod common;

use std::net::SocketAddr;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{free_port, http_get, temp_dir, Server};
use hickory_proto::rr::RecordType;

fn corefile(pprof: &str) -> String {
    format!(
        ".:0 {{\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    {pprof}\n    kubernetes cluster.local {{\n        snapshot {}\n    }}\n}}\n",
        common::demo_cluster().display()
    )
}

#[test]
fn go_tool_pprof_reads_the_cpu_profile_of_a_busy_server() {
    let test = "go_tool_pprof_reads_the_cpu_profile_of_a_busy_server";
    let Some(go) = common::needs(
        test,
        common::installed("go"),
        "apt-get install golang-go (tests/run installs it)",
    ) else {
        return;
    };
    let dir = temp_dir("pprof");
    let port = free_port();
    let server = Server::start(&dir, &corefile(&format!("pprof 127.0.0.1:{port}")));
    let pprof = SocketAddr::from(([127, 0, 0, 1], port));

    // Queries while the profile is taken (bounded in time).
    let stop = Arc::new(AtomicBool::new(false));
    let load = {
        let (stop, dns) = (stop.clone(), server.dns);
        std::thread::spawn(move || {
            let started = Instant::now();
            let q = common::query(1, "kubernetes.default.svc.cluster.local.", RecordType::A, None);
            while !stop.load(Ordering::Relaxed) && started.elapsed() < Duration::from_secs(60) {
                let _ = common::udp_raw(dns, &q);
            }
        })
    };
    let url = format!("http://{pprof}/debug/pprof/profile?seconds=3");
    let out = Command::new(go)
        .args(["tool", "pprof", "-top", "-nodecount=200", &url])
        .env("HOME", &dir)
        .env("PPROF_TMPDIR", &dir)
        .env("GOCACHE", dir.join("gocache"))
        .output()
        .expect("go tool pprof");
    stop.store(true, Ordering::Relaxed);
    let _ = load.join();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "go tool pprof failed:\n{text}");
    assert!(
        text.contains("Type: cpu") && text.contains("flat%"),
        "a CPU profile:\n{text}"
    );
    assert!(
        text.contains("clusterdns::"),
        "the server's own functions are named:\n{text}"
    );
}

#[test]
fn other_profiles_lengths_and_block_are_refused_with_reasons() {
    let dir = temp_dir("pprof-refusals");
    let port = free_port();
    let _server = Server::start(&dir, &corefile(&format!("pprof 127.0.0.1:{port}")));
    let pprof = SocketAddr::from(([127, 0, 0, 1], port));
    // Asked again when nothing came back in http_get's 2 s (a loaded machine; the other test's load).
    let http_get = |addr, path| {
        (0..5)
            .map(|_| http_get(addr, path))
            .find(|r| !r.is_empty())
            .unwrap_or_default()
    };
    let heap = http_get(pprof, "/debug/pprof/heap");
    assert!(
        heap.starts_with("HTTP/1.1 404") && heap.contains("no counterpart"),
        "{heap}"
    );
    let zero = http_get(pprof, "/debug/pprof/profile?seconds=0");
    assert!(zero.starts_with("HTTP/1.1 400"), "{zero}");
    let cmdline = http_get(pprof, "/debug/pprof/cmdline");
    assert!(
        cmdline.starts_with("HTTP/1.1 200") && cmdline.contains("-conf"),
        "{cmdline}"
    );
    let index = http_get(pprof, "/debug/pprof");
    assert!(
        index.starts_with("HTTP/1.1 302") && index.contains("Location: /debug/pprof/"),
        "{index}"
    );

    let conf = dir.join("Corefile.block");
    std::fs::write(&conf, corefile("pprof {\n        block\n    }")).expect("write");
    let (status, out) = common::check(&conf);
    assert!(!status.success(), "block is refused:\n{out}");
    assert!(
        out.contains("Corefile.block:5:9: pprof: block is not supported"),
        "{out}"
    );
}
