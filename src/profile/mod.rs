//! `pprof` (CoreDNS's plugin): the running server's CPU profile in
//! pprof's format at `/debug/pprof/profile?seconds=N`, which `go tool
//! pprof http://ADDRESS` reads as it reads CoreDNS's, and the command
//! line at `/debug/pprof/cmdline`. The samples are taken by the `pprof`
//! crate (SIGPROF, 100 a second, every thread) only while a profile is
//! asked for; one profile at a time. Go's other profiles (heap,
//! goroutine, block, mutex, trace) have no counterpart here and answer
//! 404 saying so; `heaptrack` is the tool for memory (docs/operations.md).

pub mod proto;
pub mod setup;

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use proto::{Builder, Frame};

/// Samples a second, as Go's CPU profiler takes them.
const FREQUENCY: i32 = 100;
/// A profile's length when `seconds` is not given (Go's default), and the longest.
const SECONDS: u64 = 30;
const MOST_SECONDS: u64 = 300;
/// A profile is being taken.
static BUSY: AtomicBool = AtomicBool::new(false);

/// Serves the profiling endpoints on `listener` forever.
pub async fn serve(listener: TcpListener) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        tokio::spawn(async move {
            let bound = Duration::from_secs(MOST_SECONDS + 60);
            let _ = tokio::time::timeout(bound, respond(stream)).await;
        });
    }
}

/// An answer: status, content type, body.
type Reply = (&'static str, &'static str, Vec<u8>);

fn text(status: &'static str, body: impl Into<String>) -> Reply {
    (status, "text/plain; charset=utf-8", body.into().into_bytes())
}

async fn respond(mut stream: TcpStream) -> io::Result<()> {
    let mut buf = vec![0u8; 4096];
    let mut len = 0;
    let head = tokio::time::timeout(Duration::from_secs(5), async {
        while !buf[..len].windows(4).any(|w| w == b"\r\n\r\n") && len < buf.len() {
            match stream.read(&mut buf[len..]).await? {
                0 => break,
                n => len += n,
            }
        }
        io::Result::Ok(())
    });
    if !matches!(head.await, Ok(Ok(()))) {
        return Ok(());
    }
    let request = String::from_utf8_lossy(&buf[..len]).into_owned();
    let target = request.split_whitespace().nth(1).unwrap_or("/");
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let (status, kind, body) = match path {
        "/debug/pprof" => ("302 Found", "text/plain", Vec::new()),
        "/debug/pprof/" => text("200 OK", INDEX),
        "/debug/pprof/cmdline" => text("200 OK", std::env::args().collect::<Vec<_>>().join("\0")),
        "/debug/pprof/profile" => profile_reply(query).await,
        p if p.starts_with("/debug/pprof/") => text(
            "404 Not Found",
            format!(
                "{}: Go's profile of that name has no counterpart in clusterdns (a Rust program); {INDEX}",
                &p[13..]
            ),
        ),
        _ => text("404 Not Found", "not found"),
    };
    let location = if status.starts_with("302") {
        "Location: /debug/pprof/\r\n"
    } else {
        ""
    };
    let head = format!(
        "HTTP/1.1 {status}\r\n{location}Content-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(&body).await?;
    stream.shutdown().await
}

const INDEX: &str = "clusterdns profiles: /debug/pprof/profile?seconds=N (CPU, pprof format, N 1..300, default 30), \
                     /debug/pprof/cmdline\n";

/// `profile?seconds=N`: a CPU profile of N seconds.
async fn profile_reply(query: &str) -> Reply {
    let seconds = query
        .split('&')
        .find_map(|kv| kv.strip_prefix("seconds="))
        .map_or(Some(SECONDS), |s| s.parse::<u64>().ok());
    let Some(seconds) = seconds.filter(|s| (1..=MOST_SECONDS).contains(s)) else {
        return text(
            "400 Bad Request",
            format!("seconds: a whole number from 1 to {MOST_SECONDS}\n"),
        );
    };
    if BUSY.swap(true, Ordering::AcqRel) {
        return text("409 Conflict", "a profile is being taken; ask again when it is done\n");
    }
    let taken = tokio::task::spawn_blocking(move || cpu_profile(Duration::from_secs(seconds))).await;
    BUSY.store(false, Ordering::Release);
    match taken {
        Ok(Ok(bytes)) => ("200 OK", "application/octet-stream", bytes),
        Ok(Err(e)) => text("500 Internal Server Error", format!("profiling failed: {e}\n")),
        Err(e) => text("500 Internal Server Error", format!("profiling failed: {e}\n")),
    }
}

/// Samples every thread for `length`; the profile in pprof's format.
fn cpu_profile(length: Duration) -> Result<Vec<u8>, pprof::Error> {
    let guard = pprof::ProfilerGuardBuilder::default()
        .frequency(FREQUENCY)
        .blocklist(&["libc", "libgcc", "pthread", "vdso"])
        .build()?;
    std::thread::sleep(length);
    let report = guard.report().build()?;
    drop(guard);
    let since = |t: SystemTime| t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as i64);
    let timing = &report.timing;
    let mut b = Builder::new(
        timing.frequency,
        since(timing.start_time),
        timing.duration.as_nanos() as i64,
    );
    for (frames, count) in &report.data {
        // The sampler's own frames (its signal handler, the unwinder) end every stack: left out.
        let sampler = frames
            .frames
            .iter()
            .rposition(|symbols| symbols.iter().any(|s| sampling(&s.name())));
        let stack: Vec<Vec<Frame>> = frames.frames[sampler.map_or(0, |i| i + 1)..]
            .iter()
            .map(|symbols| {
                symbols
                    .iter()
                    .map(|s| Frame {
                        name: s.name(),
                        system_name: s.sys_name().into_owned(),
                        file: s.filename().into_owned(),
                        line: s.lineno(),
                    })
                    .collect()
            })
            .collect();
        b.sample(&stack, *count as i64);
    }
    Ok(b.encode())
}

/// Whether a frame is the sampler's: `pprof`'s signal handler and what
/// it calls to walk the stack, or the kernel's return from the signal.
fn sampling(name: &str) -> bool {
    let name = name.trim_start_matches('<');
    name.starts_with("pprof::")
        || name.starts_with("backtrace::")
        || name.contains("perf_signal_handler")
        || name == "__restore_rt"
}
