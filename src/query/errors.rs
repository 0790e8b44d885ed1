//! The `errors` plugin at work: a client query that failed inside a
//! plugin (an upstream that gave no answer, `max_concurrent` reached) is
//! logged as CoreDNS's errors plugin logs it,
//!
//! ```text
//! [ERROR] plugin/errors: 2 example.org. A: read udp 10.0.0.9:53: i/o timeout
//! ```
//!
//! unless a `consolidate` pattern matches the error text: then it is only
//! counted, and when the pattern's period ends one line says how many
//! there were, at the pattern's level:
//!
//! ```text
//! [WARNING] plugin/errors: 1000 errors like '.* i/o timeout$' occurred in last 1m0s
//! ```
//!
//! The period starts with the first error that matches; with `show_first`
//! that first error is logged at once, in full, at the pattern's level (and
//! a period that saw only it logs no count line). `debug` lines are never
//! written (CoreDNS prints them only with its `debug` plugin, which
//! clusterdns does not have). Lines go to stdout through a bounded queue
//! and one writer thread, as query logs do: a full queue drops the line and
//! counts it in `clusterdns_log_dropped_total`.
//!
//! `stacktrace` is process-wide here: when any block sets it, a panic
//! while answering logs its backtrace with the panic message.
pub mod setup;

use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::{Arc, Mutex, Once, OnceLock, Weak};
use std::time::Duration;

use hickory_proto::op::{Query, ResponseCode};

use crate::query::errors::setup::{ErrorsConfig, Level};

/// Lines waiting for the writer thread, at most.
const QUEUE: usize = 4096;

/// The `errors` plugin of one server block.
#[derive(Debug)]
pub struct ErrorLog {
    patterns: Vec<Arc<Pattern>>,
}

#[derive(Debug)]
struct Pattern {
    re: regex::Regex,
    text: String,
    period: Duration,
    level: Level,
    show_first: bool,
    /// Errors matched since the period began; 0: no period running.
    count: AtomicU32,
}

impl ErrorLog {
    pub fn new(cfg: &ErrorsConfig) -> Arc<ErrorLog> {
        let patterns = cfg
            .consolidate
            .iter()
            .filter_map(|c| {
                // Checked when the Corefile loaded; a pattern that does not
                // compile now is left out rather than failing the block.
                let re = regex::Regex::new(&c.pattern).ok()?;
                Some(Arc::new(Pattern {
                    re,
                    text: c.pattern.clone(),
                    period: c.period,
                    level: c.level,
                    show_first: c.show_first,
                    count: AtomicU32::new(0),
                }))
            })
            .collect::<Vec<_>>();
        if let Ok(mut live) = LIVE.lock() {
            live.retain(|p| p.strong_count() > 0);
            live.extend(patterns.iter().map(Arc::downgrade));
        }
        Arc::new(ErrorLog { patterns })
    }

    /// One failed query: `rcode` is what the plugin answered, `why` the error.
    pub fn report(&self, rcode: ResponseCode, query: &Query, why: &str) {
        let mut level = Level::Error;
        if let Some(p) = self.patterns.iter().find(|p| p.re.is_match(why)) {
            if p.count.fetch_add(1, Ordering::AcqRel) > 0 {
                return; // counted; the period's line reports it
            }
            start_period(p.clone());
            if !p.show_first {
                return;
            }
            level = p.level;
        }
        let mut name = String::new();
        crate::query::logline::presentation(query.name(), &mut name);
        let line = format!("{} {name} {}: {why}", u16::from(rcode), query.query_type());
        write(level, &line);
    }
}

/// Waits out `p`'s period on a thread of its own (one per pattern at a
/// time: a new period starts only after the last one reported), then
/// logs the count.
fn start_period(p: Arc<Pattern>) {
    let spawned = std::thread::Builder::new().name("errors-consolidate".into()).spawn({
        let p = p.clone();
        move || {
            std::thread::sleep(p.period);
            end_period(&p);
        }
    });
    if spawned.is_err() {
        end_period(&p);
    }
}

/// Every pattern a server block holds, for [`stop`].
static LIVE: Mutex<Vec<Weak<Pattern>>> = Mutex::new(Vec::new());

/// The server stops: each pattern's count so far is logged now, as
/// CoreDNS's errors plugin does on shutdown, rather than lost with the
/// period's thread; the lines are written before this returns.
pub fn stop() {
    let live: Vec<Arc<Pattern>> = LIVE
        .lock()
        .map(|l| l.iter().filter_map(Weak::upgrade).collect())
        .unwrap_or_default();
    for p in live {
        if let Some(line) = period_line(&p) {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{} plugin/errors: {line}", p.level.tag());
            let _ = out.flush();
        }
    }
}

