//! The `kubernetes` options of CoreDNS 1.12–1.14 that tune its API client
//! and topology names: accepted and checked as CoreDNS checks them, and
//! printed by `check` with what each does here.
//!
//! ```text
//! startup_timeout DURATION      apiserver_qps FLOAT (>= 0)
//! apiserver_burst N (>= 0)      apiserver_max_inflight N (>= 0)
//! zonal                         (needs the endpoint cache: not with noendpoints)
//! ```
//!
//! Each is honoured as CoreDNS honours it: `startup_timeout` (default 5s)
//! bounds how long the listeners wait for the first sync
//! (`watch::startup`); the three `apiserver_*` limit the requests sent to
//! the API server (`watch::throttle`); `zonal` answers zone-scoped names of
//! headless Services (`query::plugins::cluster::zonal`).

use std::time::Duration;

use crate::corefile::args::Args;
use crate::corefile::problem::ConfigError;

/// CoreDNS's `startup_timeout` when none is written.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(5);

/// client-go's QPS and burst, for the one of the two not written.
const DEFAULT_QPS: f32 = 5.0;
const DEFAULT_BURST: u32 = 10;

/// The API client's token bucket: `(qps, burst)` with the default of the
/// one not written (0 counts as not written, as in CoreDNS).
pub fn rate(o: &ClientOptions) -> (f32, u32) {
    let qps = o.qps.filter(|q| *q > 0.0).unwrap_or(DEFAULT_QPS);
    (qps, o.burst.filter(|b| *b > 0).unwrap_or(DEFAULT_BURST))
}

/// The options, as written.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClientOptions {
    pub startup_timeout: Option<Duration>,
    pub qps: Option<f32>,
    pub burst: Option<u32>,
    pub max_inflight: Option<u32>,
    pub zonal: bool,
}

/// `startup_timeout DURATION`.
pub fn startup_timeout(a: &Args<'_>, o: &mut ClientOptions, errors: &mut Vec<ConfigError>) {
    if let Some(d) = a.duration(0, errors) {
        o.startup_timeout = Some(d);
    }
}

/// `apiserver_qps N` (a number, at least 0).
pub fn qps(a: &Args<'_>, o: &mut ClientOptions, errors: &mut Vec<ConfigError>) {
    match a.args[0].text.parse::<f32>() {
        Ok(q) if q >= 0.0 && q.is_finite() => o.qps = Some(q),
        Ok(_) => fault(a, "must be >= 0", errors),
        Err(_) => fault(a, "is not a number", errors),
    }
}

/// `apiserver_burst N` and `apiserver_max_inflight N` (whole numbers, at
/// least 0).
pub fn count(a: &Args<'_>, o: &mut ClientOptions, errors: &mut Vec<ConfigError>) {
    match a.args[0].text.parse::<i64>() {
        Ok(n) if n >= 0 => {
            let n = Some(u32::try_from(n).unwrap_or(u32::MAX));
            if a.name.text == "apiserver_burst" {
                o.burst = n;
            } else {
                o.max_inflight = n;
            }
        }
        Ok(_) => fault(a, "must be >= 0", errors),
        Err(_) => fault(a, "is not a whole number", errors),
    }
}

/// `kubernetes: OPTION 'VALUE' WHY` at the option's value.
fn fault(a: &Args<'_>, why: &str, errors: &mut Vec<ConfigError>) {
    let word = &a.args[0];
    errors.push(ConfigError::new(
        &word.pos,
        format!("kubernetes: {} '{}' {why}", a.name.text, word.text),
    ));
}

/// The option lines `check` prints, each with what it does here.
pub fn effective(o: &ClientOptions, duration: impl Fn(Duration) -> String) -> Vec<String> {
    let mut lines = Vec::new();
    let startup = o.startup_timeout.unwrap_or(DEFAULT_STARTUP_TIMEOUT);
    lines.push(format!("startup_timeout {}", duration(startup)));
    // The token bucket is on when either is written above 0; the other
    // then takes client-go's default, written out.
    let (qps, burst) = (o.qps.filter(|q| *q > 0.0), o.burst.filter(|b| *b > 0));
    if qps.is_some() || burst.is_some() {
        let (q, b) = rate(o);
        lines.push(format!("apiserver_qps {q}"));
        lines.push(format!("apiserver_burst {b}"));
    }
    lines.extend(
        o.max_inflight
            .filter(|n| *n > 0)
            .map(|n| format!("apiserver_max_inflight {n}")),
    );
    if o.zonal {
        lines.push("zonal".into());
    }
    lines
}