fn end_period(p: &Pattern) {
    if let Some(line) = period_line(p) {
        write(p.level, &line);
    }
}

/// Whether `debug` is on: `errors` lines at level `debug` are printed.
static DEBUG: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Turns the `debug` directive's lines on or off (each config load).
pub fn debug(on: bool) {
    DEBUG.store(on, Ordering::Relaxed);
}

/// Whether a line at `level` is printed: debug lines only under `debug`.
fn shown(level: Level) -> bool {
    level != Level::Debug || DEBUG.load(Ordering::Relaxed)
}

/// The count line ending `p`'s period (its count reset), if one is due:
/// none for no errors, or only the shown first one.
fn period_line(p: &Pattern) -> Option<String> {
    let n = p.count.swap(0, Ordering::AcqRel);
    (shown(p.level) && (n > 1 || (n == 1 && !p.show_first))).then(|| {
        format!(
            "{n} errors like '{}' occurred in last {}",
            p.text,
            go_duration(p.period)
        )
    })
}

/// Queues one `plugin/errors` line at `level` for the writer thread.
fn write(level: Level, text: &str) {
    if !shown(level) {
        return;
    }
    static TX: OnceLock<Option<SyncSender<String>>> = OnceLock::new();
    let tx = TX.get_or_init(|| {
        let (tx, rx) = sync_channel::<String>(QUEUE);
        std::thread::Builder::new()
            .name("errors-log".into())
            .spawn(move || {
                let mut out = std::io::stdout();
                while let Ok(line) = rx.recv() {
                    let _ = writeln!(out, "{line}");
                    let _ = out.flush();
                }
            })
            .ok()
            .map(|_| tx)
    });
    let line = format!("{} plugin/errors: {text}", level.tag());
    if tx.as_ref().is_none_or(|tx| tx.try_send(line).is_err()) {
        crate::metrics::LOG_DROPPED.fetch_add(1, Ordering::Relaxed);
    }
}

/// A duration as Go's `time.Duration.String` writes it (`1m0s`, `5s`, `1.5s`, `500ms`).
pub fn go_duration(d: Duration) -> String {
    let trim = |v: f64| {
        let s = format!("{v:.9}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    };
    let nanos = d.as_nanos();
    match nanos {
        0 => "0s".into(),
        n if n < 1_000 => format!("{n}ns"),
        n if n < 1_000_000 => format!("{}µs", trim(n as f64 / 1e3)),
        n if n < 1_000_000_000 => format!("{}ms", trim(n as f64 / 1e6)),
        _ => {
            let secs = d.as_secs();
            let (h, m) = (secs / 3600, secs % 3600 / 60);
            let s = trim((secs % 60) as f64 + f64::from(d.subsec_nanos()) / 1e9);
            match (h, m) {
                (0, 0) => format!("{s}s"),
                (0, m) => format!("{m}m{s}s"),
                (h, m) => format!("{h}h{m}m{s}s"),
            }
        }
    }
}

/// Whether a panic while answering logs its backtrace (`stacktrace`).
static STACKTRACE: AtomicBool = AtomicBool::new(false);

/// Sets `stacktrace` for the configuration now loaded; the panic hook
/// that honours it is installed the first time it is on.
pub fn stacktrace(on: bool) {
    STACKTRACE.store(on, Ordering::Relaxed);
    if !on {
        return;
    }
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            previous(info);
            if STACKTRACE.load(Ordering::Relaxed) {
                let trace = std::backtrace::Backtrace::force_capture();
                tracing::error!("recovered from panic: {info}\n{trace}");
            }
        }));
    });
}

#[cfg(test)]
mod tests {
    use super::go_duration;
    use std::time::Duration;

    #[test]
    fn durations_as_go_writes_them() {
        let cases = [
            (Duration::from_secs(60), "1m0s"),
            (Duration::from_secs(5), "5s"),
            (Duration::from_millis(1500), "1.5s"),
            (Duration::from_millis(500), "500ms"),
            (Duration::from_secs(3600), "1h0m0s"),
            (Duration::from_secs(90), "1m30s"),
            (Duration::ZERO, "0s"),
        ];
        for (d, want) in cases {
            assert_eq!(go_duration(d), want, "{d:?}");
        }
    }
}
